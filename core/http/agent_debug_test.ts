import { test } from "node:test";
import assert from "node:assert/strict";
import { agentDebugHeapHandler, agentDebugProfileHandler, agentHostHandler, replaceAcrossChunks, type AgentDebugBackend, type HostFacts } from "./agent_debug.ts";
import { createRoutes } from "./routes.ts";
import { testBackends } from "./_test_env.ts";
import { makeRequest } from "./types.ts";

function fake(enabled: boolean) {
  const calls: string[] = [];
  const backend: AgentDebugBackend = {
    enabled: () => enabled,
    host: async () => ({ Host: { hostname: "h" } }) as unknown as HostFacts,
    cpuProfile: async ({ seconds }) => (calls.push(`profile ${seconds}`), '{"nodes":[]}'),
    heapSnapshot: async ({ redact }) => (calls.push(`heap ${redact.join(",")}`), ['{"snapshot"', ":{}}"]),
  };
  return { backend, calls };
}

test("debug endpoints: without enable_debug (and no ACLs) 401 and nothing is taken, as Consul's pprof", async () => {
  const { backend, calls } = fake(false);
  const router = createRoutes(testBackends({ debug: backend }));
  for (const path of ["/v1/agent/debug/profile?seconds=1", "/v1/agent/debug/heap"]) {
    const r = await router.handle(makeRequest("GET", path));
    assert.equal(r.status, 401, path);
    assert.match(String(r.body), /enable_debug/);
  }
  assert.deepEqual(calls, []);
  // Host facts are not gated by enable_debug (Consul's /v1/agent/host needs operator:read only).
  const h = await router.handle(makeRequest("GET", "/v1/agent/host"));
  assert.equal(h.status, 200);
  assert.equal((JSON.parse(String(h.body)) as HostFacts).Host.hostname, "h");
});

test("debug profile: seconds default 30, bad values 400; heap is asked to redact the caller's token", async () => {
  const { backend, calls } = fake(true);
  const profile = agentDebugProfileHandler(backend);
  assert.equal((await profile(makeRequest("GET", "/v1/agent/debug/profile"))).status, 200);
  assert.equal((await profile(makeRequest("GET", "/v1/agent/debug/profile?seconds=2"))).status, 200);
  for (const bad of ["0", "-1", "1.5", "x", "3601"]) {
    await assert.rejects(profile(makeRequest("GET", `/v1/agent/debug/profile?seconds=${bad}`)), (e: Error & { status?: number }) => e.status === 400, bad);
  }
  const heap = agentDebugHeapHandler(backend);
  await heap(makeRequest("GET", "/v1/agent/debug/heap", { headers: { "X-Consul-Token": "tok-123456789" } }));
  await heap(makeRequest("GET", "/v1/agent/debug/heap", { headers: { Authorization: "Bearer tok-bearer-123" } }));
  await heap(makeRequest("GET", "/v1/agent/debug/heap?token=tok-query-123"));
  assert.deepEqual(calls, ["profile 30", "profile 2", "heap tok-123456789", "heap tok-bearer-123", "heap tok-query-123"]);
  assert.equal((await agentHostHandler(backend)(makeRequest("GET", "/v1/agent/host?pretty"))).status, 200);
});

test("replaceAcrossChunks: needles split between chunks, overlapping needles, no needles", () => {
  const run = (chunks: string[], needles: string[]) => [...replaceAcrossChunks(chunks, needles, "#")].join("");
  assert.equal(run(["ab", "cd", "ef", "abc", "def"], ["abcdef", "cde"]), "##");
  assert.equal(run(["xxab", "cd", "efyy"], ["cde"]), "xxab#fyy");
  assert.equal(run(["secret-one ", "and sec", "ret-one"], ["secret-one"]), "# and #");
  assert.equal(run(["x", "y"], []), "xy");
  assert.equal(run([], ["a"]), "");
});

test("heap endpoint streams the backend's chunks", async () => {
  const { backend } = fake(true);
  const r = await agentDebugHeapHandler(backend)(makeRequest("GET", "/v1/agent/debug/heap"));
  const pieces: string[] = [];
  for await (const p of r.stream!) pieces.push(String(p));
  assert.equal(pieces.join(""), '{"snapshot":{}}');
});
