// cairn sync benchmark (not a test; prints figures, asserts nothing):
//   node --import tsx scripts/bench/sync.ts [--tasks 100] [--instances 1000] [--rate 50] [--seconds 60]
// A `cairn agent -dev` (CAIRN_E2E_BIN or dist/cairn) holding `--instances`
// instances of `--tasks` services (svc-0 … svc-N, evenly), and the sync
// runtime in this process with one task per service (condition "services",
// buffer_period min 1s max 4s, max_concurrent_runs 10) and a driver that
// records each start and takes 50 ms. `--rate` changes per second, each a
// re-registration of a random instance with a new port and tag `s<seq>`, for
// `--seconds`. Then:
// - change → driver start: for each change, the first run of its task whose
//   inputs hold that instance at that change or a later one;
// - beyond the buffer: that start minus the deadline the buffer period sets
//   for the changes the run took (min(last + min, first + max));
// - lost: changes no run ever took; runs per change; the RSS of this
//   process (the sync runtime) and of the agent.
// Targets (issue #22): p99 beyond the buffer <= 250 ms, no lost change,
// fewer runs than changes per task (coalesced).
import { readFileSync } from "node:fs";
import { ApiClient } from "../../core/api/client.ts";
import { systemClock } from "../../core/clock/mod.ts";
import { createLogger } from "../../core/log/mod.ts";
import { parseSyncConfig } from "../../core/sync/config.ts";
import type { DriverResult, DriverRun, SyncDriver } from "../../core/sync/driver.ts";
import { SyncRuntime } from "../../core/sync/runtime_node.ts";
import { startDevAgent } from "../e2e/harness.ts";

function flag(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : dflt;
  if (!Number.isSafeInteger(v) || v <= 0) throw new RangeError(`--${name} needs a positive whole number`);
  return v;
}

const tasks = flag("tasks", 100);
const instances = flag("instances", 1000);
const rate = flag("rate", 50);
const seconds = flag("seconds", 60);
const bufferMin = 1_000;
const bufferMax = 4_000;
const driverMs = 50;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Change {
  instance: number;
  seq: number;
  at: number;
  takenAt?: number;
  run?: number;
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function main(): Promise<void> {
  const agent = await startDevAgent([], { stdio: "ignore" });
  const client = new ApiClient({ address: agent.httpAddr });
  const svcOf = (i: number) => i % tasks;
  const register = (i: number, seq: number) =>
    client.request({ method: "PUT", path: "/v1/agent/service/register", body: JSON.stringify({ ID: `inst-${i}`, Name: `svc-${svcOf(i)}`, Address: `10.${(i >> 8) & 255}.${i & 255}.1`, Port: 10_000 + (seq % 50_000), Tags: [`s${seq}`] }) });
  const t0 = Date.now();
  for (let i = 0; i < instances; i += 50) await Promise.all(Array.from({ length: Math.min(50, instances - i) }, (_, k) => register(i + k, 0)));
  console.log(`registered ${instances} instances of ${tasks} services in ${Date.now() - t0} ms`);

  const hcl = [
    `buffer_period {\n  min = "${bufferMin}ms"\n  max = "${bufferMax}ms"\n}`,
    `max_concurrent_runs = 10\nrun_history = 5`,
    `consul {\n  address = "${agent.httpAddr}"\n  kv_path = "bench-sync/"\n}`,
    `driver "exec" {}`,
    ...Array.from({ length: tasks }, (_, i) => `task {\n  name = "t${i}"\n  module = "bench"\n  condition "services" {\n    names = ["svc-${i}"]\n  }\n}`),
  ].join("\n");
  const cfg = parseSyncConfig([{ file: "bench.hcl", text: hcl }]);

  const changes: Change[] = [];
  const pendingByInstance = new Map<number, Change[]>();
  const runs: { task: number; at: number; took: number; excess?: number; trigger: string }[] = [];
  let latestSeq = 0;
  const driver: SyncDriver = {
    kind: "bench",
    warnings: [],
    async apply(run: DriverRun): Promise<DriverResult> {
      const at = Date.now();
      const task = Number(run.task.name.slice(1));
      const took: Change[] = [];
      for (const svc of Object.values(run.inputs.services ?? {})) {
        const inst = Number(svc.id.slice("inst-".length));
        const seq = Number((svc.tags[0] ?? "s0").slice(1));
        const pend = pendingByInstance.get(inst);
        while (pend && pend.length > 0 && pend[0]!.seq <= seq) {
          const c = pend.shift()!;
          c.takenAt = at;
          c.run = runs.length;
          took.push(c);
        }
      }
      let excess: number | undefined;
      if (took.length > 0) {
        const first = Math.min(...took.map((c) => c.at));
        const last = Math.max(...took.map((c) => c.at));
        excess = at - Math.min(last + bufferMin, first + bufferMax);
      }
      runs.push({ task, at, took: took.length, ...(excess !== undefined ? { excess } : {}), trigger: run.trigger });
      await sleep(driverMs);
      return { ok: true, exitCode: 0, outputTail: "" };
    },
    inspect: async () => ({ ok: true, exitCode: 0, outputTail: "" }),
    destroy: async () => ({ ok: true, exitCode: 0, outputTail: "" }),
  };
  const warnings = new Map<string, number>();
  const sink = { write: (r: { level: string; message: string }) => { if (r.level === "warn" || r.level === "error") warnings.set(r.message, (warnings.get(r.message) ?? 0) + 1); } };
  const runtime = new SyncRuntime({ config: cfg, client, driver, clock: systemClock, logger: createLogger({ sink, level: "warn" }), runAll: true });
  await runtime.start();
  // Wait for every task's start run.
  while (new Set(runs.map((r) => r.task)).size < tasks) await sleep(100);
  await sleep(500);
  const startRuns = runs.length;
  console.log(`start runs done: ${startRuns}; changing ${rate}/s for ${seconds} s`);

  let maxRss = process.memoryUsage().rss;
  let maxAgentRss = rssMiB(agent.proc.pid);
  const begin = Date.now();
  let n = 0;
  let failed = 0;
  let inFlight = 0;
  const queue: Change[] = [];
  // At most 8 registrations in flight (the agent allows 200 connections per
  // client, and the runtime's watchers hold 100); a change counts from its
  // acknowledgement, when the catalog has it.
  const pump = () => {
    while (inFlight < 8 && queue.length > 0) {
      const c = queue.shift()!;
      inFlight++;
      register(c.instance, c.seq).then(
        () => {
          c.at = Date.now();
          changes.push(c);
          let q = pendingByInstance.get(c.instance);
          if (!q) pendingByInstance.set(c.instance, (q = []));
          q.push(c);
          q.sort((a, b) => a.seq - b.seq);
        },
        (err: unknown) => {
          failed++;
          if (failed <= 3) console.error(`register failed: ${String(err)}`);
        },
      ).finally(() => {
        inFlight--;
        pump();
      });
    }
  };
  let rngState = 12345;
  const rand = () => ((rngState = (rngState * 1103515245 + 12345) >>> 0) / 2 ** 32);
  while (Date.now() - begin < seconds * 1000) {
    const due = Math.floor(((Date.now() - begin) / 1000) * rate);
    while (n < due) {
      const inst = Math.floor(rand() * instances);
      const seq = ++latestSeq;
      queue.push({ instance: inst, seq, at: 0 });
      pump();
      n++;
    }
    maxRss = Math.max(maxRss, process.memoryUsage().rss);
    if (n % 100 === 0) maxAgentRss = Math.max(maxAgentRss, rssMiB(agent.proc.pid));
    await sleep(5);
  }
  // Let the last changes through: the longest buffer and a margin.
  await sleep(bufferMax + 3_000);
  maxRss = Math.max(maxRss, process.memoryUsage().rss);
  maxAgentRss = Math.max(maxAgentRss, rssMiB(agent.proc.pid));
  await runtime.stop();
  await agent.stop();

  const taken = changes.filter((c) => c.takenAt !== undefined);
  const latency = taken.map((c) => c.takenAt! - c.at);
  const excess = runs.slice(startRuns).filter((r) => r.excess !== undefined).map((r) => r.excess!);
  const changeRuns = runs.length - startRuns;
  const perTask = new Map<number, { changes: number; runs: number }>();
  for (const c of changes) {
    const t = svcOf(c.instance);
    const e = perTask.get(t) ?? { changes: 0, runs: 0 };
    e.changes++;
    perTask.set(t, e);
  }
  for (const r of runs.slice(startRuns)) {
    const e = perTask.get(r.task) ?? { changes: 0, runs: 0 };
    e.runs++;
    perTask.set(r.task, e);
  }
  const uncoalesced = [...perTask.values()].filter((e) => e.runs > e.changes).length;
  console.log(`changes: ${changes.length} (${(changes.length / seconds).toFixed(1)}/s); runs: ${changeRuns} (${(changeRuns / changes.length).toFixed(3)} per change); runs with no change taken: ${runs.slice(startRuns).filter((r) => r.took === 0).length}`);
  console.log(`change → driver start: p50 ${pct(latency, 50)} ms, p99 ${pct(latency, 99)} ms, max ${pct(latency, 100)} ms`);
  console.log(`beyond the buffer deadline: p50 ${pct(excess, 50)} ms, p99 ${pct(excess, 99)} ms, max ${pct(excess, 100)} ms (target p99 <= 250 ms)`);
  console.log(`lost changes: ${changes.length - taken.length}; tasks with more runs than changes: ${uncoalesced}; registrations refused by the agent: ${failed}`);
  console.log(`runtime warnings: ${warnings.size === 0 ? "none" : [...warnings].map(([m, k]) => `${m} ×${k}`).join("; ")}`);
  console.log(`RSS: sync runtime (this process) max ${(maxRss / 2 ** 20).toFixed(1)} MiB; agent max ${maxAgentRss.toFixed(1)} MiB`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
