import { test } from "node:test";
import assert from "node:assert/strict";
import { makeRequest } from "../core/http/types.ts";
import { fakeOperator } from "../core/http/_fake_backends.ts";
import { testBackends } from "../core/http/_test_env.ts";
import { createRoutes } from "../core/http/routes.ts";
import { operatorRaftMethods } from "../core/rpc/methods.ts";
import { runCli } from "./run.ts";
import { testIo } from "./_testing.ts";
import { formatPeers } from "./operator_raft_list_peers.ts";

const servers = [
  { id: "id-a", node: "a", address: "10.0.0.1:8300", leader: true, protocolVersion: "3", voter: true, lastIndex: 42 },
  { id: "id-b", node: "b", address: "10.0.0.2:8300", leader: false, protocolVersion: "3", voter: true, lastIndex: 40 },
];

/** A CliIo whose fetch goes to the operator routes over a fake backend. */
function ioWithOperator() {
  const operator = fakeOperator((method) => {
    if (method === operatorRaftMethods.getConfiguration) return Promise.resolve({ servers, index: 42 });
    if (method === operatorRaftMethods.transferLeader) return Promise.resolve({ success: true });
    return Promise.resolve({});
  });
  const router = createRoutes(testBackends({ operator }));
  const io = testIo();
  io.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const res = await router.handle(makeRequest(init?.method ?? "GET", url.pathname + url.search));
    return new Response(typeof res.body === "string" ? res.body : new TextDecoder().decode(res.body), { status: res.status, headers: res.headers });
  }) as typeof fetch;
  return { io, calls: operator.calls };
}

test("formatPeers: Consul's columns, followers trail the leader by commits", () => {
  const text = formatPeers({ Servers: servers.map((s) => ({ ID: s.id, Node: s.node, Address: s.address, Leader: s.leader, ProtocolVersion: "3", Voter: true, LastIndex: s.lastIndex })), Index: 42 });
  const lines = text.split("\n");
  assert.match(lines[0]!, /^Node\s+ID\s+Address\s+State\s+Voter\s+RaftProtocol\s+Commit Index\s+Trails Leader By$/);
  assert.match(lines[1]!, /^a\s+id-a\s+10\.0\.0\.1:8300\s+leader\s+true\s+3\s+42\s+-$/);
  assert.match(lines[2]!, /^b\s+id-b\s+10\.0\.0\.2:8300\s+follower\s+true\s+3\s+40\s+2 commits$/);
});

test("operator raft list-peers / remove-peer / transfer-leader through the HTTP API", async () => {
  const { io, calls } = ioWithOperator();
  assert.equal(await runCli(["operator", "raft", "list-peers", "-stale"], io), 0);
  assert.match(io.stdoutText, /follower/);
  assert.deepEqual(calls[0]!.args, { allowStale: true });

  assert.equal(await runCli(["operator", "raft", "remove-peer", "-id=id-b"], io), 0);
  assert.deepEqual(calls[1]!.args, { id: "id-b" });
  assert.match(io.stdoutText, /Removed peer with id "id-b"/);
  assert.equal(await runCli(["operator", "raft", "remove-peer"], io), 1);
  assert.match(io.stderrText, /an address or id is required/);

  assert.equal(await runCli(["operator", "raft", "transfer-leader", "-id=id-b"], io), 0);
  assert.deepEqual(calls.at(-1)!.args, { id: "id-b" });
});

test("operator raft list-peers reports an unreachable agent with exit 1", async () => {
  const io = testIo({ env: { CONSUL_HTTP_ADDR: "127.0.0.1:1" } });
  io.fetch = (() => Promise.reject(Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }))) as typeof fetch;
  assert.equal(await runCli(["operator", "raft", "list-peers"], io), 1);
  assert.match(io.stderrText, /Error getting peers: .*connection refused/);
});
