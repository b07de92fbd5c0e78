import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError } from "../errors.ts";
import type { QueryOptions } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "./dev.ts";

const q: QueryOptions = { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: false };
const coord = (x: number) => ({ vec: [x, 0, 0, 0, 0, 0, 0, 0], error: 0.5, adjustment: 0, height: 0.00001 });

async function setup(coordinateUpdate = { updatePeriodMs: 5_000, batchSize: 2, maxBatches: 2 }) {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(7), coordinateUpdate });
  const h = d.server.handlers;
  for (const node of ["a", "b", "c", "d", "e", "f"]) await h["Catalog.Register"]({ node, address: "10.0.0.1" });
  return { clock, d, h };
}

test("Coordinate.Update: queued on the leader, applied with the next period's batch, then listed from the catalog", async () => {
  const { clock, d, h } = await setup();
  const before = d.fsm.lastIndex;
  await h["Coordinate.Update"]({ node: "a", coord: coord(0.001) });
  await h["Coordinate.Update"]({ node: "a", coord: coord(0.002) }); // the latest per node wins
  await h["Coordinate.Update"]({ node: "b", segment: "", coord: coord(0.003) });
  assert.equal(d.server.coordinateBatcher.pending, 2);
  assert.deepEqual((await h["Coordinate.ListNodes"]({ query: q })).coordinates, [], "nothing before the period ends");
  await clock.runFor(4_999);
  assert.equal(d.fsm.lastIndex, before, "no Raft write before the period");
  await clock.runFor(1);
  await drainMicrotasks();
  const list = await h["Coordinate.ListNodes"]({ query: q });
  assert.deepEqual(list.coordinates.map((c) => [c.node, c.coord.vec[0]]), [["a", 0.002], ["b", 0.003]]);
  assert.equal(d.fsm.lastIndex, before + 1, "one command for the batch");
  assert.equal(list.meta.index, d.fsm.lastIndex);
  const one = await h["Coordinate.Node"]({ node: "b", query: q });
  assert.deepEqual(one.coordinates.map((c) => c.node), ["b"]);
  assert.deepEqual((await h["Coordinate.Node"]({ node: "zz", query: q })).coordinates, []);
  await d.stop();
});

test("Coordinate.Update: batches of update_batch_size, at most update_max_batches a period; the rest are dropped", async () => {
  const { clock, d, h } = await setup();
  const before = d.fsm.lastIndex;
  for (const [i, node] of ["a", "b", "c", "d", "e", "f"].entries()) await h["Coordinate.Update"]({ node, coord: coord(i / 1000) });
  await clock.runFor(5_000);
  await drainMicrotasks();
  assert.equal(d.fsm.lastIndex, before + 2, "two batches of two");
  assert.equal((await h["Coordinate.ListNodes"]({ query: q })).coordinates.length, 4);
  assert.deepEqual(d.server.coordinateBatcher.stats, { batches: 2, applied: 4, discarded: 2 });
  await d.stop();
});

test("Coordinate.Update: refuses bad coordinates with Consul's words; a blocking list wakes on the batch", async () => {
  const { clock, d, h } = await setup();
  await assert.rejects(h["Coordinate.Update"]({ node: "a", coord: { ...coord(0), error: Number.NaN } }), (e) => e instanceof BadRequestError && e.message === "invalid coordinate");
  await assert.rejects(h["Coordinate.Update"]({ node: "a", coord: { ...coord(0), vec: [0, 0] } }), /incompatible coordinate/);
  await assert.rejects(h["Coordinate.Update"]({ node: "", coord: coord(0) }), /Must provide node/);
  await assert.rejects(h["Coordinate.Update"]({ node: "a", coord: "x" } as never), /Invalid arguments to "Coordinate.Update": "coord" must be an object/);
  const first = await h["Coordinate.ListNodes"]({ query: q });
  let woke: number | undefined;
  void h["Coordinate.ListNodes"]({ query: { ...q, minQueryIndex: first.meta.index, maxQueryTimeMs: 60_000 } }).then((r) => (woke = r.coordinates.length));
  await h["Coordinate.Update"]({ node: "c", coord: coord(0.5) });
  await clock.runFor(5_000);
  await drainMicrotasks();
  assert.equal(woke, 1);
  await d.stop();
});
