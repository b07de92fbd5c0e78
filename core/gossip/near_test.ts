import { test } from "node:test";
import assert from "node:assert/strict";
import { sortNear } from "./near.ts";

const at = (x: number) => ({ vec: [x, 0, 0, 0, 0, 0, 0, 0], error: 1.5, adjustment: 0, height: 0.00001 });

test("near: rows sort by estimated RTT from the near node; unknown nodes go last in their order", () => {
  const coordinates = () => [
    { node: "a", coord: at(0) },
    { node: "b", coord: at(0.030) },
    { node: "c", coord: at(0.010) },
    { node: "d", coord: at(0.020) },
  ];
  const rows = ["x", "b", "d", "y", "c", "a"];
  const options = { coordinates, agentNode: () => "a" };
  assert.deepEqual(sortNear(rows, (r) => r, "a", options), ["a", "c", "d", "b", "x", "y"]);
  assert.deepEqual(sortNear(rows, (r) => r, "_agent", options), ["a", "c", "d", "b", "x", "y"]);
  assert.deepEqual(sortNear(rows, (r) => r, "b", options), ["b", "d", "c", "a", "x", "y"]);
});

test("near: no near, no coordinates, or an unknown near node leaves the order alone", () => {
  const rows = ["b", "a"];
  const coordinates = () => [{ node: "a", coord: at(0) }, { node: "b", coord: at(0.01) }];
  assert.deepEqual(sortNear(rows, (r) => r, "", { coordinates, agentNode: () => "a" }), ["b", "a"]);
  assert.deepEqual(sortNear(rows, (r) => r, "a", { agentNode: () => "a" }), ["b", "a"]);
  assert.deepEqual(sortNear(rows, (r) => r, "zz", { coordinates, agentNode: () => "a" }), ["b", "a"]);
});
