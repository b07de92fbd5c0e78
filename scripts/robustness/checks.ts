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

export function checkHistories(h: Histories, options: { keys: Keys; finalKv: Map<string, string | null>; timeoutMs: number }): CheckReport {
  const report: CheckReport = { anomalies: [], inconclusive: [], lines: [] };
  const refused = refusedButApplied(h, options.keys.txn);
  report.anomalies.push(...refused);
  if (refused.length > 0) report.lines.push(`writes answered false/409 that took effect: ${refused.length}`);
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
