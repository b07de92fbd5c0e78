// A registration storm against a 3-server cluster (issue #24 part 3):
// `node --import tsx scripts/bench/register-storm.ts`.
// Starts three `cairn agent -server` processes (CAIRN_E2E_BIN, else
// dist/cairn) through scripts/e2e/harness.ts, then registers
// CAIRN_BENCH_NODES (10,000) nodes "at once": CAIRN_BENCH_CONNS (200)
// concurrent keep-alive connections spread over the three servers' HTTP
// ports, each PUT /v1/catalog/register carrying a node, a service and a
// check (what a client agent's first anti-entropy full sync sends). A
// refused registration (429 or 503: request_limits) is sent again after a
// jittered wait of CAIRN_BENCH_RETRY_MS (1000) ± 50 %, as an agent's next
// sync would (Consul waits longer: ae's retry_failed_interval, 15 s + stagger).
// Meanwhile a probe at the leader's HTTP port does, every 50 ms, a KV PUT and
// then a `?consistent` GET of the key, and records their latencies and status.
// Printed for each mode, with the load average:
//   - the time until all nodes are in the catalog (every registration
//     answered 200, then checked by a consistent read of /v1/catalog/nodes),
//   - registrations refused (429/503) and sent again,
//   - probe p50/p99/max of the PUT and the GET, and how many were refused,
//   - whether leadership changed (the Raft term before and after, and the
//     leader the probe saw),
//   - the leader's CPU during the storm (from /proc/<pid>/stat, ms and % of
//     one core) and its RSS (now and peak),
//   - before the storm, CAIRN_BENCH_BASELINE_S (10) seconds of the probe
//     alone: the leader's CPU and the probe's latencies without the storm
//     (the probe's own writes cost the leader CPU too, and it gets many more
//     through when the storm is held back).
// The modes run in the same invocation, each on a fresh cluster:
// request_limits disabled, then `enforcing` at CAIRN_BENCH_WRITE_RATE (100)
// writes/s (burst 10 ×). CAIRN_BENCH_MODES=disabled,enforcing picks them;
// CAIRN_BENCH_MAX_S (240) bounds one storm. Every process started is killed.
import { LeanAgent, type LeanReply } from "./_lean_http.ts";
import { getJson, makeCluster, waitForLeader, type Cluster, type ServerSpec } from "../e2e/harness.ts";
import { load, rssMiB, cpuMs } from "./_proc.ts";

const nodeCount = Number(process.env.CAIRN_BENCH_NODES ?? 10_000);
const conns = Number(process.env.CAIRN_BENCH_CONNS ?? 200);
const writeRate = Number(process.env.CAIRN_BENCH_WRITE_RATE ?? 100);
const retryMs = Number(process.env.CAIRN_BENCH_RETRY_MS ?? 1_000);
const maxMs = Number(process.env.CAIRN_BENCH_MAX_S ?? 240) * 1000;
const probeEveryMs = 50;
const baselineMs = Number(process.env.CAIRN_BENCH_BASELINE_S ?? 10) * 1000;
const modes = (process.env.CAIRN_BENCH_MODES ?? "disabled,enforcing").split(",").map((m) => m.trim()).filter(Boolean);

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function registration(i: number): Buffer {
  const node = `storm-${i}`;
  return Buffer.from(JSON.stringify({
    Node: node,
    Address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
    Service: { ID: "web", Service: "web", Port: 8080, Tags: ["storm"] },
    // Not "serfHealth": the leader would reap nodes that are not serf members.
    Checks: [{ CheckID: "service:web", Name: "web alive", ServiceID: "web", Status: "passing" }],
  }));
}

async function raftTerm(c: Cluster, s: ServerSpec): Promise<number> {
  const self = (await getJson(c.url(s, "/v1/agent/self"), 5_000)) as { Stats?: { raft?: { term?: string } } } | undefined;
  return Number(self?.Stats?.raft?.term ?? NaN);
}

interface Probe {
  put: number[];
  get: number[];
  putRefused: number;
  getRefused: number;
  errors: number;
  leaders: Set<string>;
  stop(): Promise<void>;
}

/** Every 50 ms: a KV PUT and a consistent GET at the leader; the leader as it names itself every ~0.5 s. */
function startProbe(c: Cluster, leader: ServerSpec): Probe {
  const agent = new LeanAgent({ host: leader.addr, port: leader.http }, 1);
  const p: Probe = { put: [], get: [], putRefused: 0, getRefused: 0, errors: 0, leaders: new Set(), stop: async () => {} };
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const t0 = performance.now();
      try {
        const put = await agent.call("PUT", "/v1/kv/storm-probe", {}, Buffer.from(String(i)));
        const t1 = performance.now();
        if (put.status === 200) p.put.push(t1 - t0);
        else if (put.status === 429 || put.status === 503) p.putRefused++;
        else p.errors++;
        const get = await agent.call("GET", "/v1/kv/storm-probe?consistent", {});
        if (get.status === 200) p.get.push(performance.now() - t1);
        else if (get.status === 429 || get.status === 503) p.getRefused++;
        else p.errors++;
        if (i % 10 === 0) {
          const l = await agent.call("GET", "/v1/status/leader", {});
          if (l.status === 200) p.leaders.add(l.body.toString());
        }
      } catch {
        p.errors++;
      }
      const wait = probeEveryMs - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  p.stop = async () => {
    running = false;
    await loop;
    agent.destroy();
  };
  return p;
}

async function storm(c: Cluster): Promise<{ ms: number; done: number; refused: number; errors: number; timedOut: boolean }> {
  // One lean agent per server; the connections are spread over them in turn.
  const agents = c.servers.map((s) => new LeanAgent({ host: s.addr, port: s.http }, Math.ceil(conns / c.servers.length)));
  let next = 0;
  let done = 0;
  let refused = 0;
  let errors = 0;
  const t0 = performance.now();
  const deadline = t0 + maxMs;
  let lastReport = t0;
  await Promise.all(Array.from({ length: conns }, async (_, w) => {
    const agent = agents[w % agents.length]!;
    while (next < nodeCount && performance.now() < deadline) {
      const i = next++;
      const body = registration(i);
      for (;;) {
        let r: LeanReply | undefined;
        try {
          r = await agent.call("PUT", "/v1/catalog/register", { "Content-Type": "application/json" }, body);
        } catch {
          errors++;
        }
        if (r?.status === 200) {
          done++;
          break;
        }
        if (r && r.status !== 429 && r.status !== 503) errors++;
        else if (r) refused++;
        if (performance.now() >= deadline) break;
        // The agent's next sync: a jittered wait (Math.random is fine in a bench script).
        await new Promise((res) => setTimeout(res, retryMs * (0.5 + Math.random())));
      }
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        console.log(`  … ${done} registered, ${refused} refused so far (${load()})`);
      }
    }
  }));
  for (const a of agents) a.destroy();
  return { ms: performance.now() - t0, done, refused, errors, timedOut: done < nodeCount };
}

async function runMode(mode: string): Promise<void> {
  const requestLimits = mode === "enforcing" ? { mode: "enforcing", write_rate: writeRate } : { mode: "disabled" };
  const c = await makeCluster(3, { prefix: "cairn-bench-storm-", config: { limits: { http_max_conns_per_client: 0, request_limits: requestLimits } } });
  try {
    for (const s of c.servers) c.start(s);
    const leader = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
    const pid = leader.proc?.pid;
    // Let the leader's first reconcile and the servers' own syncs settle.
    await new Promise((r) => setTimeout(r, 2_000));
    const term0 = await raftTerm(c, leader);
    const f = (x: number): string => x.toFixed(1);
    const cpuB = cpuMs(pid);
    const quiet = startProbe(c, leader);
    await new Promise((r) => setTimeout(r, baselineMs));
    await quiet.stop();
    const cpuBase = cpuMs(pid) - cpuB;
    const qput = quiet.put.sort((a, b) => a - b);
    const qget = quiet.get.sort((a, b) => a - b);
    const what = mode === "enforcing" ? `request_limits enforcing, write_rate ${writeRate}/s (burst ${writeRate * 10})` : "request_limits disabled";
    console.log(`# ${what}: 3 servers, leader ${leader.name}; ${nodeCount} registrations over ${conns} connections; ${load()}`);
    console.log(`  before the storm, the probe alone for ${baselineMs / 1000} s: KV PUT p50 ${f(pct(qput, 50))} ms, p99 ${f(pct(qput, 99))} ms (${qput.length} ok); consistent GET p50 ${f(pct(qget, 50))} ms, p99 ${f(pct(qget, 99))} ms; leader CPU ${((cpuBase / baselineMs) * 100).toFixed(0)} % of one core`);
    const cpu0 = cpuMs(pid);
    const probe = startProbe(c, leader);
    const s = await storm(c);
    const cpu = cpuMs(pid) - cpu0;
    await probe.stop();
    const mem = rssMiB(pid);
    // Every 200 is a commit on the leader; the consistent read confirms they are all there.
    const nodes = (await getJson(c.url(leader, "/v1/catalog/nodes?consistent"), 30_000)) as unknown[] | undefined;
    const stormNodes = nodes?.filter((n) => String((n as { Node?: unknown }).Node).startsWith("storm-")).length ?? NaN;
    const term1 = await raftTerm(c, leader);
    const put = probe.put.sort((a, b) => a - b);
    const get = probe.get.sort((a, b) => a - b);
    console.log(`${what}: ${s.done}/${nodeCount} registered in ${(s.ms / 1000).toFixed(1)} s${s.timedOut ? " (stopped at the time bound)" : ""} = ${(s.done / (s.ms / 1000)).toFixed(0)}/s, in the catalog ${stormNodes}; refused and sent again ${s.refused}, errors ${s.errors}; ${load()}`);
    console.log(`  probe (every ${probeEveryMs} ms at the leader): KV PUT p50 ${f(pct(put, 50))} ms, p99 ${f(pct(put, 99))} ms, max ${f(put.at(-1) ?? NaN)} ms (${put.length} ok, ${probe.putRefused} refused); consistent GET p50 ${f(pct(get, 50))} ms, p99 ${f(pct(get, 99))} ms, max ${f(get.at(-1) ?? NaN)} ms (${get.length} ok, ${probe.getRefused} refused); other errors ${probe.errors}`);
    console.log(`  leadership: term ${term0} → ${term1}, leaders seen ${[...probe.leaders].join(", ")}; leader CPU ${cpu.toFixed(0)} ms during the storm (${((cpu / s.ms) * 100).toFixed(0)} % of one core; ${((cpu * 1000) / Math.max(1, s.done)).toFixed(0)} µs per registration, the probe's and refusals' share included), RSS ${mem.rss.toFixed(0)} MiB (peak ${mem.hwm.toFixed(0)} MiB)`);
  } finally {
    await c.stopAll();
    c.root.remove();
  }
}

for (const mode of modes) await runMode(mode);
