// Cross-datacenter benchmark (not a test): `node --import tsx scripts/bench/multi-dc.ts`.
// Two datacenters on loopback (dc1: 3 servers and client c1; dc2: 1 server
// and client c2; joined by one `join -wan`), built from dist/cairn or
// CAIRN_E2E_BIN. All load goes to c1 over keep-alive HTTP at 16 connections:
// GET and PUT of dc1's keys (c1 → a dc1 server → dc1's leader) against the
// same for dc2's keys with ?dc=dc2 (c1 → a dc1 server → over the WAN RPC pool
// → dc2's server), in the same run. A default read or a write in dc1 goes on
// to dc1's leader (2 of 3 times from a follower) and a write commits on 3
// servers, where dc2's one server is its leader: GET ?stale, answered by
// whichever server gets it, shows the cost of the WAN hop alone. Each phase alternates local and cross in
// CAIRN_BENCH_ROUNDS (default 4) slices, ABBA, so a shared machine's load
// falls on both alike. Prints ops/s, p50 and p99 of each, and cross against
// local: the target on loopback is p50 within 0.5 ms and throughput at least
// 70 % of local. CAIRN_BENCH_SECONDS (default 4) is each phase's length;
// CAIRN_BENCH_WARMUP_SECONDS (default 1) of uncounted operations of each kind
// come first.
import { Agent } from "node:http";
import { startTwoDcs } from "../e2e/_two_dcs.ts";
import { until } from "../../core/testing/until.ts";
import { httpCall } from "./_http.ts";
import { type LoadResult, type Op, slice, Tally } from "./_load.ts";

const seconds = Number(process.env.CAIRN_BENCH_SECONDS ?? 4);
const warmupSeconds = Number(process.env.CAIRN_BENCH_WARMUP_SECONDS ?? 1);
const rounds = Math.max(1, Math.floor(Number(process.env.CAIRN_BENCH_ROUNDS ?? 4)));
const conns = 16;
const keyCount = 1_000;
const value = Buffer.alloc(64, "v");

const fmt = (r: LoadResult) =>
  `${r.opsPerSec.toFixed(0).padStart(6)} ops/s  p50 ${r.p50Ms.toFixed(2).padStart(6)} ms  p99 ${r.p99Ms.toFixed(2).padStart(7)} ms${r.errors ? `  errors ${r.errors}` : ""}`;

async function main(): Promise<void> {
  const t = await startTwoDcs();
  try {
    const c1 = { host: "127.0.0.1", port: t.c1.httpPort };
    // Both datacenters known at c1's servers, and a write across works, before measuring.
    await until(async () => (await httpCall(c1, new Agent(), "PUT", "/v1/kv/bench/probe?dc=dc2", "x")).status === 200, "a write to dc2 through c1", { timeoutMs: 60_000 });
    const setup = new Agent({ keepAlive: true, maxSockets: conns });
    for (const dc of ["", "?dc=dc2"]) {
      for (let k = 0; k < keyCount; k += conns) {
        await Promise.all(Array.from({ length: conns }, (_, j) => httpCall(c1, setup, "PUT", `/v1/kv/bench/k${k + j}${dc}`, value)));
      }
    }
    setup.destroy();
    const get = (q: string): Op => async (agent, i) => (await httpCall(c1, agent, "GET", `/v1/kv/bench/k${i % keyCount}${q}`)).status === 200;
    const put = (dc: string): Op => async (agent, i) => (await httpCall(c1, agent, "PUT", `/v1/kv/bench/k${i % keyCount}${dc}`, value)).status === 200;
    const phases: Array<{ label: string; local: Op; cross: Op }> = [
      { label: "GET", local: get(""), cross: get("?dc=dc2") },
      // Any server answers a stale read: local is one hop (client → a dc1 server), cross exactly one more (→ dc2's server).
      { label: "GET ?stale", local: get("?stale"), cross: get("?stale&dc=dc2") },
      { label: "PUT", local: put(""), cross: put("?dc=dc2") },
    ];
    console.log(`multi-dc: load at c1 (a dc1 client), ${conns} connections, ${seconds} s per phase in ${rounds} interleaved slices`);
    for (const ph of phases) {
      if (warmupSeconds > 0) {
        for (const op of [ph.local, ph.cross]) {
          const warm = new Tally(conns);
          await slice(warm, op, warmupSeconds / 2);
          warm.agent.destroy();
        }
      }
      const local = new Tally(conns);
      const cross = new Tally(conns);
      for (let r = 0; r < rounds; r++) {
        const order = r % 2 === 0 ? [local, cross] : [cross, local];
        for (const tally of order) await slice(tally, tally === local ? ph.local : ph.cross, seconds / rounds);
      }
      const l = local.result();
      const c = cross.result();
      console.log(`  ${ph.label.padEnd(10)} dc1 data         ${fmt(l)}`);
      console.log(`  ${ph.label.padEnd(10)} dc2 data (?dc)   ${fmt(c)}`);
      console.log(`  ${ph.label.padEnd(10)} cross vs local: p50 ${(c.p50Ms - l.p50Ms >= 0 ? "+" : "")}${(c.p50Ms - l.p50Ms).toFixed(2)} ms, throughput ${((100 * c.opsPerSec) / l.opsPerSec).toFixed(0)} %`);
    }
  } finally {
    await t.stop();
  }
}

await main();
