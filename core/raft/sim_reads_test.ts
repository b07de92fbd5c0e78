// Targeted simulation: a leader cut off from the majority must not serve a
// `?consistent` (ReadIndex) or lease read that misses a write the new leader
// acknowledged before the read began. SIM_SEED=n replays one seed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seeds } from "../sim/rng.ts";
import { SimCluster } from "./_sim_cluster.ts";

const enc = new TextEncoder();

test("raft sim: a partitioned old leader never serves a stale read", async () => {
  for (const seed of seeds(40)) {
    const c = new SimCluster({ seed, servers: 5 });
    await c.start();
    await c.clock.runUntil(() => c.leader() !== undefined, { maxMs: 5_000 });
    const old = c.leader()!;
    // Let it settle into its lease, then cut it (and one follower) off.
    await c.run(200);
    const others = c.servers.filter((s) => s !== old).map((s) => s.id);
    const buddy = c.rng.pick(others);
    c.net.partition([old.id, buddy], others.filter((x) => x !== buddy));
    await c.clock.runUntil(() => {
      const l = c.leader();
      return l !== undefined && l !== old && l.node!.core.term > old.node!.core.term;
    }, { maxMs: 10_000, what: `new leader (seed ${seed})` }).catch(() => {});
    const fresh = c.leader();
    assert.ok(fresh && fresh !== old, `seed ${seed}: the majority elected no new leader`);
    let acked = false;
    void fresh.node!.apply(enc.encode("after-partition")).then(() => { acked = true; });
    await c.clock.runUntil(() => acked, { maxMs: 5_000, what: `write on the new leader (seed ${seed})` });
    // Reads on the old leader, both kinds, begun after the write was acknowledged.
    const outcomes: string[] = [];
    for (const allowLease of [false, true]) {
      const applied = () => old.fsm.state.some(([, d]) => d === "after-partition");
      old.node!.readBarrier({ allowLease }).then(
        () => outcomes.push(applied() ? "fresh" : `STALE (lease=${allowLease})`),
        () => outcomes.push("refused"),
      );
    }
    await c.run(3_000);
    for (const o of outcomes) assert.ok(!o.startsWith("STALE"), `seed ${seed}: old leader served a stale read: ${o}\nreplay: SIM_SEED=${seed}`);
    assert.deepEqual(c.violations, [], `seed ${seed}`);
    await c.stopAll();
  }
});
