// Sequential models for the txn and lock workloads (the KV register model is
// kvModel in linearizability.ts), and the lock invariants checked straight on
// the history. Each model is exact for what the workload does, so a correct
// history always linearizes:
// - txn: a few keys written only by /v1/txn; a write sets several of them at
//   once, optionally guarded by a CAS on one key (by ModifyIndex, mapped to
//   its unique value as for KV); a read is a read-only ?consistent txn
//   get-tree of all of them.
// - lock: one key touched only by ?acquire= / ?release= with sessions that
//   have no health checks, no TTL and are never destroyed during the run, so
//   nothing but these operations changes the key (no invalidation, no lock
//   delay). Consul's rules (state/kvs.go kvsLockTxn): acquire succeeds when
//   the key is free or already ours; LockIndex grows by one when a session
//   takes a free or absent key; release succeeds only for the holder.
import type { Operation } from "./history.ts";
import type { Model } from "./linearizability.ts";

export type TxnInput =
  | { op: "txn-read" }
  | { op: "txn-write"; sets: Record<string, string>; cas?: { key: string; expect: string | null } };
export type TxnOutput = { values: Record<string, string | null> } | { ok: boolean };

/** The txn keys' values, in the order of `keys`. */
export type TxnState = readonly (string | null)[];

export function txnModel(keys: readonly string[]): Model<TxnState, TxnInput, TxnOutput> {
  const position = new Map(keys.map((k, i) => [k, i]));
  const at = (k: string): number => {
    const i = position.get(k);
    if (i === undefined) throw new RangeError(`Key "${k}" is not one of the txn keys ${keys.join(", ")}`);
    return i;
  };
  return {
    init: () => keys.map(() => null),
    step(state, input, output) {
      if (input.op === "txn-read") {
        if (output === undefined || !("values" in output)) return [];
        return keys.every((k, i) => (output.values[k] ?? null) === state[i]) ? [state] : [];
      }
      const applies = input.cas === undefined || state[at(input.cas.key)] === input.cas.expect;
      if (output !== undefined && (!("ok" in output) || output.ok !== applies)) return [];
      if (!applies) return [state];
      const next = [...state];
      for (const [k, v] of Object.entries(input.sets)) next[at(k)] = v;
      return [next];
    },
    hash: (state) => JSON.stringify(state),
    // Reads, and writes refused with 409, change nothing.
    isReadOnly: (input, output) => input.op === "txn-read" || (output !== undefined && "ok" in output && !output.ok),
    describeOperation(input, output) {
      const out = output === undefined ? "?" : "values" in output ? JSON.stringify(output.values) : String(output.ok);
      if (input.op === "txn-read") return `txn-read -> ${out}`;
      const cas = input.cas ? ` if ${input.cas.key}==${JSON.stringify(input.cas.expect)}` : "";
      return `txn-write ${JSON.stringify(input.sets)}${cas} -> ${out}`;
    },
  };
}

export type LockInput = { op: "acquire"; session: string } | { op: "release"; session: string } | { op: "lock-read" };
export interface LockEntry {
  lockIndex: number;
  /** null when nobody holds the lock. */
  session: string | null;
}
export type LockOutput = { ok: boolean } | { entry: LockEntry | null };
/** null = the key does not exist. */
export type LockState = LockEntry | null;

export const lockModel: Model<LockState, LockInput, LockOutput> = {
  init: () => null,
  step(state, input, output) {
    if (input.op === "lock-read") {
      if (output === undefined || !("entry" in output)) return [];
      const e = output.entry;
      const same = e === null ? state === null : state !== null && state.lockIndex === e.lockIndex && state.session === e.session;
      return same ? [state] : [];
    }
    let ok: boolean;
    let next: LockState = state;
    if (input.op === "acquire") {
      if (state === null) {
        ok = true;
        next = { lockIndex: 1, session: input.session };
      } else if (state.session === input.session) {
        ok = true;
      } else if (state.session === null) {
        ok = true;
        next = { lockIndex: state.lockIndex + 1, session: input.session };
      } else {
        ok = false;
      }
    } else {
      ok = state !== null && state.session === input.session;
      if (ok) next = { lockIndex: state!.lockIndex, session: null };
    }
    if (output !== undefined && (!("ok" in output) || output.ok !== ok)) return [];
    return [next];
  },
  hash: (state) => (state === null ? "absent" : `${state.lockIndex}/${state.session ?? ""}`),
  // Reads, and acquires or releases answered false, change nothing.
  isReadOnly: (input, output) => input.op === "lock-read" || (output !== undefined && "ok" in output && !output.ok),
  describeOperation(input, output) {
    const out = output === undefined ? "?" : "ok" in output ? String(output.ok)
      : output.entry === null ? "absent" : `LockIndex=${output.entry.lockIndex} Session=${output.entry.session ?? "-"}`;
    return input.op === "lock-read" ? `lock-read -> ${out}` : `${input.op} ${input.session} -> ${out}`;
  },
};

export interface LockViolation {
  kind: "lock-index-went-back" | "lock-index-two-sessions";
  explanation: string;
  ops: Operation<LockInput, LockOutput>[];
}

function readEntry(op: Operation<LockInput, LockOutput>): LockEntry | undefined {
  const o = op.output;
  return op.input.op === "lock-read" && o !== undefined && "entry" in o && o.entry !== null ? o.entry : undefined;
}

/**
 * The two lock invariants the brief names, checked directly:
 * 1. LockIndex never goes back in real time: a read that returned before
 *    another read was called never shows a higher LockIndex.
 * 2. One LockIndex is never seen held by two different sessions.
 */
export function checkLockInvariants(history: Operation<LockInput, LockOutput>[]): LockViolation[] {
  const reads = history.filter((op) => readEntry(op) !== undefined && Number.isFinite(op.return));
  const out: LockViolation[] = [];
  // 1. Sweep reads by call time, holding the read with the highest LockIndex among those already returned.
  const byCall = [...reads].sort((a, b) => a.call - b.call);
  const byReturn = [...reads].sort((a, b) => a.return - b.return);
  let best: Operation<LockInput, LockOutput> | undefined;
  let r = 0;
  for (const op of byCall) {
    while (r < byReturn.length && byReturn[r]!.return < op.call) {
      const cand = byReturn[r++]!;
      if (!best || readEntry(cand)!.lockIndex > readEntry(best)!.lockIndex) best = cand;
    }
    if (best && readEntry(best)!.lockIndex > readEntry(op)!.lockIndex) {
      out.push({
        kind: "lock-index-went-back",
        explanation: `a read returned LockIndex ${readEntry(best)!.lockIndex} (client ${best.clientId}, ${best.call.toFixed(1)}..${best.return.toFixed(1)} ms) ` +
          `and a later read returned ${readEntry(op)!.lockIndex} (client ${op.clientId}, ${op.call.toFixed(1)}..${op.return.toFixed(1)} ms)`,
        ops: [best, op],
      });
      if (out.length >= 20) break;
    }
  }
  // 2. LockIndex → the first session seen holding it.
  const holder = new Map<number, Operation<LockInput, LockOutput>>();
  for (const op of reads) {
    const e = readEntry(op)!;
    if (e.session === null) continue;
    const first = holder.get(e.lockIndex);
    if (!first) holder.set(e.lockIndex, op);
    else if (readEntry(first)!.session !== e.session) {
      out.push({
        kind: "lock-index-two-sessions",
        explanation: `LockIndex ${e.lockIndex} was seen held by session ${readEntry(first)!.session} (client ${first.clientId}) and by ${e.session} (client ${op.clientId})`,
        ops: [first, op],
      });
    }
  }
  return out;
}
