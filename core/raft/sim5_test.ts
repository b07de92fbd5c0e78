// The simulation of sim_test.ts with 5 servers (see there). SIM_SEED=n replays.
import { test } from "node:test";
import assert from "node:assert/strict";
import { seeds } from "../sim/rng.ts";
import { runScenario } from "./_sim_cluster.ts";

test("raft sim: 5 servers keep every safety property under faults", async () => {
  for (const seed of seeds(300)) {
    const { error } = await runScenario({ seed, servers: 5 });
    assert.equal(error, undefined, error);
  }
});
