// The simulation of sim_test.ts while the configuration changes one server
// at a time: 3 voters grow to 5 (new servers start empty and catch up by
// snapshot; some join as non-voters and are promoted later, as autopilot
// adds them) and voters are removed, under the same faults. SIM_SEED=n replays.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seeds } from "../sim/rng.ts";
import { runScenario } from "./_sim_cluster.ts";

test("raft sim: single-server membership changes keep every safety property", async () => {
  for (const seed of seeds(200)) {
    const { error } = await runScenario({ seed, servers: 5, initialVoters: 3, membership: true });
    assert.equal(error, undefined, error);
  }
});
