// Gossip at scale in the deterministic simulation (issue #24): whole LAN
// pools of real Serf + memberlist cores (core/gossip/sim_pool.ts) on a
// simulated network losing BENCH_LOSS (5 %) of datagrams. For each pool size
// prints one row: the bootstrap (every member joins a random earlier one,
// 500 a second), then over BENCH_STEADY_S virtual seconds (default: one
// push/pull interval as scaled for the size, 150 s at 500 members) of steady
// gossip the bytes and datagrams each member sends per second and the false
// failures (members declared failed that were alive), then the virtual time
// for a new member's join, a killed member's failure and a graceful leave to
// reach every member. SWIM's promise is that the per-member columns stay flat
// (or grow with log n) as the pool grows.
//
// Usage: node --expose-gc --import tsx scripts/bench/gossip-sim.ts
//   BENCH_SIZES=500,1000,2000  BENCH_SEED=1  BENCH_LOSS=0.05  BENCH_STEADY_S=n
// Every member holds every other member (n² state in one process): the heap
// per member pair is printed so the largest size this machine holds can be
// read off.
import { loadavg } from "node:os";
import { PoolSim } from "../../core/gossip/sim_pool.ts";
import type { PoolSimResult } from "../../core/gossip/sim_pool.ts";

const sizes = (process.env.BENCH_SIZES ?? "500,1000,2000").split(",").map(Number);
const seed = Number(process.env.BENCH_SEED ?? 1);
const loss = Number(process.env.BENCH_LOSS ?? 0.05);
// Default: one push/pull interval as scaled for the size (every member push/pulls once in it).
const steadySeconds = process.env.BENCH_STEADY_S ? Number(process.env.BENCH_STEADY_S) : undefined;
const verbose = !!process.env.BENCH_TRACE;

function load(): string {
  return loadavg().map((x) => x.toFixed(2)).join(" ");
}

const s = (ms: number): string => (Number.isNaN(ms) ? "not reached" : (ms / 1000).toFixed(2));

console.log(`gossip sim: seed ${seed}, UDP loss ${(loss * 100).toFixed(0)} %, delay 1-10 ms, Consul tags, ` +
  `LAN profile, steady window ${steadySeconds ?? "one push/pull interval"} (virtual s); load ${load()}`);
console.log("| members | bootstrap s | join→all s | crash→first failed s | crash→all failed s | leave→all s | false failures | suspicions | window s | bytes/member/s | of which push/pull | datagrams/member/s | wall s | heap B/pair | load |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
const rows: PoolSimResult[] = [];
for (const n of sizes) {
  const sim = new PoolSim({ n, seed, loss, steadySeconds, progress: verbose ? (l) => console.error(l) : undefined });
  const r = sim.run();
  (globalThis as { gc?: () => void }).gc?.();
  const heap = process.memoryUsage().heapUsed;
  rows.push(r);
  console.log(`| ${n} | ${s(r.bootstrapMs)} | ${s(r.joinMs)} | ${s(r.detectMs)} | ${s(r.failMs)} | ${s(r.leaveMs)} | ` +
    `${r.falseFailures} | ${r.suspicions} | ${r.steadySeconds} | ${r.bytesPerNodeSec.toFixed(0)} | ${r.streamBytesPerNodeSec.toFixed(0)} | ${r.packetsPerNodeSec.toFixed(2)} | ` +
    `${(r.wallMs / 1000).toFixed(0)} | ${(heap / (n * n)).toFixed(0)} | ${load()} |`);
}
