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
    sources: [{ name: "limits.json", format: "json", text: JSON.stringify({ limits }) }],
    flags: { ports: { http: 0, dns: -1, serfLan: 0, serfWan: 0, server: 8300 }, nodeName: "limited" },
  });
}

interface Counter {
  Name: string;
  Count: number;
  Labels?: Record<string, string>;
}

test("rate limits: enforcing refuses a leader's write with 503, permissive lets it through and counts, rpc_rate answers 429; reload applies each", async () => {
  let next = devConfig({ request_limits: { mode: "enforcing", write_rate: 0 } });
  const agent = await startAgent(next, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink(), reloadConfig: () => next });
  const base = `http://127.0.0.1:${agent.httpAddr!.port}`;
  const call = async (method: string, path: string, body?: string) => {
    const r = await fetch(`${base}${path}`, { method, body });
    return { status: r.status, text: await r.text() };
  };
  const counters = async (name: string): Promise<Counter[]> => {
    const m = JSON.parse((await call("GET", "/v1/agent/metrics")).text) as { Counters: Counter[] };
    return m.Counters.filter((c) => c.Name === name);
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
    const exceeded = await counters("consul.rpc.rate_limit.exceeded");
    const kv = exceeded.find((c) => c.Labels?.op === "KVS.Apply");
    assert.ok(kv, JSON.stringify(exceeded));
    assert.deepEqual({ ...kv.Labels }, { limit_type: "global/write", op: "KVS.Apply", mode: "enforcing" });

    await reload({ request_limits: { mode: "permissive", write_rate: 0 } });
    assert.equal((await call("PUT", "/v1/kv/a", "1")).status, 200, "permissive lets it through");
    assert.ok((await counters("consul.rpc.rate_limit.exceeded")).some((c) => c.Labels?.mode === "permissive" && c.Labels?.op === "KVS.Apply"));

    await reload({ rpc_rate: 0, rpc_max_burst: 0 });
    assert.deepEqual(await call("GET", "/v1/kv/a"), { status: 429, text: "RPC rate limit exceeded" });
    assert.ok((await counters("consul.client.rpc.exceeded")).length === 1);

    await reload({});
    assert.equal((await call("GET", "/v1/kv/a?raw")).text, "1", "the defaults again: no limits");
  } finally {
    await agent.stop();
  }
});
