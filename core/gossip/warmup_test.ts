import { test } from "node:test";
import assert from "node:assert/strict";
import { warmUpGossip } from "./warmup.ts";

const clientTags = { role: "node", dc: "dc1", segment: "", id: "", vsn: "2", vsn_min: "2", vsn_max: "3", build: "0.1.0:0123abcd" };

test("warmUpGossip: the in-memory nodes join and converge (so a real join's paths all ran), synchronously", () => {
  assert.equal(warmUpGossip({ tags: clientTags }).converged, true);
});

test("warmUpGossip: works with any number of nodes from 2 and with server tags", () => {
  assert.equal(warmUpGossip({ tags: clientTags, nodes: 2 }).converged, true);
  assert.equal(warmUpGossip({ tags: { ...clientTags, role: "consul", port: "8300", raft_vsn: "3" }, nodes: 3 }).converged, true);
});
