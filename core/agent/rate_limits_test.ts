// limits.request_limits and limits.rpc_rate on a whole -dev agent: the HTTP
// status and body of a refused request, the counters in /v1/agent/metrics,
// and `reload` applying new values (Consul reloads both).
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildConfig, type AgentConfig } from "../config/mod.ts";
import { FanoutSink } from "../log/mod.ts";
import { startAgent } from "./agent.ts";

function devConfig(limits: Record<string, unknown>): AgentConfig {
  return buildConfig({
    dev: true,
    // Prometheus text has running totals; the JSON shows only the last finished 10 s interval.
    sources: [{ name: "limits.json", format: "json", text: JSON.stringify({ limits, telemetry: { prometheus_retention_time: "60s" } }) }],
    flags: { ports: { http: 0, dns: -1, serfLan: 0, serfWan: 0, server: 8300 }, nodeName: "limited" },
  });
}

test("rate limits: enforcing refuses a leader's write with 503, permissive lets it through and counts, rpc_rate answers 429; reload applies each", async () => {
  let next = devConfig({ request_limits: { mode: "enforcing", write_rate: 0 } });
  const agent = await startAgent(next, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink(), reloadConfig: () => next });
  const base = `http://127.0.0.1:${agent.httpAddr!.port}`;
  const call = async (method: string, path: string, body?: string) => {
    const r = await fetch(`${base}${path}`, { method, body });
    return { status: r.status, text: await r.text() };
  };
  /** The Prometheus lines of a counter (`consul_rpc_rate_limit_exceeded{…} 3`). */
  const counters = async (name: string): Promise<string[]> => {
    const text = (await call("GET", "/v1/agent/metrics?format=prometheus")).text;
    return text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  };
  const reload = async (limits: Record<string, unknown>) => {
    next = devConfig(limits);
    assert.equal((await call("PUT", "/v1/agent/reload")).status, 200);
  };
  try {
    // The one voter leads: a write it refuses is "try again later" (no other server could take it).
    const refused = await call("PUT", "/v1/kv/a", "1");
    assert.deepEqual(refused, { status: 503, text: "rate limit exceeded for operation that can only be performed by the leader, try again later" });
    assert.equal((await call("GET", "/v1/kv/a")).status, 404, "reads have their own bucket, unlimited here");
    assert.equal((await call("GET", "/v1/status/leader")).status, 200);
    const exceeded = await counters("consul_rpc_rate_limit_exceeded");
    assert.ok(exceeded.some((l) => l.includes('limit_type="global/write"') && l.includes('op="KVS.Apply"') && l.includes('mode="enforcing"')), exceeded.join("\n"));

    await reload({ request_limits: { mode: "permissive", write_rate: 0 } });
    assert.equal((await call("PUT", "/v1/kv/a", "1")).status, 200, "permissive lets it through");
    assert.ok((await counters("consul_rpc_rate_limit_exceeded")).some((l) => l.includes('mode="permissive"') && l.includes('op="KVS.Apply"')));

    await reload({ rpc_rate: 0, rpc_max_burst: 0 });
    assert.deepEqual(await call("GET", "/v1/kv/a"), { status: 429, text: "RPC rate limit exceeded" });
    assert.equal((await counters("consul_client_rpc_exceeded")).length, 1);

    await reload({});
    assert.equal((await call("GET", "/v1/kv/a?raw")).text, "1", "the defaults again: no limits");
  } finally {
    await agent.stop();
  }
});
