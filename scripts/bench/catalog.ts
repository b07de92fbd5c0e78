// Catalog benchmark of a dev agent: `node --import tsx scripts/bench/catalog.ts`.
// Starts `dist/cairn agent -dev` on free ports (or uses CAIRN_BENCH_HTTP_ADDR),
// registers 10,000 service instances across 100 nodes through
// /v1/catalog/register (100 services × 100 nodes, each instance with a passing
// check), measures GET /v1/health/service/<name>?passing throughput at 1 and 16
// keep-alive connections, then parks 1,000 blocking watchers on one service
// (?passing&index=N&wait=60s): a registration of another service should wake
// none, a registration of the watched service must wake all; the time until
// the last one has its answer is reported.
// CAIRN_BENCH_SECONDS (default 3) sets each GET phase's length,
// CAIRN_BENCH_WATCHERS (default 1000) the number of watchers.
import { Agent } from "node:http";
import { type FanoutResult, type GetPhaseResult, healthGetPhase, watcherFanout } from "./_catalog.ts";
import { httpCall as sharedHttpCall, type Reply } from "./_http.ts";
import { devAgentAt } from "../e2e/harness.ts";

/** `limits.http_max_conns_per_client` off: the watcher phases open more connections than the default allows. */
const noConnLimit = "-hcl=limits { http_max_conns_per_client = 0 }";

const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 3);
const watchers = Number(process.env.CAIRN_BENCH_WATCHERS ?? 1_000);
const nodeCount = 100;
const serviceCount = 100;

let host = "127.0.0.1";
let port = 0;

function httpCall(agent: Agent, method: string, path: string, body?: string): Promise<Reply> {
  return sharedHttpCall({ host, port }, agent, method, path, body);
}

function registration(node: number, svc: number): string {
  const name = `svc-${svc}`;
  const id = `${name}-${node}`;
  return JSON.stringify({
    Node: `node-${node}`,
    Address: `10.0.${Math.floor(node / 250)}.${(node % 250) + 1}`,
    Service: { ID: id, Service: name, Port: 8000 + svc, Tags: ["bench", `n${node % 4}`] },
    Check: { CheckID: `chk-${id}`, Name: `check ${id}`, ServiceID: id, Status: "passing" },
  });
}

async function register(): Promise<{ count: number; ms: number; errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 });
  const jobs: Array<[number, number]> = [];
  for (let n = 0; n < nodeCount; n++) for (let s = 0; s < serviceCount; s++) jobs.push([n, s]);
  let next = 0;
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (next < jobs.length) {
      const [n, s] = jobs[next++]!;
      const r = await httpCall(agent, "PUT", "/v1/catalog/register", registration(n, s));
      if (r.status !== 200) errors++;
    }
  }));
  const ms = performance.now() - t0;
  agent.destroy();
  return { count: jobs.length, ms, errors };
}

async function getPhase(conns: number): Promise<GetPhaseResult & { conns: number }> {
  return { conns, ...(await healthGetPhase({ host, port }, { conns, seconds, services: serviceCount })) };
}

function fanout(): Promise<FanoutResult> {
  // Let every watcher reach the agent (connect + request parsed), then write another service.
  return watcherFanout({ host, port }, {
    watchers,
    wait: "60s",
    connectMs: 15_000,
    settleMs: 1_000,
    answerMs: 30_000,
    other: registration(nodeCount + 1, 1),
    watched: registration(nodeCount + 1, 0),
  });
}

async function main(): Promise<void> {
  // A thousand watchers come from one client address: lift Consul's per-client connection limit (200).
  const target = await devAgentAt(process.env.CAIRN_BENCH_HTTP_ADDR, { args: [noConnLimit] });
  ({ host, port } = target);
  try {
    console.log(`# catalog benchmark against ${host}:${port}`);
    const reg = await register();
    console.log(`registered ${reg.count} instances (${serviceCount} services × ${nodeCount} nodes) in ${(reg.ms / 1000).toFixed(2)} s = ${(reg.count / (reg.ms / 1000)).toFixed(0)} registrations/s, 32 connections, errors ${reg.errors}`);
    console.log("");
    console.log(`# GET /v1/health/service/<name>?passing (${serviceCount} instances per answer), ${seconds} s per row`);
    console.log("| conns | requests | req/s | p50 ms | p99 ms | errors |");
    console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const c of [1, 16]) {
      const g = await getPhase(c);
      console.log(`| ${g.conns} | ${g.ops} | ${g.perSec.toFixed(0)} | ${g.p50.toFixed(2)} | ${g.p99.toFixed(2)} | ${g.errors} |`);
      if (g.entries !== serviceCount) console.log(`(warning: an answer had ${g.entries} entries, want ${serviceCount})`);
    }
    console.log("");
    console.log(`# ${watchers} blocking watchers of svc-0 (?passing&index=N&wait=60s)`);
    const f = await fanout();
    console.log("| watchers | connected | woken by another service | answered after registration | all answered ms | p50 ms | p99 ms | errors |");
    console.log("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    console.log(`| ${watchers} | ${f.connected} | ${f.wokenByOther} | ${f.answered} | ${f.allMs.toFixed(0)} | ${f.p50.toFixed(0)} | ${f.p99.toFixed(0)} | ${f.errors} |`);
  } finally {
    await target.agent?.stop();
  }
}

await main();
