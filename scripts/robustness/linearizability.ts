// A linearizability checker in the spirit of Porcupine: the Wing & Gong search
// over a history's call/return events, with Lowe's memoisation of
// (set of linearized operations, model state), run separately on each
// independent sub-history the model carves out (P-compositionality: a history
// is linearizable iff each per-key sub-history is).
//
// The search keeps the not-yet-linearized operations as a doubly linked list of
// call and return entries ordered by time. From the head, any operation whose
// call entry comes before the first return entry may be linearized next: it is
// lifted out of the list (call and return entry), the model steps, and the
// search starts over from the head. Reaching a return entry means that
// operation had to be linearized already: the search backtracks. A cache of
// entered configurations (bitset of linearized operations, state hash) keeps
// any configuration from being searched twice.
//
// Unknown outcomes (output undefined) never constrain the order: their return
// entries sit at the end, and once every known-outcome operation is linearized
// the rest are dropped (they never took effect). Four more rules keep the
// search small. Each skips only what some other branch covers (the first and
// last: another order of the same operations; the middle two: a linearization
// with fewer unknown-outcome operations), so none can turn "ok" into
// "illegal" (the brute-force comparison in the tests checks this):
//  - Read-only operations (Model.isReadOnly) with a known outcome are
//    linearized as soon as they fit, and nothing else is tried in their place:
//    moving one earlier never breaks a linearization.
//  - A configuration is skipped when one with the same state and known-outcome
//    operations but a strict subset of the unknown-outcome ones was entered:
//    from there the same continuation works with fewer of them.
//  - Right after an unknown-outcome operation, blind operations
//    (Model.isBlind: the next state does not depend on the previous one) are
//    not tried: the unknown one would be overwritten unseen, and doing without
//    it works as well.
//  - Of unknown-outcome operations with equal inputs, only the earliest called
//    pending one is tried: once called, they are interchangeable.
// Known-outcome operations are tried before unknown-outcome ones at each step.
import type { KvInput, KvOutput, Operation } from "./history.ts";

export interface Model<S, I, O> {
  init(): S;
  /**
   * Apply input to state; output undefined means the outcome is unknown: accept either way it could have gone. Returns the possible next states when `output` is consistent with the step, [] when it is not.
   * (The checker may leave an unknown-outcome operation out altogether, so
   * the states where it took effect are enough.)
   */
  step(state: S, input: I, output: O | undefined): S[];
  /** Split a history into independent sub-histories (e.g. by key). Optional. */
  partition?(history: Operation<I, O>[]): Operation<I, O>[][];
  /** Stable string key of a state for memoisation. */
  hash(state: S): string;
  describeOperation?(input: I, output: O | undefined): string;
  /**
   * True when the operation, with this output, leaves every state as it was
   * (a read, a refused cas). Optional: the checker then linearizes it as soon
   * as it fits instead of trying it in every position, which is always safe
   * for such operations and much faster.
   */
  isReadOnly?(input: I, output: O | undefined): boolean;
  /**
   * True when the operation, with this output, fits every state and leads
   * from all of them to the same one state (a plain write or delete).
   * Optional: lets the search skip orders where an unknown-outcome operation
   * is overwritten unseen.
   */
  isBlind?(input: I, output: O | undefined): boolean;
}

export type CheckResult<I, O> =
  | { result: "ok" }
  | {
      result: "illegal";
      /** the partition that failed, and the longest linearizable prefix found, for the report */
      partition: Operation<I, O>[];
      longestPrefix: Operation<I, O>[];
      explanation: string;
    }
  | { result: "unknown"; reason: string }; // time budget exceeded

export interface CheckOptions {
  /** Give up with "unknown" after this many ms of searching; unbounded when absent. */
  timeoutMs?: number;
}

/** How many search steps run between two looks at the clock. */
const CLOCK_CHECK_STEPS = 256;
/** How many candidate next operations an explanation lists. */
const EXPLAIN_MAX_CANDIDATES = 8;

/**
 * Checks that `history` is linearizable with respect to `model`. Each
 * partition (from `model.partition`, or the whole history) is searched on its
 * own; the first one without a linearization makes the result "illegal". The
 * time budget covers all partitions; when it runs out before a violation is
 * found the result is "unknown".
 */
export function checkOperations<S, I, O>(
  model: Model<S, I, O>,
  history: Operation<I, O>[],
  options?: CheckOptions,
): CheckResult<I, O> {
  const timeoutMs = options?.timeoutMs ?? Infinity;
  if (Number.isNaN(timeoutMs) || timeoutMs < 0) {
    throw new RangeError(`Cannot check a history with timeoutMs ${timeoutMs}: use a number >= 0`);
  }
  history.forEach(validateOperation);
  const started = performance.now();
  const deadline = started + timeoutMs;
  const partitions = model.partition ? model.partition(history) : [history];
  for (const [i, partition] of partitions.entries()) {
    if (partition.length === 0) continue;
    const outcome = performance.now() > deadline ? { kind: "timeout" as const } : searchPartition(model, partition, deadline);
    if (outcome.kind === "timeout") {
      const elapsedMs = Math.round(performance.now() - started);
      return {
        result: "unknown",
        reason: `Time budget of ${timeoutMs} ms exceeded after ${elapsedMs} ms: ${i} of ${partitions.length} partitions checked, no violation found so far`,
      };
    }
    if (outcome.kind === "illegal") {
      return {
        result: "illegal",
        partition: partition.map(originalOf),
        longestPrefix: outcome.prefix.map((j) => originalOf(partition[j]!)),
        explanation: explainFailure(model, partition, outcome.prefix, outcome.state),
      };
    }
  }
  return { result: "ok" };
}

/**
 * Operations a model's partition rewrote (see kvPartition), mapped to the
 * history's own, which is what results and reports show.
 */
const originals = new WeakMap<Operation<unknown, unknown>, Operation<unknown, unknown>>();

function derive<I, O>(op: Operation<I, O>, changes: Partial<Operation<I, O>>): Operation<I, O> {
  const derived = { ...op, ...changes };
  originals.set(derived, originalOf(op));
  return derived;
}

function originalOf<I, O>(op: Operation<I, O>): Operation<I, O> {
  return (originals.get(op) as Operation<I, O> | undefined) ?? op;
}

/** One line for a report: client, [call, return] and the operation. */
export function formatOperation<S, I, O>(model: Model<S, I, O>, op: Operation<I, O>): string {
  const what = model.describeOperation
    ? model.describeOperation(op.input, op.output)
    : `${JSON.stringify(op.input)} -> ${op.output === undefined ? "?" : JSON.stringify(op.output)}`;
  return `client ${op.clientId} [${formatTime(op.call)}, ${formatTime(op.return)}] ${what}`;
}

function formatTime(ms: number): string {
  return Number.isFinite(ms) ? ms.toFixed(3) : "never";
}

function validateOperation<I, O>(op: Operation<I, O>, index: number): void {
  if (!Number.isFinite(op.call)) {
    throw new RangeError(`Operation ${index} of client ${op.clientId} has call time ${op.call}: it must be a finite number`);
  }
  if (Number.isNaN(op.return) || op.return < op.call) {
    throw new RangeError(
      `Operation ${index} of client ${op.clientId} returns before its call: call ${op.call}, return ${op.return}`,
    );
  }
}

/**
 * True when the operation may or may not have taken effect: it may be left
 * out of a linearization, and its return time (if any) does not bind.
 */
function isUnknownOutcome<I, O>(op: Operation<I, O>): boolean {
  return op.output === undefined;
}

// ---------------------------------------------------------------------------
// The search

interface Entry {
  /** index of the operation in the partition; -1 for the list head */
  op: number;
  isCall: boolean;
  time: number;
  prev: Entry | null;
  next: Entry | null;
  /** for a call entry, its return entry */
  match: Entry | null;
}

/**
 * Which operations a pass over the list tries: read-only ones with a known
 * outcome (greedily), then the other known-outcome ones, then unknown-outcome
 * ones.
 */
type Pass = 0 | 1 | 2;
const READ_ONLY: Pass = 0;
const KNOWN: Pass = 1;
const UNKNOWN: Pass = 2;

interface Frame<S> {
  /** the call entry linearized at this depth */
  entry: Entry;
  pass: Pass;
  prevState: S;
  /** the states the step may lead to, and which one is being explored */
  candidates: S[];
  index: number;
}

type SearchOutcome<S> =
  | { kind: "ok" }
  | { kind: "timeout" }
  | { kind: "illegal"; prefix: number[]; state: S };

/**
 * A fixed-size bitset. Bits are given out in call order, so a set of
 * linearized operations is full words, a few mixed words, then zero words:
 * the key spells out only the mixed ones, after their position and count so
 * that keys can be concatenated without ambiguity.
 */
class BitSet {
  #words: Uint32Array;

  constructor(size: number) {
    this.#words = new Uint32Array(Math.ceil(size / 32));
  }

  set(i: number): void {
    this.#words[i >>> 5] |= 1 << (i & 31);
  }

  clear(i: number): void {
    this.#words[i >>> 5] &= ~(1 << (i & 31));
  }

  /** "<first word not full>:<count>:" then the words up to the last non-zero one, two UTF-16 code units each. */
  key(): string {
    const words = this.#words;
    let lo = 0;
    while (lo < words.length && words[lo] === 0xffffffff) lo++;
    let hi = words.length - 1;
    while (hi >= lo && words[hi] === 0) hi--;
    let s = `${lo}:${hi - lo + 1}:`;
    for (let i = lo; i <= hi; i++) s += String.fromCharCode(words[i]! & 0xffff, words[i]! >>> 16);
    return s;
  }
}

function buildEntries<I, O>(ops: Operation<I, O>[], unknown: boolean[]): Entry {
  const entries: Entry[] = [];
  for (const [i, op] of ops.entries()) {
    const ret: Entry = { op: i, isCall: false, time: unknown[i] ? Infinity : op.return, prev: null, next: null, match: null };
    const call: Entry = { op: i, isCall: true, time: op.call, prev: null, next: null, match: ret };
    entries.push(call, ret);
  }
  // By time; at equal times calls first (touching operations count as
  // concurrent, the lenient reading of a clock tie); then by operation index so
  // the search order, and so the result, is deterministic.
  entries.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? 0 : a.isCall ? -1 : 1) || a.op - b.op);
  const head: Entry = { op: -1, isCall: false, time: -Infinity, prev: null, next: null, match: null };
  let last = head;
  for (const e of entries) {
    e.prev = last;
    last.next = e;
    last = e;
  }
  return head;
}

/** Removes a call entry and its return entry from the list. */
function lift(call: Entry): void {
  const ret = call.match!;
  call.prev!.next = call.next;
  call.next!.prev = call.prev;
  ret.prev!.next = ret.next;
  if (ret.next) ret.next.prev = ret.prev;
}

/** Undoes the matching `lift`; lifts and unlifts must nest. */
function unlift(call: Entry): void {
  const ret = call.match!;
  ret.prev!.next = ret;
  if (ret.next) ret.next.prev = ret;
  call.prev!.next = call;
  call.next!.prev = call;
}

function searchPartition<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[], deadline: number): SearchOutcome<S> {
  const unknown = ops.map(isUnknownOutcome);
  const outputs = ops.map((op) => op.output);
  const pass: Pass[] = ops.map((op, i) =>
    unknown[i] ? UNKNOWN : model.isReadOnly?.(op.input, op.output) ? READ_ONLY : KNOWN,
  );
  const blind = ops.map((op, i) => pass[i] !== READ_ONLY && (model.isBlind?.(op.input, op.output) ?? false));
  const byCall = ops.map((_, i) => i).sort((a, b) => ops[a]!.call - ops[b]!.call || a - b);
  // Unknown-outcome operations with equal inputs are interchangeable once
  // called: only the earliest pending one of them is tried.
  const sameEarlier = new Int32Array(ops.length).fill(-1);
  const latestByInput = new Map<string, number>();
  for (const i of byCall) {
    if (!unknown[i]) continue;
    const inputKey = JSON.stringify(ops[i]!.input);
    sameEarlier[i] = latestByInput.get(inputKey) ?? -1;
    latestByInput.set(inputKey, i);
  }
  const linearized = new Uint8Array(ops.length);
  // Known-outcome and unknown-outcome operations get bits in separate sets, so
  // keys of "the same with fewer unknown-outcome operations" are cheap
  // rewrites; bits are given out in call order to keep the keys short.
  const slot = new Int32Array(ops.length);
  let knownCount = 0;
  let unknownCount = 0;
  for (const i of byCall) slot[i] = unknown[i] ? unknownCount++ : knownCount++;
  const knownBits = new BitSet(knownCount);
  const unknownBits = new BitSet(unknownCount);
  const noUnknownKey = new BitSet(unknownCount).key();

  const head = buildEntries(ops, unknown);
  /** every configuration entered, or skipped because a smaller one was */
  const cache = new Set<string>();
  const stack: Frame<S>[] = [];
  /** the unknown-outcome operations on the stack, in order */
  const unknownPath: number[] = [];
  let state = model.init();
  let knownDone = 0;
  let entry = head.next;
  let currentPass: Pass = READ_ONLY;
  let longest: number[] = [];
  let longestState = state;
  let steps = 0;

  function setBit(op: number): void {
    linearized[op] = 1;
    if (unknown[op]) unknownBits.set(slot[op]!);
    else knownBits.set(slot[op]!);
  }

  function clearBit(op: number): void {
    linearized[op] = 0;
    if (unknown[op]) unknownBits.clear(slot[op]!);
    else knownBits.clear(slot[op]!);
  }

  /**
   * With the bit of `op`, being linearized, already set: the index of the
   * first candidate state from `from` on whose configuration is new and not
   * skipped (see the top of the file), marking it entered; or -1. The
   * smaller configurations looked up are the same without the latest
   * unknown-outcome operation and without any.
   */
  function enterFirst(op: number, candidates: S[], from: number): number {
    const known = knownBits.key();
    const unknownKey = unknownBits.key();
    let withoutLatest: string | undefined;
    if (unknownKey !== noUnknownKey) {
      const latest = unknown[op] ? op : unknownPath.at(-1)!;
      unknownBits.clear(slot[latest]!);
      withoutLatest = unknownBits.key();
      unknownBits.set(slot[latest]!);
    }
    for (let i = from; i < candidates.length; i++) {
      const stateKey = model.hash(candidates[i]!);
      // The bitset keys delimit themselves; the state's comes last.
      const key = known + unknownKey + stateKey;
      if (cache.has(key)) continue;
      cache.add(key);
      if (
        withoutLatest !== undefined &&
        (cache.has(known + withoutLatest + stateKey) || cache.has(known + noUnknownKey + stateKey))
      ) {
        continue;
      }
      return i;
    }
    return -1;
  }

  function push(call: Entry, candidates: S[], index: number): void {
    stack.push({ entry: call, pass: currentPass, prevState: state, candidates, index });
    state = candidates[index]!;
    lift(call);
    if (unknown[call.op]) unknownPath.push(call.op);
    else knownDone++;
    entry = head.next;
    currentPass = READ_ONLY;
  }

  /**
   * The configuration reached leads nowhere: move to the next one to try, or
   * answer false when there is none left.
   */
  function backtrack(): boolean {
    if (stack.length > longest.length) {
      longest = stack.map((f) => f.entry.op);
      longestState = state;
    }
    for (;;) {
      const top = stack.at(-1);
      if (top === undefined) return false;
      if (top.pass !== READ_ONLY) {
        const next = enterFirst(top.entry.op, top.candidates, top.index + 1);
        if (next >= 0) {
          top.index = next;
          state = top.candidates[next]!;
          entry = head.next;
          currentPass = READ_ONLY;
          return true;
        }
      }
      stack.pop();
      clearBit(top.entry.op);
      unlift(top.entry);
      if (unknown[top.entry.op]) unknownPath.pop();
      else knownDone--;
      state = top.prevState;
      // A read-only operation was linearized as soon as it fitted, and
      // nothing else was to be tried instead: the configuration before it
      // leads nowhere either.
      if (top.pass === READ_ONLY) continue;
      entry = top.entry.next;
      currentPass = top.pass;
      return true;
    }
  }

  while (knownDone < knownCount) {
    if (++steps % CLOCK_CHECK_STEPS === 0 && performance.now() > deadline) return { kind: "timeout" };
    if (entry === null) throw new Error("Linearizability search ran off the end of its entry list");
    if (!entry.isCall) {
      // The first pending return: every operation that could come next has
      // been tried in this pass.
      if (currentPass === READ_ONLY || (currentPass === KNOWN && unknownPath.length < unknownCount)) {
        currentPass = currentPass === READ_ONLY ? KNOWN : UNKNOWN;
        entry = head.next;
      } else if (!backtrack()) {
        return { kind: "illegal", prefix: longest, state: longestState };
      }
      continue;
    }
    const call: Entry = entry;
    const top = stack.at(-1);
    if (
      pass[call.op] !== currentPass ||
      (blind[call.op] && top !== undefined && unknown[top.entry.op]) ||
      (sameEarlier[call.op]! >= 0 && linearized[sameEarlier[call.op]!] === 0)
    ) {
      entry = call.next;
      continue;
    }
    const op = ops[call.op]!;
    const candidates = model.step(state, op.input, outputs[call.op]);
    if (candidates.length === 0) {
      entry = call.next;
      continue;
    }
    if (currentPass === READ_ONLY && (candidates.length !== 1 || model.hash(candidates[0]!) !== model.hash(state))) {
      throw new TypeError(
        `Model says ${formatOperation(model, op)} is read-only, but it steps from ${model.hash(state)} to ${candidates.map(model.hash).join(", ")}`,
      );
    }
    setBit(call.op);
    const index = enterFirst(call.op, candidates, 0);
    if (index >= 0) {
      push(call, candidates, index);
    } else if (currentPass !== READ_ONLY) {
      clearBit(call.op);
      entry = call.next;
    } else {
      // A read-only operation fits, and what follows it was entered before:
      // this configuration leads nowhere.
      clearBit(call.op);
      if (!backtrack()) return { kind: "illegal", prefix: longest, state: longestState };
    }
  }
  return { kind: "ok" };
}

/**
 * Names the longest linearizable prefix's end state and the operations that
 * could have come next: the pending ones called no later than the earliest
 * return among the known-outcome ones left.
 */
function explainFailure<S, I, O>(model: Model<S, I, O>, ops: Operation<I, O>[], prefix: number[], state: S): string {
  const done = new Set(prefix);
  const rest = ops.map((_, i) => i).filter((i) => !done.has(i));
  const known = rest.filter((i) => !isUnknownOutcome(ops[i]!));
  const firstReturn = Math.min(...known.map((i) => ops[i]!.return));
  const candidates = rest.filter((i) => ops[i]!.call <= firstReturn);
  const lines = candidates.slice(0, EXPLAIN_MAX_CANDIDATES).map((i) => {
    const op = ops[i]!;
    const fits = model.step(state, op.input, isUnknownOutcome(op) ? undefined : op.output).length > 0;
    return `  ${formatOperation(model, originalOf(op))}${fits ? " (fits that state, but leads to a dead end)" : " (does not fit that state)"}`;
  });
  if (candidates.length > EXPLAIN_MAX_CANDIDATES) lines.push(`  … and ${candidates.length - EXPLAIN_MAX_CANDIDATES} more`);
  return [
    `No linearization of these ${ops.length} operations exists: the longest linearizable prefix has ${prefix.length} ` +
      `and ends in state ${model.hash(state)}; the operations that could come next are:`,
    ...lines,
  ].join("\n");
}

// ---------------------------------------------------------------------------
// The key-value model: one register per key, partitioned by key.

type KvState = string | null;

function kvInit(): KvState {
  return null;
}

function okOf(input: KvInput, output: KvOutput): boolean {
  if (!("ok" in output)) {
    throw new TypeError(`Expected an { ok } output for a "${input.op}" of key "${input.key}": got ${JSON.stringify(output)}`);
  }
  return output.ok;
}

// An unknown outcome steps to the "took effect" state only: "never took
// effect" is covered by the checker leaving the operation unlinearized.
function kvStep(state: KvState, input: KvInput, output: KvOutput | undefined): KvState[] {
  switch (input.op) {
    case "read": {
      if (output === undefined) return [state];
      if (!("value" in output)) {
        throw new TypeError(`Expected a { value } output for a "read" of key "${input.key}": got ${JSON.stringify(output)}`);
      }
      return output.value === state ? [state] : [];
    }
    case "write":
      // A plain PUT answered false was refused: no effect.
      if (output === undefined) return [input.value];
      return okOf(input, output) ? [input.value] : [state];
    case "cas": {
      const matches = state === input.expect;
      if (output === undefined) return matches ? [input.value] : [state];
      return okOf(input, output) === matches ? [matches ? input.value : state] : [];
    }
    case "delete":
      if (output === undefined) return [null];
      return okOf(input, output) ? [null] : [state];
  }
}

/**
 * The state after a write whose value nothing in the history refers to: one
 * placeholder for all of them, so the search sees them as the same. Not a
 * string a client could have written in practice.
 */
const UNOBSERVED = "\u0000unobserved";

// By key, in history order, with three rewrites that change no answer and
// save the search a lot (results still show the original operations):
//  - reads with an unknown outcome are left out: they change nothing and
//    constrain nothing;
//  - a write or cas with an unknown outcome whose value a read returned, or a
//    successful cas expected, did take effect (written values are unique): it
//    gets output { ok: true } (return still Infinity), so the search must
//    place it instead of trying to do without it first;
//  - a write or cas with an unknown outcome whose value no read returned and
//    no cas expected writes UNOBSERVED instead: all such values behave alike.
function kvPartition(history: Operation<KvInput, KvOutput>[]): Operation<KvInput, KvOutput>[][] {
  /** values a read returned or a successful cas expected */
  const observed = new KeyValues();
  /** those, and the values any cas expected */
  const referenced = new KeyValues();
  for (const { input, output } of history) {
    if (input.op === "read" && output !== undefined && "value" in output && output.value !== null) {
      observed.add(input.key, output.value);
      referenced.add(input.key, output.value);
    }
    if (input.op === "cas" && input.expect !== null) {
      referenced.add(input.key, input.expect);
      if (output !== undefined && "ok" in output && output.ok) observed.add(input.key, input.expect);
    }
  }
  const byKey = new Map<string, Operation<KvInput, KvOutput>[]>();
  for (let op of history) {
    const { input } = op;
    if (op.output === undefined) {
      if (input.op === "read") continue;
      if (input.op === "write" || input.op === "cas") {
        if (observed.has(input.key, input.value)) op = derive(op, { output: { ok: true } });
        else if (!referenced.has(input.key, input.value)) op = derive(op, { input: { ...input, value: UNOBSERVED } });
      }
    }
    let list = byKey.get(input.key);
    if (list === undefined) {
      list = [];
      byKey.set(input.key, list);
    }
    list.push(op);
  }
  return [...byKey.values()];
}

/** A set of (key, value) pairs. */
class KeyValues {
  #byKey = new Map<string, Set<string>>();

  add(key: string, value: string): void {
    let values = this.#byKey.get(key);
    if (values === undefined) {
      values = new Set();
      this.#byKey.set(key, values);
    }
    values.add(value);
  }

  has(key: string, value: string): boolean {
    return this.#byKey.get(key)?.has(value) ?? false;
  }
}

// A plain write or delete that took effect, or may have.
function kvIsBlind(input: KvInput, output: KvOutput | undefined): boolean {
  if (input.op !== "write" && input.op !== "delete") return false;
  return output === undefined || ("ok" in output && output.ok);
}

// Reads, and writes the store refused (a cas answered false, a PUT or DELETE
// answered false).
function kvIsReadOnly(input: KvInput, output: KvOutput | undefined): boolean {
  if (input.op === "read") return true;
  return output !== undefined && "ok" in output && !output.ok;
}

function kvHash(state: KvState): string {
  return state === UNOBSERVED ? "(a value never read)" : JSON.stringify(state);
}

function kvValue(value: string | null): string {
  return value === null ? "absent" : JSON.stringify(value);
}

function kvDescribe(input: KvInput, output: KvOutput | undefined): string {
  const key = JSON.stringify(input.key);
  let result = "?";
  if (output !== undefined) result = "value" in output ? kvValue(output.value) : output.ok ? "ok" : "failed";
  switch (input.op) {
    case "read":
      return `read ${key} -> ${result}`;
    case "write":
      return `write ${key} = ${JSON.stringify(input.value)} -> ${result}`;
    case "cas":
      return `cas ${key} from ${kvValue(input.expect)} to ${JSON.stringify(input.value)} -> ${result}`;
    case "delete":
      return `delete ${key} -> ${result}`;
  }
}

export const kvModel: Model<KvState, KvInput, KvOutput> = {
  init: kvInit,
  step: kvStep,
  partition: kvPartition,
  hash: kvHash,
  describeOperation: kvDescribe,
  isReadOnly: kvIsReadOnly,
  isBlind: kvIsBlind,
};

/**
 * Acknowledged writes (write/cas with ok:true, finite return) that the final
 * state contradicts: helper for the lost-write check. `finalValues` maps key ->
 * value read at the end, after the cluster healed.
 *
 * Precisely: an acknowledged write or cas W on key k is lost when the final
 * value of k is neither W's value nor the value (null for a delete) of some
 * other write/cas/delete X on k that may have taken effect (ok:true or outcome
 * unknown) and may have been linearized after W, i.e. X returned no earlier
 * than W was called (X called after W, concurrent with W, or never answered).
 * In a linearizable history W took effect, so the final value comes from W or
 * from an operation linearized after W, which is such an X: a correct history
 * is never flagged. Keys missing from `finalValues` are not judged. Relies on
 * every written value being unique.
 */
export function lostAcknowledgedWrites(
  history: Operation<KvInput, KvOutput>[],
  finalValues: Map<string, string | null>,
): Operation<KvInput, KvOutput>[] {
  // key -> value -> latest return among the operations that may have set it
  const latestSetter = new Map<string, Map<string | null, number>>();
  for (const op of history) {
    const { input, output } = op;
    if (input.op === "read") continue;
    const mayHaveApplied = isUnknownOutcome(op) || (output !== undefined && "ok" in output && output.ok);
    if (!mayHaveApplied) continue;
    const value = input.op === "delete" ? null : input.value;
    let byValue = latestSetter.get(input.key);
    if (byValue === undefined) {
      byValue = new Map();
      latestSetter.set(input.key, byValue);
    }
    byValue.set(value, Math.max(byValue.get(value) ?? -Infinity, isUnknownOutcome(op) ? Infinity : op.return));
  }
  return history.filter((w) => {
    const { input, output } = w;
    if (input.op !== "write" && input.op !== "cas") return false;
    if (!Number.isFinite(w.return) || output === undefined || !("ok" in output) || !output.ok) return false;
    if (!finalValues.has(input.key)) return false;
    const finalValue = finalValues.get(input.key)!;
    if (finalValue === input.value) return false;
    const latest = latestSetter.get(input.key)?.get(finalValue) ?? -Infinity;
    return latest < w.call;
  });
}
