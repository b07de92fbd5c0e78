import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "../metrics/metrics.ts";
import { metricsRoutes } from "./metrics.ts";
import { Router } from "./routes.ts";
import { makeRequest } from "./types.ts";

test("agent/metrics: JSON always; Prometheus only with a retention time (415 otherwise); every request is timed by route", async () => {
  let now = 0;
  const metrics = new Metrics({ now: () => now, wallNow: () => 0 });
  metrics.addGauges(() => [["runtime.alloc_bytes", 123]]);
  const off = new Router(metricsRoutes({ metrics, prometheus: false }), { metrics });
  off.add({ pattern: "/v1/kv/", methods: ["GET"], handler: async () => { now += 5; return { status: 200, headers: {}, body: "" }; } });
  const json = await off.handle(makeRequest("GET", "/v1/agent/metrics"));
  assert.equal(json.status, 200);
  assert.deepEqual((JSON.parse(json.body as string) as { Gauges: unknown[] }).Gauges, [{ Name: "consul.runtime.alloc_bytes", Value: 123, Labels: {} }]);
  const refused = await off.handle(makeRequest("GET", "/v1/agent/metrics?format=prometheus"));
  assert.deepEqual([refused.status, refused.body], [415, "Prometheus is not enabled since its retention time is not positive"]);

  await off.handle(makeRequest("GET", "/v1/kv/some/key"));
  const on = new Router(metricsRoutes({ metrics, prometheus: true }));
  const prom = await on.handle(makeRequest("GET", "/v1/agent/metrics?format=prometheus"));
  assert.equal(prom.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8");
  assert.match(prom.body as string, /^consul_runtime_alloc_bytes 123$/m);
  assert.match(prom.body as string, /^consul_api_http_sum\{method="GET",path="v1\.kv\._"\} 5$/m);
  assert.match(prom.body as string, /^consul_api_http_count\{method="GET",path="v1\.agent\.metrics"\} 2$/m);
});
