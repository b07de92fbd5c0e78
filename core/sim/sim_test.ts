import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng, seeds } from "./rng.ts";
import { SimClock } from "./sim_clock.ts";
import { SimNetwork } from "./sim_network.ts";

test("rng: same seed, same sequence; different seed, different sequence", () => {
  const a = new Rng(42), b = new Rng(42), c = new Rng(43);
  const xs = Array.from({ length: 8 }, () => a.uint32());
  assert.deepEqual(xs, Array.from({ length: 8 }, () => b.uint32()));
  assert.notDeepEqual(xs, Array.from({ length: 8 }, () => c.uint32()));
  for (let i = 0; i < 1000; i++) {
    const v = a.int(7);
    assert.ok(v >= 0 && v < 7 && Number.isInteger(v));
  }
});

test("seeds: SIM_SEED replays one seed, SIM_SEEDS sets the count", () => {
  assert.deepEqual(seeds(3, {}), [1, 2, 3]);
  assert.deepEqual(seeds(3, { SIM_SEED: "77" }), [77]);
  assert.deepEqual(seeds(3, { SIM_SEEDS: "2", SIM_SEED_BASE: "10" }), [10, 11]);
});

test("sim clock: timers fire in time then insertion order; cancel works", () => {
  const clock = new SimClock();
  const fired: string[] = [];
  clock.setTimer(10, () => fired.push("b"));
  clock.setTimer(5, () => fired.push("a"));
  clock.setTimer(10, () => fired.push("c"));
  const t = clock.setTimer(7, () => fired.push("x"));
  t.cancel();
  clock.advance(9);
  assert.deepEqual(fired, ["a"]);
  assert.equal(clock.now(), 9);
  clock.advance(1);
  assert.deepEqual(fired, ["a", "b", "c"]);
});

test("sim clock: runUntil settles promise chains between timers", async () => {
  const clock = new SimClock();
  let done = false;
  clock.setTimer(100, async () => {
    await Promise.resolve();
    await Promise.resolve();
    done = true;
  });
  await clock.runUntil(() => done, { maxMs: 1000 });
  assert.equal(clock.now(), 100);
  await assert.rejects(clock.runUntil(() => false, { maxMs: 50, what: "never" }), /never/);
});

test("sim network: loss, partitions, heal, delay bounds", () => {
  const clock = new SimClock();
  const net = new SimNetwork<string>(clock, new Rng(1), { delayMs: [5, 20] });
  const got: Array<[string, string, number]> = [];
  for (const id of ["a", "b", "c"]) net.attach(id, (from, msg) => got.push([from, msg, clock.now()]));
  net.send("a", "b", "one");
  clock.advance(20);
  assert.equal(got.length, 1);
  assert.ok(got[0]![2] >= 5 && got[0]![2] <= 20);
  net.partition(["a"], ["b", "c"]);
  net.send("a", "b", "two");
  net.send("b", "c", "three");
  clock.advance(50);
  assert.deepEqual(got.slice(1).map((g) => g[1]), ["three"]);
  net.heal();
  net.setDefaults({ loss: 1 });
  net.send("a", "b", "lost");
  clock.advance(50);
  assert.equal(got.length, 2);
  assert.equal(net.stats.dropped, 2);
});
