// The web UI's pure pieces, outside a browser: the ?filter it sends for the
// services list, JSON checking, round-trip times from coordinates, and how
// sync run records in KV become tasks.
import assert from "node:assert/strict";
import { test } from "node:test";
import { compileFilter } from "../filter/filter.ts";
import { jsonStatus } from "./kv.ts";
import { rttMs } from "./nodes.ts";
import { servicesFilter } from "./services.ts";
import { syncTasks } from "./sync.ts";

test("ui services filter: name, tag and meta become one bexpr the server compiles; quotes and backslashes are escaped", () => {
  assert.equal(servicesFilter({ search: "", tag: "", meta: "" }), "");
  const f = servicesFilter({ search: " web ", tag: "blue", meta: "version=1.2" });
  assert.equal(f, 'ServiceName contains "web" and "blue" in ServiceTags and ServiceMeta["version"] == "1.2"');
  assert.equal(servicesFilter({ search: "", tag: "", meta: "owner" }), '"owner" in ServiceMeta');
  const nasty = servicesFilter({ search: 'a"b\\c', tag: "", meta: "" });
  assert.equal(nasty, 'ServiceName contains "a\\"b\\\\c"');
  const compiled = compileFilter(nasty);
  assert.equal(compiled.match({ ServiceName: 'xa"b\\cy', ServiceTags: [], ServiceMeta: {} }), true);
  assert.equal(compiled.match({ ServiceName: "abc", ServiceTags: [], ServiceMeta: {} }), false);
  assert.equal(compileFilter(f).match({ ServiceName: "web-api", ServiceTags: ["blue"], ServiceMeta: { version: "1.2" } }), true);
});

test("ui json status: only text that tries to be JSON is judged", () => {
  assert.equal(jsonStatus("hello"), null);
  assert.deepEqual(jsonStatus(' {"a": [1, 2]} '), { valid: true, message: "Valid JSON" });
  const bad = jsonStatus('{"a": ');
  assert.equal(bad?.valid, false);
  assert.match(bad!.message, /^Not valid JSON: /);
});

test("ui round-trip time: Consul's ComputeDistance (distance plus heights, adjustments when positive)", () => {
  const c = (x: number, more: { Height?: number; Adjustment?: number } = {}) => ({ Vec: [x, 0, 0, 0, 0, 0, 0, 0], Error: 0.2, Adjustment: more.Adjustment ?? 0, Height: more.Height ?? 0 });
  assert.equal(rttMs(c(0), c(0.01)).toFixed(6), "10.000000");
  assert.equal(rttMs(c(0, { Height: 0.001 }), c(0.01, { Height: 0.002 })).toFixed(6), "13.000000");
  assert.equal(rttMs(c(0, { Adjustment: 0.002 }), c(0.01)).toFixed(6), "12.000000");
  // An adjustment that would make it negative is ignored.
  assert.equal(rttMs(c(0, { Adjustment: -1 }), c(0.01)).toFixed(6), "10.000000");
});

test("ui sync tasks: task state, definitions and run records from KV; newest run first; unreadable records skipped", () => {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64");
  const tasks = syncTasks([
    { Key: "cts/task-state/web", Value: b64({ enabled: true, appliedHash: "abc" }) },
    { Key: "cts/runs/web/1", Value: b64({ id: "1", task: "web", trigger: "start", status: "successful", startTime: "2026-11-25T01:00:00Z" }) },
    { Key: "cts/runs/web/2", Value: b64({ id: "2", task: "web", trigger: "data", status: "errored", startTime: "2026-11-25T02:00:00Z", error: "exit 1" }) },
    { Key: "cts/runs/web/3", Value: Buffer.from("not json").toString("base64") },
    { Key: "cts/task-defs/db", Value: b64({}) },
  ], "cts/");
  assert.deepEqual(tasks.map((t) => t.name), ["db", "web"]);
  assert.equal(tasks[0]!.defined, true);
  assert.deepEqual(tasks[1]!.runs.map((r) => r.id), ["2", "1"]);
  assert.equal(tasks[1]!.state?.appliedHash, "abc");
});
