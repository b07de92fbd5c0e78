import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "../metrics/metrics.ts";
import type { Rpc } from "../rpc/mod.ts";
import { testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

test("agent/metrics: JSON always; Prometheus only with a retention time (415 otherwise); every request is timed by route", async () => {
  let now = 0;
  const metrics = new Metrics({ now: () => now, wallNow: () => 0 });
  metrics.addGauges(() => [["runtime.alloc_bytes", 123]]);
  // A KV read that takes 5 ms.
  const rpc = { call: async () => { now += 5; return { entries: [], meta: { index: 1, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" } }; } } as unknown as Rpc;
  const off = createRoutes(testBackends({ rpc, metrics, prometheus: false }));
  const json = await off.handle(makeRequest("GET", "/v1/agent/metrics"));
  assert.equal(json.status, 200);
  assert.deepEqual((JSON.parse(json.body as string) as { Gauges: unknown[] }).Gauges, [{ Name: "consul.runtime.alloc_bytes", Value: 123, Labels: {} }]);
  const refused = await off.handle(makeRequest("GET", "/v1/agent/metrics?format=prometheus"));
  assert.deepEqual([refused.status, refused.body], [415, "Prometheus is not enabled since its retention time is not positive"]);

  await off.handle(makeRequest("GET", "/v1/kv/some/key"));
  const on = createRoutes(testBackends({ metrics, prometheus: true }));
  const prom = await on.handle(makeRequest("GET", "/v1/agent/metrics?format=prometheus"));
  assert.equal(prom.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8");
  assert.match(prom.body as string, /^consul_runtime_alloc_bytes 123$/m);
  assert.match(prom.body as string, /^consul_api_http_sum\{method="GET",path="v1\.kv\._"\} 5$/m);
  assert.match(prom.body as string, /^consul_api_http_count\{method="GET",path="v1\.agent\.metrics"\} 2$/m);
});
