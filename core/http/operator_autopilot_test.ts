import assert from "node:assert/strict";
import { test } from "node:test";
import { operatorRaftMethods } from "../rpc/methods.ts";
import type { ServerHealthReply } from "../server/operator_autopilot.ts";
import { operatorAutopilotConfigurationHandler, operatorAutopilotHealthHandler, operatorAutopilotStateHandler } from "./operator_autopilot.ts";
import { makeRequest } from "./types.ts";

const stored = { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 0, serverStabilizationTimeMs: 10_000, createIndex: 4, modifyIndex: 4 };

function backend(health?: ServerHealthReply) {
  const calls: Array<[string, unknown]> = [];
  return {
    calls,
    callRaw(method: string, args: unknown): Promise<unknown> {
      calls.push([method, args]);
      if (method === operatorRaftMethods.autopilotGetConfiguration) return Promise.resolve(stored);
      if (method === operatorRaftMethods.autopilotSetConfiguration) return Promise.resolve((args as { cas?: number }).cas !== 3);
      return Promise.resolve(health);
    },
  };
}

test("autopilot configuration: GET in Consul's JSON, PUT with and without ?cas", async () => {
  const b = backend();
  const h = operatorAutopilotConfigurationHandler(b);
  const got = await h(makeRequest("GET", "/v1/operator/autopilot/configuration?stale"));
  assert.deepEqual(JSON.parse(String(got.body)), {
    CleanupDeadServers: true,
    LastContactThreshold: "200ms",
    MaxTrailingLogs: 250,
    MinQuorum: 0,
    ServerStabilizationTime: "10s",
    RedundancyZoneTag: "",
    DisableUpgradeMigration: false,
    UpgradeVersionTag: "",
    CreateIndex: 4,
    ModifyIndex: 4,
  });
  assert.deepEqual(b.calls[0], [operatorRaftMethods.autopilotGetConfiguration, { allowStale: true }]);
  const body = JSON.stringify({ CleanupDeadServers: false, LastContactThreshold: "1s", MaxTrailingLogs: 10, MinQuorum: 3, ServerStabilizationTime: 5_000_000_000 });
  const put = await h(makeRequest("PUT", "/v1/operator/autopilot/configuration", { body }));
  assert.equal(put.body, "true");
  assert.deepEqual(b.calls[1], [
    operatorRaftMethods.autopilotSetConfiguration,
    { config: { cleanupDeadServers: false, lastContactThresholdMs: 1000, maxTrailingLogs: 10, minQuorum: 3, serverStabilizationTimeMs: 5000 } },
  ]);
  const cas = await h(makeRequest("PUT", "/v1/operator/autopilot/configuration?cas=3", { body }));
  assert.equal(cas.body, "false");
  await assert.rejects(h(makeRequest("PUT", "/v1/operator/autopilot/configuration?cas=x", { body })), /cas/);
  await assert.rejects(h(makeRequest("PUT", "/v1/operator/autopilot/configuration", { body: '{"LastContactThreshold":"soon"}' })), /LastContactThreshold/);
});

test("autopilot health and state: Consul's shapes, 429 while a server is unhealthy", async () => {
  const at = Date.UTC(2026, 0, 2, 3, 4, 5);
  const reply: ServerHealthReply = {
    healthy: false,
    failureTolerance: 0,
    servers: [
      { id: "a", name: "s1", address: "10.0.0.1:8300", serfStatus: "alive", version: "0.1.0", leader: true, lastContactMs: 0, lastTerm: 2, lastIndex: 9, healthy: true, voter: true, stableSinceMs: at },
      { id: "b", name: "s2", address: "10.0.0.2:8300", serfStatus: "alive", version: "0.1.0", leader: false, lastContactMs: 12, lastTerm: 2, lastIndex: 9, healthy: true, voter: true, stableSinceMs: at },
      { id: "c", name: "s3", address: "10.0.0.3:8300", serfStatus: "failed", version: "0.1.0", leader: false, lastTerm: 2, lastIndex: 7, healthy: false, voter: false, stableSinceMs: at },
    ],
  };
  const health = await operatorAutopilotHealthHandler(backend(reply))(makeRequest("GET", "/v1/operator/autopilot/health"));
  assert.equal(health.status, 429);
  const hj = JSON.parse(String(health.body));
  assert.deepEqual(Object.keys(hj), ["Healthy", "FailureTolerance", "Servers"]);
  assert.deepEqual(hj.Servers[1], {
    ID: "b", Name: "s2", Address: "10.0.0.2:8300", SerfStatus: "alive", Version: "0.1.0", Leader: false,
    LastContact: "12ms", LastTerm: 2, LastIndex: 9, Healthy: true, Voter: true, StableSince: "2026-01-02T03:04:05.000Z",
  });
  assert.equal(hj.Servers[0].LastContact, "0s");
  const state = JSON.parse(String((await operatorAutopilotStateHandler(backend(reply))(makeRequest("GET", "/v1/operator/autopilot/state"))).body));
  assert.equal(state.Leader, "a");
  assert.deepEqual(state.Voters, ["a", "b"]);
  assert.equal(state.Servers.c.Status, "non-voter");
  assert.equal(state.Servers.a.Status, "leader");
  assert.equal(state.Servers.c.NodeStatus, "failed");
});
