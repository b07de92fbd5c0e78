import { test } from "node:test";
import assert from "node:assert/strict";
import { Awareness } from "./awareness.ts";

test("Awareness: memberlist table (max 8)", () => {
  const a = new Awareness(8);
  const cases: [delta: number, score: number, timeoutMs: number][] = [
    [0, 0, 1000], [-1, 0, 1000], [-10, 0, 1000], [1, 1, 2000], [-1, 0, 1000], [10, 7, 8000],
    [-1, 6, 7000], [-1, 5, 6000], [-1, 4, 5000], [-1, 3, 4000], [-1, 2, 3000], [-1, 1, 2000],
    [-1, 0, 1000], [-1, 0, 1000],
  ];
  cases.forEach(([delta, score, timeout], i) => {
    a.applyDelta(delta);
    assert.equal(a.score, score, `step ${i}`);
    assert.equal(a.scaleTimeout(1000), timeout, `step ${i}`);
  });
});
