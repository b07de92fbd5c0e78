import { test } from "node:test";
import assert from "node:assert/strict";
import { NotLeaderError } from "../errors.ts";
import { operatorRaftMethods } from "../rpc/mod.ts";
import { fakeOperator } from "./_fake_backends.ts";
import { testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

function fakeBackend() {
  return fakeOperator((method, args) => {
    if (method === operatorRaftMethods.getConfiguration) {
      return Promise.resolve({
        servers: [
          { id: "id-a", node: "a", address: "10.0.0.1:8300", leader: true, protocolVersion: "3", voter: true, lastIndex: 42 },
          { id: "id-b", node: "b", address: "10.0.0.2:8300", leader: false, protocolVersion: "3", voter: true, lastIndex: 40 },
        ],
        index: 42,
      });
    }
    if (method === operatorRaftMethods.transferLeader) return Promise.resolve({ success: true });
    if (method === operatorRaftMethods.removePeer) {
      const a = args as { id?: string };
      return a.id === "missing" ? Promise.reject(new Error(`id "missing" was not found in the Raft configuration`)) : Promise.resolve({ removed: a.id });
    }
    return Promise.reject(new NotLeaderError());
  });
}

test("GET /v1/operator/raft/configuration answers Consul's JSON; ?stale is passed on", async () => {
  const backend = fakeBackend();
  const router = createRoutes(testBackends({ operator: backend }));
  const r = await router.handle(makeRequest("GET", "/v1/operator/raft/configuration?stale"));
  assert.equal(r.status, 200);
  const body = JSON.parse(String(r.body));
  assert.deepEqual(body.Servers[0], { ID: "id-a", Node: "a", Address: "10.0.0.1:8300", Leader: true, ProtocolVersion: "3", Voter: true, LastIndex: 42 });
  assert.equal(body.Index, 42);
  assert.deepEqual(backend.calls[0], { method: operatorRaftMethods.getConfiguration, args: { allowStale: true } });
});

test("DELETE /v1/operator/raft/peer needs exactly one of ?id and ?address", async () => {
  const backend = fakeBackend();
  const router = createRoutes(testBackends({ operator: backend }));
  assert.equal((await router.handle(makeRequest("DELETE", "/v1/operator/raft/peer"))).status, 400);
  assert.equal((await router.handle(makeRequest("DELETE", "/v1/operator/raft/peer?id=a&address=b:1"))).status, 400);
  assert.equal((await router.handle(makeRequest("DELETE", "/v1/operator/raft/peer?id=id-b"))).status, 200);
  assert.deepEqual(backend.calls.at(-1), { method: operatorRaftMethods.removePeer, args: { id: "id-b" } });
  await router.handle(makeRequest("DELETE", "/v1/operator/raft/peer?address=10.0.0.2:8300"));
  assert.deepEqual(backend.calls.at(-1)!.args, { address: "10.0.0.2:8300" });
  const missing = await router.handle(makeRequest("DELETE", "/v1/operator/raft/peer?id=missing"));
  assert.equal(missing.status, 500);
  assert.match(String(missing.body), /was not found in the Raft configuration/);
  assert.equal((await router.handle(makeRequest("GET", "/v1/operator/raft/peer?id=x"))).status, 405);
});

test("POST /v1/operator/raft/transfer-leader answers {Success}", async () => {
  const backend = fakeBackend();
  const router = createRoutes(testBackends({ operator: backend }));
  const r = await router.handle(makeRequest("POST", "/v1/operator/raft/transfer-leader?id=id-b"));
  assert.equal(r.status, 200);
  assert.deepEqual(JSON.parse(String(r.body)), { Success: true });
  assert.deepEqual(backend.calls.at(-1), { method: operatorRaftMethods.transferLeader, args: { id: "id-b" } });
});
