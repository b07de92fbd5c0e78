// services register/deregister, maint, reload and validate against the real
// agent endpoints (a Router over a LocalAgent, reached through fetch).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { LocalAgent } from "../core/local/local_agent.ts";
import { testBackends } from "../core/http/_test_env.ts";
import { createRoutes } from "../core/http/routes.ts";
import { makeRequest } from "../core/http/types.ts";
import { Rng } from "../core/sim/rng.ts";
import { SimClock } from "../core/sim/sim_clock.ts";
import { runCli } from "./run.ts";
import { testIo } from "./_testing.ts";

function agentFetch(options: { reloads?: string[] } = {}) {
  const local = new LocalAgent({ node: { node: "node-a", id: "", address: "127.0.0.1", taggedAddresses: {}, meta: {} }, clock: new SimClock(), rng: new Rng(1) });
  local.start();
  const router = createRoutes(testBackends({
    local,
    reload: async () => void options.reloads?.push("reload"),
    agent: { datacenter: "dc1", nodeName: "node-a", nodeId: "", server: true, version: "0", revision: "", advertiseAddr: "", serfLanPort: 0 },
  }));
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    const res = await router.handle(makeRequest(req.method, url.pathname + url.search, { body, headers }));
    return new Response(res.status === 204 ? null : (res.body as BodyInit), { status: res.status, headers: res.headers });
  };
  return { local, fetch };
}

async function run(args: string[], fetch: typeof globalThis.fetch, files: Record<string, string> = {}) {
  const io = testIo({ files });
  io.fetch = fetch;
  const code = await runCli(args, io);
  return { code, out: io.stdoutText, err: io.stderrText };
}

test("services register: from flags, and from JSON/YAML files with flags filling the gaps", async () => {
  const { local, fetch } = agentFetch();
  let r = await run(["services", "register", "-name=web", "-id=web1", "-port=80", "-tag=a", "-tag", "b", "-meta", "env=prod", "-address=10.0.0.5", "-tagged-address", "wan=1.2.3.4:443"], fetch);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Registered service: web\n");
  const web = local.state.service("web1")!;
  assert.deepEqual([web.service, web.port, web.tags, web.meta, web.address, web.taggedAddresses], ["web", 80, ["a", "b"], { env: "prod" }, "10.0.0.5", { wan: { address: "1.2.3.4", port: 443 } }]);

  r = await run(["services", "register", "-port=9000", "db.json", "cache.yaml"], fetch, {
    "db.json": JSON.stringify({ services: [{ name: "db", check: { ttl: "30s" } }, { name: "db2", port: 1 }] }),
    "cache.yaml": "service:\n  name: cache\n  tags: [hot]\n",
  });
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Registered service: db\nRegistered service: db2\nRegistered service: cache\n");
  assert.equal(local.state.service("db")?.port, 9000);
  assert.equal(local.state.service("db2")?.port, 1, "a file's own port wins");
  assert.deepEqual(local.state.service("cache")?.tags, ["hot"]);
  assert.equal(local.state.check("service:db")?.type, "ttl");
});

test("services register: usage errors and agent errors", async () => {
  const { fetch } = agentFetch();
  let r = await run(["services", "register"], fetch);
  assert.equal(r.code, 1);
  assert.equal(r.err, "Service registration requires at least one argument or flags.\n");
  r = await run(["services", "register", "-name=x", "f.json"], fetch);
  assert.equal(r.err, "Service registration requires arguments or -id, not both.\n");
  r = await run(["services", "register", "bad.json"], fetch, { "bad.json": JSON.stringify({ service: { port: 1 } }) });
  assert.equal(r.code, 1);
  assert.match(r.err, /^Error: Invalid service in "bad.json": Missing service name\n$/);
  r = await run(["services", "register", "-name=x", "-address=0.0.0.0"], fetch);
  assert.equal(r.code, 1);
  assert.equal(r.err, `Error registering service "x": Unexpected response code: 400 (Invalid service address)\n`);
  r = await run(["services", "register", "-name=x", "-meta=novalue"], fetch);
  assert.equal(r.code, 1);
});

test("services deregister: by -id or by file", async () => {
  const { local, fetch } = agentFetch();
  await run(["services", "register", "-name=web"], fetch);
  await run(["services", "register", "-name=db", "-id=db1"], fetch);
  let r = await run(["services", "deregister", "-id=web"], fetch);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Deregistered service: web\n");
  r = await run(["services", "deregister", "db.json"], fetch, { "db.json": JSON.stringify({ service: { name: "db", id: "db1" } }) });
  assert.equal(r.out, "Deregistered service: db1\n");
  assert.deepEqual(local.state.services(), []);
  r = await run(["services", "deregister", "-id=web"], fetch);
  assert.equal(r.code, 1);
  assert.match(r.err, /^Error deregistering service "web": Unexpected response code: 404 \(Unknown service ID "web"/);
  r = await run(["services", "deregister"], fetch);
  assert.equal(r.err, "Service deregistration requires at least one argument or -id.\n");
});

test("maint: enable/disable node and service, list, flag errors", async () => {
  const { local, fetch } = agentFetch();
  await run(["services", "register", "-name=web"], fetch);
  let r = await run(["maint", "-enable", "-reason", "kernel upgrade"], fetch);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Node maintenance is now enabled\n");
  r = await run(["maint", "-enable", "-service=web"], fetch);
  assert.equal(r.out, "Service maintenance is now enabled\n");
  r = await run(["maint"], fetch);
  assert.equal(r.out, "Node:\n  Name:   node-a\n  Reason: kernel upgrade\n\nService:\n  ID:     web\n  Reason: Maintenance mode is enabled for this service, but no reason was provided. This is a default message.\n\n");
  r = await run(["maint", "-disable"], fetch);
  assert.equal(r.out, "Node maintenance is now disabled\n");
  r = await run(["maint", "-disable", "-service=web"], fetch);
  assert.equal(r.out, "Service maintenance is now disabled\n");
  assert.deepEqual(local.state.checks(), []);
  r = await run(["maint", "-enable", "-disable"], fetch);
  assert.equal(r.err, "Only one of -enable or -disable may be provided\n");
  r = await run(["maint", "-reason=x"], fetch);
  assert.equal(r.err, "Reason may only be provided with -enable\n");
  r = await run(["maint", "-enable", "-service=ghost"], fetch);
  assert.equal(r.code, 1);
  assert.equal(r.err, `Error enabling service maintenance: Unexpected response code: 404 (No service registered with ID "ghost")\n`);
});

test("reload: triggers the agent's reload", async () => {
  const reloads: string[] = [];
  const { fetch } = agentFetch({ reloads });
  const r = await run(["reload"], fetch);
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "Configuration reload triggered\n");
  assert.deepEqual(reloads, ["reload"]);
});

test("validate: files and directories, service definitions included", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-validate-"));
  try {
    const { fetch } = agentFetch();
    mkdirSync(join(dir, "d"));
    writeFileSync(join(dir, "d", "base.json"), JSON.stringify({ data_dir: "/tmp/x", node_name: "n" }));
    writeFileSync(join(dir, "d", "web.yaml"), "service:\n  name: web\n  check:\n    http: http://localhost/\n    interval: 10s\n");
    let r = await run(["validate", join(dir, "d")], fetch);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "Configuration is valid!\n");
    r = await run(["validate", "-quiet", join(dir, "d", "base.json")], fetch);
    assert.equal(r.out, "");
    writeFileSync(join(dir, "bad.json"), JSON.stringify({ data_dir: "/tmp/x", services: [{ name: "x", check: { interval: "10s" } }] }));
    r = await run(["validate", join(dir, "bad.json")], fetch);
    assert.equal(r.code, 1);
    assert.match(r.err, /^Config validation failed: services\[0\] \("x"\): Invalid check: TTL must be > 0 for TTL checks\n$/);
    writeFileSync(join(dir, "nodir.json"), "{}");
    r = await run(["validate", join(dir, "nodir.json")], fetch);
    assert.match(r.err, /data_dir is required/);
    r = await run(["validate"], fetch);
    assert.equal(r.err, "Must specify at least one config file or directory\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
