import { test } from "node:test";
import assert from "node:assert/strict";
import { makeRequest } from "../core/http/types.ts";
import { fakeOperator } from "../core/http/_fake_backends.ts";
import { testBackends } from "../core/http/_test_env.ts";
import { createRoutes } from "../core/http/routes.ts";
import { operatorRaftMethods } from "../core/rpc/methods.ts";
import { runCli } from "./run.ts";
import { testIo } from "./_testing.ts";

const stored = { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 0, serverStabilizationTimeMs: 10_000, createIndex: 4, modifyIndex: 7 };
const health = {
  healthy: true,
  failureTolerance: 0,
  servers: [
    { id: "id-a", name: "a", address: "10.0.0.1:8300", serfStatus: "alive", version: "0.1.0", leader: true, lastContactMs: 0, lastTerm: 2, lastIndex: 9, healthy: true, voter: true, stableSinceMs: Date.UTC(2026, 0, 1) },
    { id: "id-b", name: "b", address: "10.0.0.2:8300", serfStatus: "alive", version: "0.1.0", leader: false, lastContactMs: 15, lastTerm: 2, lastIndex: 9, healthy: true, voter: false, stableSinceMs: Date.UTC(2026, 0, 1) },
  ],
};

function ioWithAutopilot(casResult = true) {
  const operator = fakeOperator((method) => {
    if (method === operatorRaftMethods.autopilotGetConfiguration) return Promise.resolve(stored);
    if (method === operatorRaftMethods.autopilotSetConfiguration) return Promise.resolve(casResult);
    if (method === operatorRaftMethods.serverHealth) return Promise.resolve(health);
    return Promise.resolve({});
  });
  const router = createRoutes(testBackends({ operator }));
  const io = testIo();
  io.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const body = typeof init?.body === "string" ? init.body : undefined;
    const res = await router.handle(makeRequest(init?.method ?? "GET", url.pathname + url.search, { body }));
    return new Response(typeof res.body === "string" ? res.body : new TextDecoder().decode(res.body), { status: res.status, headers: res.headers });
  }) as typeof fetch;
  return { io, calls: operator.calls };
}

test("operator autopilot get-config prints Consul's lines", async () => {
  const { io } = ioWithAutopilot();
  assert.equal(await runCli(["operator", "autopilot", "get-config"], io), 0);
  assert.equal(
    io.stdoutText,
    'CleanupDeadServers = true\nLastContactThreshold = 200ms\nMaxTrailingLogs = 250\nMinQuorum = 0\nServerStabilizationTime = 10s\nRedundancyZoneTag = ""\nDisableUpgradeMigration = false\nUpgradeVersionTag = ""\n',
  );
});

test("operator autopilot set-config changes the named fields and writes with CAS", async () => {
  const { io, calls } = ioWithAutopilot();
  const code = await runCli(["operator", "autopilot", "set-config", "-cleanup-dead-servers=false", "-min-quorum=3", "-server-stabilization-time=3s", "-last-contact-threshold=1s", "-max-trailing-logs=10"], io);
  assert.equal(code, 0, io.stderrText);
  assert.equal(io.stdoutText, "Configuration updated!\n");
  const set = calls.find((c) => c.method === operatorRaftMethods.autopilotSetConfiguration);
  assert.deepEqual(set?.args, { config: { cleanupDeadServers: false, lastContactThresholdMs: 1000, maxTrailingLogs: 10, minQuorum: 3, serverStabilizationTimeMs: 3000 }, cas: 7 });
  const lost = ioWithAutopilot(false);
  assert.equal(await runCli(["operator", "autopilot", "set-config", "-min-quorum=3"], lost.io), 1);
  assert.equal(lost.io.stdoutText, "Configuration could not be atomically updated, please try again\n");
});

test("operator autopilot state prints the leader, voters and each server", async () => {
  const { io } = ioWithAutopilot();
  assert.equal(await runCli(["operator", "autopilot", "state"], io), 0, io.stderrText);
  const out = io.stdoutText;
  assert.match(out, /^Healthy:\s+true\nFailure Tolerance:\s+0\nOptimistic Failure Tolerance:\s+0\nLeader:\s+id-a\nVoters:\n   id-a\n\nServers:\n/);
  assert.match(out, /   id-b\n      Name:\s+b\n      Address:\s+10\.0\.0\.2:8300\n      Version:\s+0\.1\.0\n      Status:\s+non-voter\n      Node Status:\s+alive\n      Healthy:\s+true\n      Last Contact:\s+15ms\n/);
  const json = ioWithAutopilot();
  assert.equal(await runCli(["operator", "autopilot", "state", "-format=json"], json.io), 0);
  assert.equal(JSON.parse(json.io.stdoutText).Servers["id-b"].Status, "non-voter");
});
