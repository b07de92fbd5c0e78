// The pool simulation behind scripts/bench/gossip-sim.ts, at sizes a unit
// test affords: seeded and replayable (SIM_SEED=n), with bounds that fail
// when gossip stops scaling: every phase reaches every member, no live
// member is declared failed under 5 % loss, and a member's traffic does not
// grow with the pool (SWIM: constant probes per member, O(log n) spread).
import { test } from "node:test";
import assert from "node:assert/strict";
import { seeds } from "../sim/rng.ts";
import { lanProfile } from "./profiles.ts";
import { PoolSim } from "./sim_pool.ts";
import { suspicionTimeoutMs } from "./suspicion.ts";

test("pool sim: 40- and 160-member pools under 5 % loss: join, crash and leave reach everyone, no false failures, traffic per member flat", () => {
  for (const seed of seeds(2)) {
    const small = new PoolSim({ n: 40, seed, loss: 0.05, steadySeconds: 20, phaseLimitMs: 120_000 }).run();
    const large = new PoolSim({ n: 160, seed, loss: 0.05, steadySeconds: 20, phaseLimitMs: 120_000 }).run();
    for (const r of [small, large]) {
      const at = `n=${r.n} seed=${seed} (replay: SIM_SEED=${seed}): ${JSON.stringify(r)}`;
      for (const k of ["bootstrapMs", "joinMs", "detectMs", "failMs", "leaveMs"] as const) assert.ok(Number.isFinite(r[k]), `${k} not reached; ${at}`);
      assert.equal(r.falseFailures, 0, at);
      // A join and a leave are gossip: a few gossip rounds of log(n) hops, not seconds.
      assert.ok(r.joinMs <= 3_000, at);
      assert.ok(r.leaveMs <= 3_000, at);
      // A crash: the probe round to reach it (≤ n probe intervals, usually ~1), the probe, then the
      // suspicion timeout; then the dead message's gossip.
      assert.ok(r.detectMs >= suspicionTimeoutMs(r.n, lanProfile) - 10, at);
      assert.ok(r.failMs - r.detectMs <= 2_000, at);
      // One probe a second and its ack (plus indirect probes for lost packets): a few datagrams a second.
      assert.ok(r.packetsPerNodeSec >= 1.5 && r.packetsPerNodeSec <= 6, at);
    }
    // Datagrams per member do not grow with the pool (4x the members).
    assert.ok(large.packetsPerNodeSec <= small.packetsPerNodeSec * 1.3, `datagrams per member grew: ${small.packetsPerNodeSec} → ${large.packetsPerNodeSec}; seed=${seed}`);
  }
});
