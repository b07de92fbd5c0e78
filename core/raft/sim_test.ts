// Deterministic simulation of a 3-server cluster under loss, delay,
// reordering, duplication, partitions, crashes that lose unsynced writes,
// restarts and leadership transfers, with a client writing and reading
// (`?consistent` and lease reads). Checked: election safety, log matching,
// state-machine safety, leader completeness / no acknowledged write lost,
// and no stale consistent read. SIM_SEED=n replays one seed; SIM_SEEDS=n
// widens the sweep (scripts/sim_sweep.ts runs long sweeps).
import { test } from "node:test";
import assert from "node:assert/strict";
import { seeds } from "../sim/rng.ts";
import { runScenario } from "./_sim_cluster.ts";

test("raft sim: 3 servers keep every safety property under faults", async () => {
  for (const seed of seeds(500)) {
    const { error } = await runScenario({ seed, servers: 3 });
    assert.equal(error, undefined, error);
  }
});
