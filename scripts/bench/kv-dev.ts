// KV benchmark of a dev agent: `node --import tsx scripts/bench/kv-dev.ts`.
// Starts `dist/cairn agent -dev` on a free port (or uses CAIRN_BENCH_HTTP_ADDR,
// e.g. 127.0.0.1:8500), drives PUT and GET with keep-alive agents at 1, 16 and
// 64 connections, then 10,000 blocking watchers of one key: a PUT to another
// key must wake none of them, a PUT to the watched key must wake all.
// CAIRN_BENCH_SECONDS (default 3) sets each phase's length,
// CAIRN_BENCH_WATCHERS (default 10000) the number of watchers,
// CAIRN_BENCH_PHASES (default "kv,fanout") which parts run.
// The machine may be shared: besides ops/s, each row shows the CPU time the
// agent spent per request (from /proc/<pid>/stat), and "ops/s per agent core"
// = 1e6 / that, the rate the agent could serve given one whole core.
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { httpCall as sharedHttpCall, type Reply } from "./_http.ts";
import { cairnBin, devAgentAt, waitFor, type Agent as CairnAgent } from "../e2e/harness.ts";
import { sleep } from "../../core/testing/until.ts";

/** `limits.http_max_conns_per_client` off: the watcher phases open more connections than the default allows. */
const noConnLimit = "-hcl=limits { http_max_conns_per_client = 0 }";

const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 3);
const watchers = Number(process.env.CAIRN_BENCH_WATCHERS ?? 10_000);
const phases = new Set((process.env.CAIRN_BENCH_PHASES ?? "kv,fanout").split(","));
const keyCount = 1_000;
const value = Buffer.alloc(64, "v");

let host = "127.0.0.1";
let port = 0;
let dev: CairnAgent | undefined;
let agentPid: number | undefined = process.env.CAIRN_BENCH_PID ? Number(process.env.CAIRN_BENCH_PID) : undefined;

/** CPU seconds (user + system) the agent process has used, or NaN when unknown. */
function agentCpuSeconds(): number {
  if (agentPid === undefined) return NaN;
  try {
    const stat = readFileSync(`/proc/${agentPid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // Fields 14 and 15 of stat (utime, stime) in clock ticks, usually 100 per second.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

function httpCall(agent: Agent, method: string, path: string, body?: Buffer): Promise<Reply> {
  return sharedHttpCall({ host, port }, agent, method, path, body);
}

/** The agent at CAIRN_BENCH_HTTP_ADDR once it has a leader, else `dist/cairn agent -dev -http-port=<free>`. */
async function startAgent(): Promise<void> {
  // Thousands of watchers come from one client address: lift Consul's per-client connection limit (200).
  const target = await devAgentAt(process.env.CAIRN_BENCH_HTTP_ADDR, { ports: "http", bin: cairnBin, args: [noConnLimit] });
  ({ host, port } = target);
  dev = target.agent;
  if (dev) {
    agentPid = dev.proc.pid;
    return;
  }
  const probe = new Agent({ keepAlive: false });
  await waitFor(async () => {
    const r = await httpCall(probe, "GET", "/v1/status/leader");
    return r.status === 200 && r.body.toString() !== '""';
  }, { timeoutMs: 30_000, intervalMs: 100, what: `a leader on ${host}:${port}` });
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

interface PhaseResult {
  op: string;
  conns: number;
  ops: number;
  errors: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  agentCpuUsPerOp: number;
}

async function phase(op: "PUT" | "GET", conns: number): Promise<PhaseResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: conns });
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const end = performance.now() + seconds * 1000;
  const worker = async (w: number): Promise<void> => {
    let i = w;
    while (performance.now() < end) {
      const path = `/v1/kv/bench/k${i % keyCount}`;
      i += conns;
      const t0 = performance.now();
      try {
        const r = op === "PUT" ? await httpCall(agent, "PUT", path, value) : await httpCall(agent, "GET", path);
        if (r.status !== 200) errors++;
      } catch {
        errors++;
      }
      latencies.push(performance.now() - t0);
      n++;
    }
  };
  const t0 = performance.now();
  const cpu0 = agentCpuSeconds();
  await Promise.all(Array.from({ length: conns }, (_, w) => worker(w)));
  const elapsed = (performance.now() - t0) / 1000;
  const agentCpuUsPerOp = ((agentCpuSeconds() - cpu0) * 1e6) / Math.max(n, 1);
  agent.destroy();
  const sorted = Float64Array.from(latencies).sort();
  return { op, conns, ops: n, errors, opsPerSec: n / elapsed, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), agentCpuUsPerOp };
}

interface FanoutResult {
  watchers: number;
  established: number;
  reconnects: number;
  wokenByOtherKey: number;
  answeredAfterPut: number;
  allAnsweredMs: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  errorKinds: Map<string, number>;
}

async function fanout(): Promise<FanoutResult> {
  const setup = new Agent({ keepAlive: true, maxSockets: 1 });
  await httpCall(setup, "PUT", "/v1/kv/bench/watched", Buffer.from("v0"));
  const first = await httpCall(setup, "GET", "/v1/kv/bench/watched");
  const index = first.index;
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  let stage: "connecting" | "after the other-key PUT" | "after the PUT" = "connecting";
  let putAt = 0;
  let finished = 0;
  let established = 0;
  let reconnects = 0;
  let wokenByOther = 0;
  let errors = 0;
  const errorKinds = new Map<string, number>();
  const wakeMs: number[] = [];
  let allDone: () => void = () => {};
  const done = new Promise<void>((r) => { allDone = r; });
  const finish = (): void => {
    finished++;
    if (finished === watchers) allDone();
  };
  const fail = (kind: string): void => {
    errors++;
    errorKinds.set(kind, (errorKinds.get(kind) ?? 0) + 1);
    finish();
  };
  const watch = (attempt: number): void => {
    let connected = false;
    const req = request({ host, port, method: "GET", path: `/v1/kv/bench/watched?index=${index}&wait=60s`, agent }, (res) => {
      res.resume();
      res.on("end", () => {
        if (res.statusCode !== 200) return fail(`HTTP ${res.statusCode} ${stage}`);
        if (stage === "after the PUT") wakeMs.push(performance.now() - putAt);
        else wokenByOther++;
        finish();
      });
    });
    req.on("socket", (s) => s.once("connect", () => { connected = true; established++; }));
    req.on("error", (err: Error & { code?: string }) => {
      // A burst of 10k connects can meet a reset from an overfull accept
      // queue; a real client retries, and so does this one (before any PUT).
      if (stage === "connecting" && attempt < 3) {
        if (connected) established--;
        reconnects++;
        setTimeout(() => watch(attempt + 1), 100);
        return;
      }
      fail(`${err.code ?? err.message} ${stage}`);
    });
    req.end();
  };
  for (let i = 0; i < watchers; i++) {
    watch(0);
    // Open connections in batches so the listen backlog is not overrun.
    if (i % 250 === 249) await sleep(20);
  }
  const deadline = Date.now() + 30_000;
  while (established < watchers && Date.now() < deadline) await sleep(50);
  await sleep(1_000); // let the server park every request
  await httpCall(setup, "PUT", "/v1/kv/bench/other", Buffer.from("x"));
  stage = "after the other-key PUT";
  await sleep(2_000);
  stage = "after the PUT";
  putAt = performance.now();
  await httpCall(setup, "PUT", "/v1/kv/bench/watched", Buffer.from("v1"));
  await Promise.race([done, sleep(70_000)]);
  agent.destroy();
  setup.destroy();
  const sorted = Float64Array.from(wakeMs).sort();
  return {
    watchers,
    established,
    reconnects,
    wokenByOtherKey: wokenByOther,
    answeredAfterPut: wakeMs.length,
    allAnsweredMs: wakeMs.length === watchers ? sorted[sorted.length - 1]! : NaN,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    errors,
    errorKinds,
  };
}

function pad(s: string | number, n: number): string {
  return String(s).padStart(n);
}

async function main(): Promise<void> {
  await startAgent();
  console.log(`# cairn KV benchmark against http://${host}:${port} (${seconds}s per phase)`);
  const rows: PhaseResult[] = [];
  if (phases.has("kv")) {
    const warm = new Agent({ keepAlive: true, maxSockets: 16 });
    await Promise.all(Array.from({ length: keyCount }, (_, i) => httpCall(warm, "PUT", `/v1/kv/bench/k${i}`, value)));
    warm.destroy();
    for (const op of ["PUT", "GET"] as const) {
      for (const conns of [1, 16, 64]) {
        const r = await phase(op, conns);
        rows.push(r);
        console.log(`  ${op} x${conns}: ${r.opsPerSec.toFixed(0)} ops/s`);
      }
    }
    console.log("");
    console.log("| op  | conns |   ops/s | p50 ms | p99 ms |    ops | errors | agent cpu us/op | ops/s per agent core |");
    console.log("|-----|-------|---------|--------|--------|--------|--------|-----------------|----------------------|");
    for (const r of rows) {
      console.log(`| ${r.op.padEnd(3)} | ${pad(r.conns, 5)} | ${pad(r.opsPerSec.toFixed(0), 7)} | ${pad(r.p50Ms.toFixed(2), 6)} | ${pad(r.p99Ms.toFixed(2), 6)} | ${pad(r.ops, 6)} | ${pad(r.errors, 6)} | ${pad(r.agentCpuUsPerOp.toFixed(1), 15)} | ${pad((1e6 / r.agentCpuUsPerOp).toFixed(0), 20)} |`);
    }
  }
  let f: FanoutResult | undefined;
  if (phases.has("fanout")) {
    console.log("");
    console.log(`# blocking fan-out: ${watchers} watchers of one key (?index=N&wait=60s)`);
    f = await fanout();
    console.log("| watchers | connected | woken by other key | answered after PUT | all answered ms | p50 ms | p99 ms | errors |");
    console.log("|----------|-----------|--------------------|--------------------|-----------------|--------|--------|--------|");
    console.log(`| ${pad(f.watchers, 8)} | ${pad(f.established, 9)} | ${pad(f.wokenByOtherKey, 18)} | ${pad(f.answeredAfterPut, 18)} | ${pad(f.allAnsweredMs.toFixed(0), 15)} | ${pad(f.p50Ms.toFixed(0), 6)} | ${pad(f.p99Ms.toFixed(0), 6)} | ${pad(f.errors, 6)} |`);
    if (f.reconnects > 0) console.log(`watchers that reconnected after a failed connect: ${f.reconnects}`);
    if (f.errors > 0) console.log(`fan-out errors: ${[...f.errorKinds].map(([k, n]) => `${k} x${n}`).join(", ")}`);
  }
  console.log("");
  const getRow = rows.find((r) => r.op === "GET" && r.conns === 64);
  if (getRow) {
    const cpu = Number.isFinite(getRow.agentCpuUsPerOp)
      ? ` (agent CPU per GET ${getRow.agentCpuUsPerOp.toFixed(1)} us: ${(1e6 / getRow.agentCpuUsPerOp).toFixed(0)}/s per core)`
      : "";
    console.log(`GET x64 ${getRow.opsPerSec >= 20_000 ? "meets" : "is below"} the 20,000 GET/s target${cpu}.`);
  }
  if (f) {
    console.log(`A PUT to another key woke ${f.wokenByOtherKey} watcher(s) (want 0); ${f.answeredAfterPut} of ${f.watchers} answered the watched key's PUT.`);
  }
}

main()
  .catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  })
  .finally(() => dev?.stop());
