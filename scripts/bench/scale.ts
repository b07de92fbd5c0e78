// Catalog at scale (issue #24): `node --import tsx scripts/bench/scale.ts`.
// Starts `cairn agent -dev` (CAIRN_E2E_BIN, else dist/cairn; or uses
// CAIRN_BENCH_HTTP_ADDR), registers 100,000 service instances over 10,000
// nodes (10 instances per node, 1,000 services of 100 instances, each
// instance with a passing check, each node with a passing node-level check)
// through /v1/catalog/register, and prints:
//   - the agent's RSS once they are in (target ≤ 1 GiB),
//   - GET /v1/health/service/<name>?passing (100 instances per answer) at 16
//     keep-alive connections (target ≥ 4,000 req/s): "hot", round-robin over
//     100 services (load balancers and scrapes asking again and again), and
//     "wide", round-robin over all 1,000 services (each answer is built on
//     its first request, then reused while nothing changes),
//   - 10,000 blocking watchers of one service: a registration of another
//     service must wake none, one of the watched service must wake all, and
//     the time until the last has its answer (target ≤ 1 s).
// Every figure is printed with the machine's load average at the time.
// CAIRN_BENCH_NODES (10000), CAIRN_BENCH_PER_NODE (10), CAIRN_BENCH_SECONDS (5),
// CAIRN_BENCH_WATCHERS (10000), CAIRN_BENCH_CONNS (16), CAIRN_BENCH_HOT (100)
// change the sizes. CAIRN_BENCH_GZIP=1 asks for gzipped answers, as Go's HTTP
// client (Consul's API client, consul-template) does. CAIRN_BENCH_CLUSTER=1: three servers instead of a dev
// agent; everything goes to the leader's HTTP port and RSS is the leader's.
import { Agent } from "node:http";
import { type FanoutResult, type GetPhaseResult, healthGetPhase, watcherFanout } from "./_catalog.ts";
import { httpCall as sharedHttpCall, type Reply } from "./_http.ts";
import { devAgentAt, makeCluster, waitForLeader } from "../e2e/harness.ts";
import { load, rssMiB, cpuMs } from "./_proc.ts";

const nodeCount = Number(process.env.CAIRN_BENCH_NODES ?? 10_000);
const perNode = Number(process.env.CAIRN_BENCH_PER_NODE ?? 10);
const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 5);
const watchers = Number(process.env.CAIRN_BENCH_WATCHERS ?? 10_000);
const conns = Number(process.env.CAIRN_BENCH_CONNS ?? 16);
/** Services the hot GET phase cycles through. */
const hot = Number(process.env.CAIRN_BENCH_HOT ?? 100);
/** Ask for gzipped answers (CAIRN_BENCH_GZIP=1), as Go's HTTP client (Consul's API client, consul-template) does by default. */
const gzip = process.env.CAIRN_BENCH_GZIP === "1";
/** 100 instances per service: nodeCount * perNode / 100 services. */
const instancesPerService = 100;
const serviceCount = Math.max(1, Math.floor((nodeCount * perNode) / instancesPerService));

let host = "127.0.0.1";
let port = 0;

function httpCall(agent: Agent, method: string, path: string, body?: string): Promise<Reply> {
  return sharedHttpCall({ host, port }, agent, method, path, body);
}

/**
 * Instance k (0..perNode-1) of node i runs service (i * perNode + k) % serviceCount:
 * every service gets instancesPerService instances, each on another node.
 */
function registration(node: number, k: number, svcOverride?: number): string {
  const svc = svcOverride ?? (node * perNode + k) % serviceCount;
  const name = `svc-${svc}`;
  const id = `${name}-${node}`;
  const checks: unknown[] = [{ CheckID: `chk-${id}`, Name: `check ${id}`, ServiceID: id, Status: "passing" }];
  // Not "serfHealth": the leader would reap nodes that are not serf members.
  if (k === 0) checks.push({ CheckID: "node-alive", Name: "node alive", Status: "passing" });
  return JSON.stringify({
    Node: `node-${node}`,
    Address: `10.${(node >> 16) & 255}.${(node >> 8) & 255}.${node & 255}`,
    Service: { ID: id, Service: name, Port: 8000 + (svc % 1000), Tags: ["bench", `k${k}`] },
    Checks: checks,
  });
}

async function register(): Promise<{ count: number; ms: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const total = nodeCount * perNode;
  let next = 0;
  let errors = 0;
  let lastReport = performance.now();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < total) {
      const j = next++;
      const r = await httpCall(agent, "PUT", "/v1/catalog/register", registration(Math.floor(j / perNode), j % perNode));
      if (r.status !== 200) errors++;
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        console.log(`  … ${j} registered (${load()})`);
      }
    }
  }));
  const ms = performance.now() - t0;
  agent.destroy();
  return { count: total, ms, errors };
}

function getPhase(cycle: number): Promise<GetPhaseResult> {
  return healthGetPhase({ host, port }, { conns, seconds, services: cycle, gzip });
}

function fanout(pid: number | undefined): Promise<FanoutResult> {
  return watcherFanout({ host, port }, {
    watchers,
    wait: "120s",
    connectMs: 60_000,
    settleMs: 3_000,
    answerMs: 60_000,
    other: registration(nodeCount + 1, 0, 1),
    watched: registration(nodeCount + 1, 1, 0),
    gzip,
    serverCpuMs: () => cpuMs(pid),
  });
}

async function startTarget(): Promise<{ pid?: number; what: string; stop(): Promise<void> }> {
  if (process.env.CAIRN_BENCH_CLUSTER === "1") {
    const cluster = await makeCluster(3, { prefix: "cairn-bench-scale-", config: { limits: { http_max_conns_per_client: 0 } } });
    for (const s of cluster.servers) cluster.start(s);
    const leader = await waitForLeader(cluster, cluster.servers, { timeoutMs: 60_000 });
    host = leader.addr;
    port = leader.http;
    return { pid: leader.proc?.pid, what: `3 servers, leader ${leader.name}`, stop: () => cluster.stopAll() };
  }
  const target = await devAgentAt(process.env.CAIRN_BENCH_HTTP_ADDR, { args: ["-hcl=limits { http_max_conns_per_client = 0 }"] });
  ({ host, port } = target);
  return { pid: target.agent?.proc.pid, what: "dev agent", stop: async () => { await target.agent?.stop(); } };
}

async function main(): Promise<void> {
  const target = await startTarget();
  const pid = target.pid;
  try {
    console.log(`# scale benchmark against ${target.what} at ${host}:${port} (${process.env.CAIRN_E2E_BIN ?? "dist/cairn"}), answers ${gzip ? "gzipped (Accept-Encoding: gzip)" : "plain"}, ${load()}`);
    const empty = rssMiB(pid);
    const reg = await register();
    console.log(`registered ${reg.count} instances (${serviceCount} services × ${instancesPerService}) over ${nodeCount} nodes in ${(reg.ms / 1000).toFixed(1)} s = ${(reg.count / (reg.ms / 1000)).toFixed(0)}/s, errors ${reg.errors}; ${load()}`);
    const held = rssMiB(pid);
    console.log(`agent RSS: ${empty.rss.toFixed(0)} MiB empty, ${held.rss.toFixed(0)} MiB holding them (peak ${held.hwm.toFixed(0)} MiB); target ≤ 1024 MiB`);
    for (const [what, cycle] of [[`hot (${Math.min(hot, serviceCount)} services)`, Math.min(hot, serviceCount)], [`wide (${serviceCount} services)`, serviceCount]] as const) {
      const cpu0 = cpuMs(pid);
      const g = await getPhase(cycle);
      // The server's CPU per answer holds better than req/s on a machine shared with other work.
      const perReq = ((cpuMs(pid) - cpu0) * 1000) / g.ops;
      console.log(`GET /v1/health/service/<name>?passing ${what}, ${g.entries} instances per answer, ${conns} conns, ${seconds} s: ${g.perSec.toFixed(0)} req/s, p50 ${g.p50.toFixed(2)} ms, p99 ${g.p99.toFixed(2)} ms, errors ${g.errors}; server CPU ${perReq.toFixed(0)} µs per answer; ${load()}; target ≥ 4,000 req/s`);
    }
    const f = await fanout(pid);
    console.log(`${watchers} watchers of svc-0 (${f.entries} instances, ${(f.bytes / 1024).toFixed(0)} KiB per answer): connected ${f.connected}, woken by another service ${f.wokenByOther}, answered ${f.answered}, all answered in ${f.allMs.toFixed(0)} ms (p50 ${f.p50.toFixed(0)}, p99 ${f.p99.toFixed(0)}), errors ${f.errors}; CPU meanwhile: server ${f.serverCpuMs.toFixed(0)} ms, this client ${f.clientCpuMs.toFixed(0)} ms; ${load()}; target ≤ 1,000 ms`);
    const after = rssMiB(pid);
    console.log(`agent RSS at the end: ${after.rss.toFixed(0)} MiB (peak ${after.hwm.toFixed(0)} MiB)`);
  } finally {
    await target.stop();
  }
}

await main();
