// Autopilot over real Raft nodes in the deterministic simulation
// (core/raft/_sim_cluster.ts): the leader's Autopilot reads each node's
// progress and last contact, a fake gossip pool says who is alive, and the
// loop applies its actions as the leader duty does. A non-voter is promoted
// only after server_stabilization_time; a crashed voter is removed once
// gossip calls it failed; min_quorum stops the cleanup. SIM_SEED=n replays.
import assert from "node:assert/strict";
import { test } from "node:test";
import { SimCluster } from "../../raft/_sim_cluster.ts";
import type { SimServer } from "../../raft/_sim_cluster.ts";
import { seeds } from "../../sim/rng.ts";
import type { AutopilotSettings } from "../../state/autopilot.ts";
import { StateStore } from "../../state/store.ts";
import { Autopilot } from "./autopilot.ts";
import type { LanPoolLike, MemberLike } from "./membership.ts";

const settings: AutopilotSettings = { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 3, serverStabilizationTimeMs: 2_000 };

test("autopilot sim: promotion after stabilisation, dead server cleanup down to min_quorum", async () => {
  for (const seed of seeds(10)) {
    const c = new SimCluster({ seed, servers: 5, initialVoters: 3 });
    await c.start();
    const failed = new Set<string>();
    const lan: LanPoolLike = {
      members: () => c.servers.map((s): MemberLike => ({ name: s.id, addr: s.id, port: 8301, tags: { role: "consul", id: s.id, port: "8300", dc: "dc1" }, status: failed.has(s.id) ? "failed" : "alive" })),
      onMemberEvent: () => () => {},
    };
    const state = new StateStore();
    const pilots = new Map<SimServer, Autopilot>(
      c.servers.map((s) => [s, new Autopilot({ raft: () => (s.crashed ? undefined : s.node), lan: () => lan, state: () => state, initial: settings, clock: c.clock, nodeName: s.id })]),
    );
    const voters = () => c.leader()?.node!.configuration().servers.filter((x) => x.suffrage === "voter").map((x) => x.id).sort() ?? [];
    const members = () => c.leader()?.node!.configuration().servers.map((x) => x.id).sort() ?? [];
    const promotedAt = new Map<string, number>();
    // The leader duty: one action at a time, every 100 ms of virtual time.
    let busy = false;
    const duty = (): void => {
      const l = c.leader();
      if (l && !busy) {
        const action = pilots.get(l)!.nextAction();
        if (action) {
          busy = true;
          const done = action.op === "promote" ? l.node!.addVoter(action.id, action.address) : l.node!.removeServer(action.id);
          if (action.op === "promote") promotedAt.set(action.id, c.clock.now());
          done.then(() => {}, () => {}).finally(() => {
            busy = false;
          });
        }
      }
      c.clock.setTimer(100, duty);
    };
    c.clock.setTimer(100, duty);
    await c.run(2_000);
    assert.ok(c.leader(), `seed ${seed}: a leader`);

    // s4 joins as a non-voter: promoted, but not before the stabilisation time.
    const addedAt = c.clock.now();
    c.leader()!.node!.addNonvoter("s4", "s4").catch(() => {});
    await c.run(1_000);
    assert.deepEqual(voters(), ["s1", "s2", "s3"], `seed ${seed}: s4 still a non-voter after 1 s`);
    await c.run(3_000);
    assert.deepEqual(voters(), ["s1", "s2", "s3", "s4"], `seed ${seed}: s4 promoted`);
    assert.ok(promotedAt.get("s4")! - addedAt >= settings.serverStabilizationTimeMs, `seed ${seed}: promoted after ${promotedAt.get("s4")! - addedAt} ms`);

    // A follower dies for good and gossip calls it failed: removed (4 voters → 3).
    const victim = c.servers.find((s) => s !== c.leader() && s.id !== "s5" && voters().includes(s.id))!;
    await c.crash(victim);
    await c.run(1_000);
    assert.ok(members().includes(victim.id), `seed ${seed}: not removed while gossip still says alive`);
    failed.add(victim.id);
    await c.run(2_000);
    assert.ok(!members().includes(victim.id), `seed ${seed}: ${victim.id} removed: ${members().join(",")}`);
    assert.equal(voters().length, 3);

    // A second death: min_quorum 3 keeps it in the configuration; the two left still commit.
    const second = c.servers.find((s) => s !== c.leader() && voters().includes(s.id))!;
    await c.crash(second);
    failed.add(second.id);
    await c.run(3_000);
    assert.ok(members().includes(second.id), `seed ${seed}: min_quorum keeps ${second.id}`);
    const health = pilots.get(c.leader()!)!.health()!;
    assert.equal(health.healthy, false);
    assert.equal(health.failureTolerance, 0);
    assert.equal(health.servers.find((s) => s.id === second.id)?.healthy, false);
    await c.stopAll();
  }
});
