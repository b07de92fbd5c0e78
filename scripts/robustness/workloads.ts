// Concurrent clients for the robustness suite. Each client runs one workload
// against a random live server's HTTP API (so many requests are forwarded to
// the leader) and records every operation it completes:
// - kv: registers on a few keys: ?consistent reads, plain PUTs, CAS by
//   ModifyIndex (after a ?consistent read; recorded as cas with the value
//   read as `expect`), rare deletes;
// - txn: multi-key /v1/txn sets, some guarded by a CAS on one key, and
//   read-only ?consistent get-tree reads of all txn keys;
// - lock: check-free sessions taking and releasing one lock key, and
//   ?consistent reads of its LockIndex and Session.
// A write answered 5xx, timed out or cut off is outcome-unknown (return =
// Infinity, no output); a failed read is dropped. Every value written is
// unique in the run. All choices come from the client's seeded Rng.
import type { Rng } from "../../core/sim/mod.ts";
import type { Cluster, Server } from "./cluster.ts";
import type { KvInput, KvOutput, Operation } from "./history.ts";
import { describeOutcome, httpRequest, type HttpOutcome } from "./http.ts";
import type { LockInput, LockOutput, TxnInput, TxnOutput } from "./models.ts";

export type WorkloadKind = "kv" | "txn" | "lock";

export interface Keys {
  kv: string[];
  txnPrefix: string;
  txn: string[];
  lock: string;
}

export function workloadKeys(): Keys {
  return {
    kv: ["robust/kv/a", "robust/kv/b", "robust/kv/c"],
    txnPrefix: "robust/txn/",
    txn: ["robust/txn/a", "robust/txn/b", "robust/txn/c", "robust/txn/d"],
    lock: "robust/lock",
  };
}

export interface Histories {
  kv: Operation<KvInput, KvOutput>[];
  txn: Operation<TxnInput, TxnOutput>[];
  lock: Operation<LockInput, LockOutput>[];
}

export interface Findings {
  /** Anomalies seen directly by a client (not through a history check). */
  direct: string[];
  /** Client-visible errors by kind ("500 No cluster leader", "timeout", …). */
  errors: Map<string, number>;
  /** Requests sent, by workload. */
  sent: Record<WorkloadKind, number>;
}

export interface WorkloadOptions {
  cluster: Cluster;
  keys: Keys;
  /** Servers a client may talk to now. */
  targets(): Server[];
  /** ms on the history clock. */
  now(): number;
  timeoutMs: number;
  /** Pause between a client's operations, ms, drawn uniformly from [0, thinkMs]. */
  thinkMs: number;
  histories: Histories;
  findings: Findings;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Normalise an error for the tally: status kept, other numbers and ids blanked. */
export function errorKey(o: HttpOutcome): string {
  const d = describeOutcome(o);
  const cut = o.kind === "reply" ? 4 : 0;
  return (d.slice(0, cut) + d.slice(cut).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>").replace(/\d+/g, "N")).slice(0, 120);
}

function tally(f: Findings, o: HttpOutcome): void {
  const k = errorKey(o);
  f.errors.set(k, (f.errors.get(k) ?? 0) + 1);
}

/** "not-sent": the connection was refused, so the request never reached a server. */
type WriteResult = { ok: boolean } | "unknown" | "not-sent";

function refused(o: HttpOutcome): boolean {
  return o.kind === "error" && o.message === "ECONNREFUSED";
}

/** Record a write: unknown → return Infinity, no output; not sent → not recorded at all. */
function recordWrite<I, O>(h: Operation<I, O | { ok: boolean }>[], o: WorkloadOptions, op: { clientId: number; input: I; call: number }, res: WriteResult): void {
  if (res === "not-sent") return;
  if (res === "unknown") h.push({ ...op, return: Infinity, output: undefined });
  else h.push({ ...op, return: o.now(), output: res });
}

/** "true"/"false" answers; 5xx, timeouts and cut connections are unknown. */
function writeResult(f: Findings, o: HttpOutcome, what: string): WriteResult {
  if (refused(o)) {
    tally(f, o);
    return "not-sent";
  }
  if (o.kind === "reply" && o.status === 200) {
    const b = o.body.trim();
    if (b === "true") return { ok: true };
    if (b === "false") return { ok: false };
    f.direct.push(`${what}: unexpected 200 body ${JSON.stringify(b.slice(0, 100))}`);
    return "unknown";
  }
  tally(f, o);
  if (o.kind === "reply" && o.status < 500) f.direct.push(`${what}: unexpected answer ${describeOutcome(o)}`);
  return "unknown";
}

interface KvEntryJson {
  Key: string;
  Value: string | null;
  ModifyIndex: number;
  LockIndex: number;
  Session?: string;
}

function decodeValue(v: string | null): string {
  return v === null ? "" : Buffer.from(v, "base64").toString("utf8");
}

/** A ?consistent KV read: the entry, null when absent, undefined when it failed. */
async function kvRead(o: WorkloadOptions, s: Server, key: string): Promise<KvEntryJson | null | undefined> {
  const r = await httpRequest(o.cluster.url(s, `/v1/kv/${key}?consistent`), { timeoutMs: o.timeoutMs });
  if (r.kind === "reply" && r.status === 404) return null;
  if (r.kind === "reply" && r.status === 200) {
    const list = JSON.parse(r.body) as KvEntryJson[];
    return list[0] ?? null;
  }
  tally(o.findings, r);
  return undefined;
}

function pickTarget(o: WorkloadOptions, rng: Rng): Server | undefined {
  const t = o.targets();
  return t.length === 0 ? undefined : rng.pick(t);
}

export async function kvClient(o: WorkloadOptions, clientId: number, rng: Rng, running: () => boolean): Promise<void> {
  let seq = 0;
  const h = o.histories.kv;
  while (running()) {
    const s = pickTarget(o, rng);
    const key = rng.pick(o.keys.kv);
    const p = rng.float();
    if (s === undefined) {
      await sleep(100);
      continue;
    }
    o.findings.sent.kv++;
    if (p < 0.4 || p >= 0.7) {
      // A read, or the read half of a CAS.
      const call = o.now();
      const e = await kvRead(o, s, key);
      const ret = o.now();
      if (e !== undefined) {
        const value = e === null ? null : decodeValue(e.Value);
        h.push({ clientId, input: { op: "read", key }, call, return: ret, output: { value } });
        if (p >= 0.7 && p < 0.95) {
          const next = `k${clientId}-${seq++}`;
          const s2 = pickTarget(o, rng) ?? s;
          const call2 = o.now();
          const r = await httpRequest(o.cluster.url(s2, `/v1/kv/${key}?cas=${e === null ? 0 : e.ModifyIndex}`), { method: "PUT", body: next, timeoutMs: o.timeoutMs });
          const res = writeResult(o.findings, r, `cas ${key}`);
          recordWrite(h, o, { clientId, input: { op: "cas", key, expect: value, value: next }, call: call2 }, res);
        } else if (p >= 0.95) {
          const s2 = pickTarget(o, rng) ?? s;
          const call2 = o.now();
          const r = await httpRequest(o.cluster.url(s2, `/v1/kv/${key}`), { method: "DELETE", timeoutMs: o.timeoutMs });
          const res = writeResult(o.findings, r, `delete ${key}`);
          recordWrite(h, o, { clientId, input: { op: "delete", key }, call: call2 }, res);
        }
      }
    } else {
      const value = `k${clientId}-${seq++}`;
      const call = o.now();
      const r = await httpRequest(o.cluster.url(s, `/v1/kv/${key}`), { method: "PUT", body: value, timeoutMs: o.timeoutMs });
      const res = writeResult(o.findings, r, `put ${key}`);
      if (typeof res === "object" && !res.ok) o.findings.direct.push(`put ${key}=${value}: a plain PUT answered false`);
      recordWrite(h, o, { clientId, input: { op: "write", key, value }, call }, res);
    }
    if (o.thinkMs > 0) await sleep(rng.int(o.thinkMs + 1));
  }
}

interface TxnReplyJson {
  Results: { KV: KvEntryJson }[] | null;
  Errors: { OpIndex: number; What: string }[] | null;
}

/** A read-only ?consistent txn of every txn key: values and ModifyIndexes, or undefined when it failed. */
async function txnRead(o: WorkloadOptions, s: Server): Promise<Map<string, KvEntryJson> | undefined> {
  const body = JSON.stringify([{ KV: { Verb: "get-tree", Key: o.keys.txnPrefix } }]);
  const r = await httpRequest(o.cluster.url(s, "/v1/txn?consistent"), { method: "PUT", body, timeoutMs: o.timeoutMs });
  if (r.kind !== "reply" || r.status !== 200) {
    tally(o.findings, r);
    return undefined;
  }
  const reply = JSON.parse(r.body) as TxnReplyJson;
  return new Map((reply.Results ?? []).map((x) => [x.KV.Key, x.KV]));
}

export async function txnClient(o: WorkloadOptions, clientId: number, rng: Rng, running: () => boolean): Promise<void> {
  let seq = 0;
  const h = o.histories.txn;
  const keys = o.keys.txn;
  while (running()) {
    const s = pickTarget(o, rng);
    const p = rng.float();
    const subset = rng.shuffle([...keys]).slice(0, rng.range(2, keys.length));
    if (s === undefined) {
      await sleep(100);
      continue;
    }
    o.findings.sent.txn++;
    let cas: { key: string; expect: string | null; index: number } | undefined;
    if (p < 0.6) {
      const call = o.now();
      const got = await txnRead(o, s);
      const ret = o.now();
      if (got === undefined) continue;
      const values: Record<string, string | null> = {};
      for (const k of keys) values[k] = got.has(k) ? decodeValue(got.get(k)!.Value) : null;
      h.push({ clientId, input: { op: "txn-read" }, call, return: ret, output: { values } });
      if (p < 0.4) {
        if (o.thinkMs > 0) await sleep(rng.int(o.thinkMs + 1));
        continue;
      }
      // A guarded write: CAS on the first key of the subset, with what we just read.
      const k = subset[0]!;
      const e = got.get(k);
      cas = { key: k, expect: e ? decodeValue(e.Value) : null, index: e ? e.ModifyIndex : 0 };
    }
    const sets: Record<string, string> = {};
    const ops = subset.map((k) => {
      const v = `t${clientId}-${seq}-${k.slice(o.keys.txnPrefix.length)}`;
      sets[k] = v;
      const kv: Record<string, unknown> = { Verb: "set", Key: k, Value: Buffer.from(v).toString("base64") };
      if (cas && cas.key === k) {
        kv.Verb = "cas";
        kv.Index = cas.index;
      }
      return { KV: kv };
    });
    seq++;
    const s2 = pickTarget(o, rng) ?? s;
    const call = o.now();
    const r = await httpRequest(o.cluster.url(s2, "/v1/txn"), { method: "PUT", body: JSON.stringify(ops), timeoutMs: o.timeoutMs });
    let res: WriteResult;
    if (r.kind === "reply" && r.status === 200) res = { ok: true };
    else if (r.kind === "reply" && r.status === 409) res = { ok: false };
    else if (refused(r)) {
      tally(o.findings, r);
      res = "not-sent";
    } else {
      tally(o.findings, r);
      if (r.kind === "reply" && r.status < 500) o.findings.direct.push(`txn: unexpected answer ${describeOutcome(r)}`);
      res = "unknown";
    }
    const input: TxnInput = cas ? { op: "txn-write", sets, cas: { key: cas.key, expect: cas.expect } } : { op: "txn-write", sets };
    recordWrite(h, o, { clientId, input, call }, res);
    if (o.thinkMs > 0) await sleep(rng.int(o.thinkMs + 1));
  }
}

export async function lockClient(o: WorkloadOptions, clientId: number, rng: Rng, running: () => boolean): Promise<void> {
  const h = o.histories.lock;
  const key = o.keys.lock;
  let session: string | undefined;
  let sessions = 0;
  while (running()) {
    const s = pickTarget(o, rng);
    const p = rng.float();
    if (s === undefined) {
      await sleep(100);
      continue;
    }
    o.findings.sent.lock++;
    if (session === undefined) {
      // No checks, no TTL, no lock delay: nothing but our own ops can release it.
      const body = JSON.stringify({ Name: `robust-${clientId}-${sessions++}`, NodeChecks: [], Checks: [], LockDelay: "0s", Behavior: "release" });
      const r = await httpRequest(o.cluster.url(s, "/v1/session/create"), { method: "PUT", body, timeoutMs: o.timeoutMs });
      if (r.kind === "reply" && r.status === 200) session = (JSON.parse(r.body) as { ID: string }).ID;
      else {
        tally(o.findings, r);
        await sleep(50);
      }
      continue;
    }
    if (p < 0.4 || p >= 0.7) {
      const op = p < 0.4 ? "acquire" : "release";
      const call = o.now();
      const r = await httpRequest(o.cluster.url(s, `/v1/kv/${key}?${op}=${session}`), { method: "PUT", body: `${clientId}`, timeoutMs: o.timeoutMs });
      const res = writeResult(o.findings, r, `${op} ${key}`);
      if (r.kind === "reply" && /invalid session/i.test(r.body)) {
        o.findings.direct.push(`${op} ${key} with session ${session}: "${r.body.trim()}", but its create was acknowledged (a lost session)`);
      }
      recordWrite(h, o, { clientId, input: { op, session }, call }, res);
    } else {
      const call = o.now();
      const e = await kvRead(o, s, key);
      const ret = o.now();
      if (e !== undefined) {
        const entry = e === null ? null : { lockIndex: e.LockIndex, session: e.Session ? e.Session : null };
        h.push({ clientId, input: { op: "lock-read" }, call, return: ret, output: { entry } });
      }
    }
    if (o.thinkMs > 0) await sleep(rng.int(o.thinkMs + 1));
  }
}

/** Final ?consistent reads of every key, retried until they succeed; added to the histories. */
export async function finalReads(o: WorkloadOptions, clientId: number, options: { deadlineMs: number }): Promise<Map<string, string | null>> {
  const final = new Map<string, string | null>();
  const retry = async <T>(what: string, fn: (s: Server) => Promise<T | undefined>): Promise<T> => {
    for (let attempt = 0; ; attempt++) {
      const t = o.targets();
      const s = t[attempt % Math.max(1, t.length)];
      if (s) {
        const v = await fn(s);
        if (v !== undefined) return v;
      }
      if (o.now() > options.deadlineMs) throw new Error(`Final read of ${what} kept failing`);
      await sleep(200);
    }
  };
  for (const key of o.keys.kv) {
    const call = o.now();
    const e = await retry(key, (s) => kvRead(o, s, key));
    const value = e === null ? null : decodeValue(e.Value);
    o.histories.kv.push({ clientId, input: { op: "read", key }, call, return: o.now(), output: { value } });
    final.set(key, value);
  }
  const call = o.now();
  const got = await retry("txn keys", (s) => txnRead(o, s));
  const values: Record<string, string | null> = {};
  for (const k of o.keys.txn) values[k] = got.has(k) ? decodeValue(got.get(k)!.Value) : null;
  o.histories.txn.push({ clientId, input: { op: "txn-read" }, call, return: o.now(), output: { values } });
  const call2 = o.now();
  const e = await retry(o.keys.lock, (s) => kvRead(o, s, o.keys.lock));
  const entry = e === null ? null : { lockIndex: e.LockIndex, session: e.Session ? e.Session : null };
  o.histories.lock.push({ clientId, input: { op: "lock-read" }, call: call2, return: o.now(), output: { entry } });
  return final;
}

interface TreeEntry {
  Key: string;
  Value: string | null;
  ModifyIndex: number;
  LockIndex: number;
  Session?: string;
}

function renderTree(list: TreeEntry[]): string {
  return list.map((e) => `${e.Key}=${decodeValue(e.Value)}@${e.ModifyIndex}/lock${e.LockIndex}/${e.Session ?? "-"}`).sort().join(" ");
}

/**
 * Every replica converges on the same data: once writes have stopped, each
 * running server's local (?stale) view of the suite's keys must come to equal
 * the leader's ?consistent one, ModifyIndex, LockIndex and Session included.
 * A replica that applied the log differently (say, deduplicated a write its
 * peers applied) stays different. Returns one line per diverged server.
 */
export async function replicaDivergence(o: WorkloadOptions, options: { timeoutMs: number }): Promise<string[]> {
  const read = async (s: Server, mode: "consistent" | "stale"): Promise<string | undefined> => {
    const r = await httpRequest(o.cluster.url(s, `/v1/kv/robust/?recurse&${mode}`), { timeoutMs: 5_000 });
    if (r.kind === "reply" && r.status === 404) return "";
    if (r.kind !== "reply" || r.status !== 200) return undefined;
    return renderTree(JSON.parse(r.body) as TreeEntry[]);
  };
  const deadline = o.now() + options.timeoutMs;
  let truth: string | undefined;
  let views = new Map<Server, string | undefined>();
  while (o.now() < deadline) {
    const t = o.targets();
    truth = t.length > 0 ? await read(t[0]!, "consistent") : undefined;
    if (truth !== undefined) {
      views = new Map(await Promise.all(t.map(async (s) => [s, await read(s, "stale")] as const)));
      if ([...views.values()].every((v) => v === truth)) return [];
    }
    await sleep(250);
  }
  if (truth === undefined) return [`no ?consistent read of robust/ succeeded within ${options.timeoutMs} ms`];
  return [...views].filter(([, v]) => v !== truth).map(([s, v]) => {
    const want = new Set(truth!.split(" "));
    const got = new Set((v ?? "").split(" "));
    const missing = [...want].filter((x) => !got.has(x)).slice(0, 5);
    const extra = [...got].filter((x) => !want.has(x)).slice(0, 5);
    return v === undefined
      ? `${s.name}: no ?stale answer`
      : `${s.name} differs from the leader's ?consistent view: leader has ${missing.join(" ")}; ${s.name} has ${extra.join(" ")}`;
  });
}
