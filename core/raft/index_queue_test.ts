import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng } from "../sim/rng.ts";
import { IndexQueue } from "./index_queue.ts";

test("keeps values by index in order, like a sorted Map", () => {
  const q = new IndexQueue<string>();
  q.set(5, "a");
  q.set(6, "b");
  q.set(9, "c");
  assert.equal(q.size, 3);
  assert.equal(q.get(6), "b");
  assert.equal(q.get(7), undefined);
  assert.equal(q.has(9), true);
  assert.deepEqual(q.entries(), [[5, "a"], [6, "b"], [9, "c"]]);
  assert.equal(q.firstKey(), 5);
  assert.equal(q.lastKey(), 9);
  assert.equal(q.delete(6), true);
  assert.equal(q.delete(6), false);
  assert.deepEqual(q.values(), ["a", "c"]);
  assert.equal(q.shift(), "a");
  assert.equal(q.firstKey(), 9);
  q.clear();
  assert.equal(q.size, 0);
  assert.equal(q.firstKey(), undefined);
});

test("out-of-order and repeated indices behave as a Map would", () => {
  const q = new IndexQueue<string>();
  q.set(10, "x");
  q.set(3, "y");
  q.set(7, "z");
  q.set(10, "x2");
  assert.deepEqual(q.entries(), [[3, "y"], [7, "z"], [10, "x2"]]);
  q.delete(7);
  q.set(7, "z2");
  assert.deepEqual(q.entries(), [[3, "y"], [7, "z2"], [10, "x2"]]);
  assert.equal(q.size, 3);
});

test("deleteUpTo and deleteFrom cut at either end", () => {
  const q = new IndexQueue<number>();
  for (let i = 1; i <= 20; i++) q.set(i, i * 10);
  q.deleteUpTo(5);
  q.deleteFrom(16);
  assert.equal(q.firstKey(), 6);
  assert.equal(q.lastKey(), 15);
  assert.equal(q.size, 10);
  q.set(16, 1);
  assert.equal(q.lastKey(), 16);
});

test("a steady stream of adds and removals reuses the same buffer", () => {
  const q = new IndexQueue<{ i: number }>(8);
  for (let i = 1; i <= 10_000; i++) {
    q.set(i, { i });
    if (i > 5) assert.equal(q.shift()!.i, i - 5);
  }
  assert.equal(q.size, 5);
  assert.equal(q.capacity, 8);
  // Removing from the middle, then the front, still frees the slots.
  for (let i = 10_001; i <= 20_000; i++) {
    q.set(i, { i });
    q.delete(i - 2);
    q.deleteUpTo(i - 4);
  }
  assert.equal(q.capacity, 8);
});

test("random operations match a Map kept in key order", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const rng = new Rng(seed);
    const q = new IndexQueue<number>(8);
    const m = new Map<number, number>();
    let next = 1;
    for (let step = 0; step < 300; step++) {
      const r = rng.int(100);
      if (r < 45) {
        const k = rng.int(10) === 0 ? 1 + rng.int(next + 3) : next++;
        q.set(k, step);
        m.set(k, step);
      } else if (r < 65) {
        const k = 1 + rng.int(next + 1);
        assert.equal(q.delete(k), m.delete(k), `seed ${seed} step ${step} delete ${k}`);
      } else if (r < 75) {
        const first = [...m.keys()].sort((a, b) => a - b)[0];
        const v = q.shift();
        assert.equal(v, first === undefined ? undefined : m.get(first), `seed ${seed} step ${step} shift`);
        if (first !== undefined) m.delete(first);
      } else if (r < 82) {
        const k = 1 + rng.int(next + 1);
        q.deleteUpTo(k);
        for (const key of [...m.keys()]) if (key <= k) m.delete(key);
      } else if (r < 88) {
        const k = 1 + rng.int(next + 1);
        q.deleteFrom(k);
        for (const key of [...m.keys()]) if (key >= k) m.delete(key);
      } else if (r < 90) {
        q.clear();
        m.clear();
      } else {
        const k = 1 + rng.int(next + 1);
        assert.equal(q.get(k), m.get(k), `seed ${seed} step ${step} get ${k}`);
      }
      const want = [...m.entries()].sort((a, b) => a[0] - b[0]);
      assert.deepEqual(q.entries(), want, `seed ${seed} step ${step}`);
      assert.equal(q.size, m.size);
      assert.equal(q.firstKey(), want[0]?.[0]);
      assert.equal(q.lastKey(), want.at(-1)?.[0]);
    }
  }
});
