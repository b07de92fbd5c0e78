import { test } from "node:test";
import assert from "node:assert/strict";
import { ApiClient } from "../core/api/mod.ts";
import { testIo } from "./_testing.ts";
import { doctorCommand, gatherFacts } from "./doctor.ts";

const member = (name: string, port: number, o: { status?: number; role?: string; httpPort?: number } = {}) => ({
  Name: name,
  Addr: "127.0.0.1",
  Port: port,
  Status: o.status ?? 1,
  Tags: { role: o.role ?? "consul", dc: "dc1", port: "8300", build: "0.1.0:abc", ...(o.httpPort ? { http_port: String(o.httpPort) } : {}) },
});

/** Agents by "host:port": each a map of path → answer (status, body); every request recorded. */
function fakeCluster(agents: Record<string, Record<string, [number, unknown] | (() => [number, unknown])>>) {
  const seen: string[] = [];
  const fetch = (async (input: string | URL | Request) => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    seen.push(`${url.host}${url.pathname}${url.search}`);
    const agent = agents[url.host];
    if (!agent) throw new TypeError("fetch failed");
    const answer = agent[url.pathname];
    if (!answer) return new Response("no such path", { status: 404 });
    const [status, body] = typeof answer === "function" ? answer() : answer;
    return new Response(status >= 400 && typeof body === "string" ? body : JSON.stringify(body), { status });
  }) as typeof globalThis.fetch;
  return { fetch, seen };
}

function self(name: string, decrypt = 0) {
  return { Config: { NodeName: name, Server: true, Datacenter: "dc1" }, Stats: { serf_lan: { packetsDecryptFailed: String(decrypt), streamsDecryptFailed: "0" } } };
}

test("gatherFacts: servers asked at their http_port tag, autopilot read from a 429, checks sampled, ?stale without a leader", async () => {
  const members = [member("s1", 1), member("s2", 2, { httpPort: 9502 }), member("s3", 3, { status: 4 }), member("c1", 4, { role: "node" })];
  let checkCalls = 0;
  let s2Decrypt = 5;
  const { fetch, seen } = fakeCluster({
    "127.0.0.1:9501": {
      "/v1/agent/self": [200, self("s1")],
      "/v1/agent/members": [200, members],
      "/v1/status/leader": [200, ""],
      "/v1/agent/host": [200, { CollectionTime: Date.now() * 1e6, Disk: { path: "/d", usedPercent: 10, free: 1, total: 2, inodesUsedPercent: 1 } }],
      "/v1/operator/raft/configuration": [200, { Servers: [{ ID: "i1", Node: "s1", Address: "127.0.0.1:8300", Leader: false, Voter: true }] }],
      "/v1/operator/keyring": [500, "Keyring is empty (encryption not enabled)"],
      "/v1/health/state/any": () => [200, [{ Node: "c1", CheckID: "web", Name: "web", Status: checkCalls++ % 2 === 0 ? "passing" : "critical", ModifyIndex: checkCalls, Output: "" }]],
    },
    "127.0.0.1:9502": {
      "/v1/agent/self": () => [200, self("s2", (s2Decrypt += 3))],
      "/v1/agent/members": [200, members],
      "/v1/status/leader": [200, ""],
      "/v1/agent/host": [200, { CollectionTime: (Date.now() + 5_000) * 1e6, Disk: null }],
    },
  });
  const client = new ApiClient({ address: "127.0.0.1:9501", fetch });
  const clientFor = (addr: string) => new ApiClient({ address: addr, fetch });
  const facts = await gatherFacts({ client, clientFor, sampleMs: 1_200, timeoutMs: 1_000 });
  assert.equal(facts.leader, "");
  assert.ok(seen.includes("127.0.0.1:9501/v1/operator/raft/configuration?stale"), seen.join("\n"));
  assert.ok(!seen.some((s) => s.includes("autopilot")), "no autopilot without a leader");
  assert.ok(seen.some((s) => s.startsWith("127.0.0.1:9502/v1/agent/self")), "s2 asked at its http_port tag");
  // s3 failed in gossip is asked too (a split pool would answer); without an http_port tag the guess reaches s1.
  const asked = facts.servers.map((s) => [s.name, s.error ? s.error.replace(/:.*/s, "") : "ok"]);
  assert.deepEqual(asked, [["s1", "ok"], ["s2", "ok"], ["s3", "the agent at 127.0.0.1"]], JSON.stringify(facts.servers.map((s) => [s.name, s.error])));
  assert.equal(facts.servers[2]!.error, "the agent at 127.0.0.1:9501 is s1, not s3 (no http_port tag to find s3's API)");
  const s2 = facts.servers[1]!;
  assert.ok(s2.clock!.offsetMs > 4_000 && s2.clock!.offsetMs < 6_000);
  assert.ok(s2.decryptFailures!.after > s2.decryptFailures!.before);
  assert.equal(facts.keyringError, undefined, "no encryption is not an error");
  assert.ok(checkCalls >= 3);
  assert.equal(facts.checkHistory![0]!.statuses.length, checkCalls);
  assert.ok(facts.raft && facts.raft[0]!.node === "s1");

  // With a leader, autopilot health is read even when it answers 429 (unhealthy).
  const healthy = fakeCluster({
    "127.0.0.1:9501": {
      "/v1/agent/self": [200, self("s1")],
      "/v1/agent/members": [200, [member("s1", 1)]],
      "/v1/status/leader": [200, "127.0.0.1:8300"],
      "/v1/agent/host": [200, {}],
      "/v1/operator/raft/configuration": [200, { Servers: [] }],
      "/v1/operator/autopilot/health": [429, { Healthy: false, FailureTolerance: 0, Servers: [{ ID: "i1", Name: "s1", SerfStatus: "alive", Healthy: false, LastContact: "3s", LastIndex: 1 }] }],
      "/v1/health/state/any": [200, []],
    },
  });
  const f2 = await gatherFacts({ client: new ApiClient({ address: "127.0.0.1:9501", fetch: healthy.fetch }), clientFor: (a) => new ApiClient({ address: a, fetch: healthy.fetch }), sampleMs: 0, timeoutMs: 1_000 });
  assert.equal(f2.autopilot?.servers[0]?.lastContact, "3s", JSON.stringify([f2.autopilotError, f2.leader, healthy.seen]));
});

test("cairn doctor: exit 2 and a JSON error when the agent cannot be asked; bad flags exit 1", async () => {
  const down = (async () => { throw new TypeError("fetch failed"); }) as typeof fetch;
  const io = testIo();
  io.fetch = down;
  assert.equal(await doctorCommand.run(["-http-addr=127.0.0.1:1", "-sample=0", "-format=json"], io), 2);
  const out = JSON.parse(io.stdoutText) as { Healthy: boolean; Error: string };
  assert.equal(out.Healthy, false);
  assert.match(out.Error, /Cannot ask the agent at 127\.0\.0\.1:1/);
  const bad = testIo();
  assert.equal(await doctorCommand.run(["-format=yaml"], bad), 1);
  assert.equal(await doctorCommand.run(["-disk-warn-percent=101"], bad), 1);
  assert.equal(await doctorCommand.run(["extra"], bad), 1);
});
