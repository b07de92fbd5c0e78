// Every check a run's histories go through, with a report per anomaly:
// KV registers (linearizability per key + lost acknowledged writes), the txn
// keys (linearizability of multi-key writes and reads), the lock
// (linearizability against lockModel + the two LockIndex invariants).
import type { KvInput, KvOutput, Operation } from "./history.ts";
import { checkOperations, formatOperation, kvModel, lostAcknowledgedWrites, type CheckResult, type Model } from "./linearizability.ts";
import { checkLockInvariants, lockModel, txnModel, type TxnInput, type TxnOutput } from "./models.ts";
import type { Histories, Keys } from "./workloads.ts";

export interface Anomaly {
  /** Short kind, e.g. "kv-not-linearizable", "lost-acknowledged-write". */
  kind: string;
  /** Human explanation, several lines. */
  explanation: string;
}

export interface CheckReport {
  anomalies: Anomaly[];
  /** Checks that ran out of time: neither passed nor failed. */
  inconclusive: string[];
  /** One line per check, for the run summary. */
  lines: string[];
}

function describeIllegal<S, I, O>(model: Model<S, I, O>, r: Extract<CheckResult<I, O>, { result: "illegal" }>, maxOps = 60): string {
  const prefix = r.longestPrefix;
  const tail = prefix.slice(-Math.min(20, prefix.length));
  const inPrefix = new Set(prefix);
  const open = r.partition.filter((op) => !inPrefix.has(op)).sort((a, b) => a.call - b.call).slice(0, maxOps);
  return [
    r.explanation,
    "",
    `Longest linearizable prefix: ${prefix.length} of ${r.partition.length} operations; its last ${tail.length}:`,
    ...tail.map((op) => `  ${formatOperation(model, op)}`),
    `Not linearized (first ${open.length} by call time):`,
    ...open.map((op) => `  ${formatOperation(model, op)}`),
  ].join("\n");
}

function summarize(ops: Operation<unknown, unknown>[]): string {
  const unknown = ops.filter((op) => !Number.isFinite(op.return)).length;
  return `${ops.length} ops, ${unknown} outcome-unknown`;
}

function runCheck<S, I, O>(name: string, model: Model<S, I, O>, history: Operation<I, O>[], timeoutMs: number, report: CheckReport): void {
  const started = performance.now();
  const r = checkOperations(model, history, { timeoutMs });
  const took = `${Math.round(performance.now() - started)} ms`;
  if (r.result === "ok") report.lines.push(`${name}: linearizable (${summarize(history as Operation<unknown, unknown>[])}; checked in ${took})`);
  else if (r.result === "unknown") {
    report.inconclusive.push(`${name}: ${r.reason}`);
    report.lines.push(`${name}: INCONCLUSIVE (${r.reason})`);
  } else {
    report.anomalies.push({ kind: `${name}-not-linearizable`, explanation: describeIllegal(model, r) });
    report.lines.push(`${name}: NOT LINEARIZABLE (${summarize(history as Operation<unknown, unknown>[])}; ${r.explanation.split("\n")[0]})`);
  }
}

/**
 * Conditional writes answered "false" (or 409) whose value was read later:
 * the plainest form of a write applied although its client was told it
 * failed (e.g. applied, then replayed after a leader change, the replay
 * failing its own CAS). Sound because every value is written by one op only.
 */
export function refusedButApplied(h: Histories, txnKeys: readonly string[]): Anomaly[] {
  const out: Anomaly[] = [];
  const kvWriter = new Map<string, Operation<KvInput, KvOutput>>();
  for (const op of h.kv) if (op.input.op === "write" || op.input.op === "cas") kvWriter.set(`${op.input.key}\u0000${op.input.value}`, op);
  const seen = new Set<Operation<unknown, unknown>>();
  for (const r of h.kv) {
    if (r.input.op !== "read" || r.output === undefined || !("value" in r.output) || r.output.value === null) continue;
    const w = kvWriter.get(`${r.input.key}\u0000${r.output.value}`);
    if (!w || seen.has(w) || w.output === undefined || !("ok" in w.output) || w.output.ok) continue;
    seen.add(w);
    out.push({
      kind: "cas-false-took-effect",
      explanation: `A CAS answered false took effect: its value was read afterwards\n  ${formatOperation(kvModel, w)}\n  ${formatOperation(kvModel, r)}`,
    });
  }
  const txnWriter = new Map<string, Operation<TxnInput, TxnOutput>>();
  for (const op of h.txn) if (op.input.op === "txn-write") for (const [k, v] of Object.entries(op.input.sets)) txnWriter.set(`${k}\u0000${v}`, op);
  const model = txnModel(txnKeys);
  for (const r of h.txn) {
    if (r.input.op !== "txn-read" || r.output === undefined || !("values" in r.output)) continue;
    for (const [k, v] of Object.entries(r.output.values)) {
      const w = v === null ? undefined : txnWriter.get(`${k}\u0000${v}`);
      if (!w || seen.has(w) || w.output === undefined || !("ok" in w.output) || w.output.ok) continue;
      seen.add(w);
      out.push({
        kind: "txn-409-took-effect",
        explanation: `A guarded txn answered 409 took effect: its value ${JSON.stringify(v)} for ${k} was read afterwards\n  ${formatOperation(model, w)}\n  ${formatOperation(model, r)}`,
      });
    }
  }
  return out;
}

/** One observation of a key's value: a read, or the acknowledgement of the write that set it. */
interface Seen {
  key: string;
  /** null = absent (not unique, so never the value that comes back). */
  value: string | null;
  call: number;
  return: number;
  text: string;
  /** An acknowledgement only proves the value was installed before `return`. */
  isAck: boolean;
}

/**
 * A value that came back: it was installed by `return` of observation A (its
 * write's acknowledgement or a read), read B (called after that) saw another
 * value, and read C (called after B returned) saw it again. Each value is
 * written by one operation, so it was installed twice (a write applied twice)
 * or C was a stale read: either way not linearizable. Checked per key, as a
 * sweep over reads by call time.
 */
function reappeared(seen: Seen[], kind: string): Anomaly[] {
  const out: Anomaly[] = [];
  const byKey = new Map<string, Seen[]>();
  for (const x of seen) {
    let l = byKey.get(x.key);
    if (!l) byKey.set(x.key, (l = []));
    l.push(x);
  }
  for (const list of byKey.values()) {
    // For each value: the observation that proves it earliest (A), and its last read (C).
    const first = new Map<string, Seen>();
    const last = new Map<string, Seen>();
    for (const x of list) {
      if (x.value === null) continue;
      const f = first.get(x.value);
      if (!f || x.return < f.return) first.set(x.value, x);
      const l = last.get(x.value);
      if (!x.isAck && (!l || x.call > l.call)) last.set(x.value, x);
    }
    // B is any read; look for a value v != B's with first(v).return < B.call and B.return < last(v).call.
    const candidates = [...first.entries()].filter(([v]) => last.has(v)).sort((a, b) => a[1].return - b[1].return);
    const reads = list.filter((x) => !x.isAck).sort((a, b) => a.call - b.call);
    // The two values with the latest last-read among those proven before B.call (two, so one differs from B's).
    let top: Array<[string, Seen]> = [];
    let i = 0;
    const flagged = new Set<string>();
    for (const b of reads) {
      while (i < candidates.length && candidates[i]![1].return < b.call) {
        const [v] = candidates[i++]!;
        top = [...top, [v, last.get(v)!] as [string, Seen]].sort((x, y) => y[1].call - x[1].call).slice(0, 2);
      }
      const hit = top.find(([v, c]) => v !== b.value && c.call > b.return);
      if (!hit || flagged.has(hit[0])) continue;
      flagged.add(hit[0]);
      const [v, c] = hit;
      const a = first.get(v)!;
      out.push({
        kind,
        explanation: `Value ${JSON.stringify(v)} of ${b.key} came back after another value was read (a write applied twice, or a stale read):\n` +
          `  A ${a.isAck ? "acknowledged" : "read"}: ${a.text}\n  B then read:  ${b.text}\n  C then read:  ${c.text}`,
      });
      if (out.length >= 10) return out;
    }
  }
  return out;
}

function ack<I, O>(op: Operation<I, O>): boolean {
  const o = op.output as { ok?: boolean } | undefined;
  return Number.isFinite(op.return) && o?.ok === true;
}

/** Values read again after another value was read, on the KV keys and on each txn key. */
export function reinstatedValues(h: Histories, txnKeys: readonly string[]): Anomaly[] {
  const kvSeen: Seen[] = [];
  for (const op of h.kv) {
    const text = formatOperation(kvModel, op);
    if (op.input.op === "read" && op.output !== undefined && "value" in op.output) {
      kvSeen.push({ key: op.input.key, value: op.output.value, call: op.call, return: op.return, text, isAck: false });
    } else if ((op.input.op === "write" || op.input.op === "cas") && ack(op)) {
      kvSeen.push({ key: op.input.key, value: op.input.value, call: op.call, return: op.return, text, isAck: true });
    }
  }
  const model = txnModel(txnKeys);
  const txnSeen: Seen[] = [];
  for (const op of h.txn) {
    const text = formatOperation(model, op);
    if (op.input.op === "txn-read" && op.output !== undefined && "values" in op.output) {
      for (const k of txnKeys) txnSeen.push({ key: k, value: op.output.values[k] ?? null, call: op.call, return: op.return, text, isAck: false });
    } else if (op.input.op === "txn-write" && ack(op)) {
      for (const [k, v] of Object.entries(op.input.sets)) txnSeen.push({ key: k, value: v, call: op.call, return: op.return, text, isAck: true });
    }
  }
  return [...reappeared(kvSeen, "kv-value-came-back"), ...reappeared(txnSeen, "txn-value-came-back"), ...txnCameBack(h.txn, model, txnKeys)];
}

/**
 * The txn form that uses atomicity: a read that shows any value of txn T
 * proves all of T was installed; if it (or a read called after it returned)
 * shows another value on a key T set, T's value there was overwritten, and a
 * read called after that returned must not show it again.
 */
function txnCameBack(history: Operation<TxnInput, TxnOutput>[], model: ReturnType<typeof txnModel>, keys: readonly string[]): Anomaly[] {
  const reads = history.filter((op) => op.input.op === "txn-read" && op.output !== undefined && "values" in op.output)
    .sort((a, b) => a.call - b.call);
  const values = (op: Operation<TxnInput, TxnOutput>) => (op.output as { values: Record<string, string | null> }).values;
  const writerOf = new Map<string, Operation<TxnInput, TxnOutput>>();
  for (const op of history) if (op.input.op === "txn-write") for (const v of Object.values(op.input.sets)) writerOf.set(v, op);
  // Per txn: the earliest-returning read that shows any of its values.
  const firstSeen = new Map<Operation<TxnInput, TxnOutput>, Operation<TxnInput, TxnOutput>>();
  for (const r of reads) {
    for (const k of keys) {
      const w = writerOf.get(values(r)[k] ?? "");
      if (w && (!firstSeen.has(w) || r.return < firstSeen.get(w)!.return)) firstSeen.set(w, r);
    }
  }
  const out: Anomaly[] = [];
  for (const [t, a] of firstSeen) {
    if (t.input.op !== "txn-write") continue;
    for (const [k, v] of Object.entries(t.input.sets)) {
      // B: a, or a read called after a returned, that shows another value on k.
      const b = reads.find((r) => (r === a || r.call > a.return) && values(r)[k] !== v);
      if (!b) continue;
      const c = reads.find((r) => r.call > b.return && values(r)[k] === v);
      if (!c) continue;
      out.push({
        kind: "txn-value-came-back",
        explanation: `Value ${JSON.stringify(v)} of ${k} came back after it was overwritten (a txn applied twice, or a stale read):\n` +
          `  the txn:      ${formatOperation(model, t)}\n  A installed:  ${formatOperation(model, a)}\n` +
          `  B overwrote:  ${formatOperation(model, b)}\n  C came back:  ${formatOperation(model, c)}`,
      });
      if (out.length >= 10) return out;
      break;
    }
  }
  return out;
}

export function checkHistories(h: Histories, options: { keys: Keys; finalKv: Map<string, string | null>; timeoutMs: number }): CheckReport {
  const report: CheckReport = { anomalies: [], inconclusive: [], lines: [] };
  const refused = refusedButApplied(h, options.keys.txn);
  report.anomalies.push(...refused);
  if (refused.length > 0) report.lines.push(`writes answered false/409 that took effect: ${refused.length}`);
  const back = reinstatedValues(h, options.keys.txn);
  report.anomalies.push(...back);
  if (back.length > 0) report.lines.push(`values read again after another value was read (write applied twice, or stale read): ${back.length}`);
  runCheck("kv", kvModel, h.kv, options.timeoutMs, report);
  const lost: Operation<KvInput, KvOutput>[] = lostAcknowledgedWrites(h.kv, options.finalKv);
  if (lost.length > 0) {
    report.anomalies.push({
      kind: "lost-acknowledged-write",
      explanation: `${lost.length} acknowledged writes are contradicted by the final values ${JSON.stringify(Object.fromEntries(options.finalKv))}:\n` +
        lost.slice(0, 30).map((op) => `  ${formatOperation(kvModel, op)}`).join("\n"),
    });
    report.lines.push(`kv: ${lost.length} LOST ACKNOWLEDGED WRITES`);
  } else {
    report.lines.push("kv: no acknowledged write lost");
  }
  runCheck("txn", txnModel(options.keys.txn), h.txn, options.timeoutMs, report);
  runCheck("lock", lockModel, h.lock, options.timeoutMs, report);
  const violations = checkLockInvariants(h.lock);
  for (const v of violations) {
    report.anomalies.push({ kind: v.kind, explanation: `${v.explanation}\n${v.ops.map((op) => `  ${formatOperation(lockModel, op)}`).join("\n")}` });
  }
  report.lines.push(violations.length === 0 ? "lock: LockIndex monotonic across reads, one session per LockIndex" : `lock: ${violations.length} LOCKINDEX VIOLATIONS`);
  return report;
}
