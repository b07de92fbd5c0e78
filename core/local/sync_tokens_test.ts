import assert from "node:assert/strict";
import { test } from "node:test";
import { PermissionDeniedError } from "../errors.ts";
import { CaptureSink, createLogger } from "../log/mod.ts";
import type { RpcArgs } from "../rpc/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { decodeCheckDefinition, decodeServiceDefinition } from "../service_defs/definition.ts";
import { FakeCatalogRpc } from "./_fake_catalog_rpc.ts";
import { LocalAgent } from "./local_agent.ts";
import { MemoryDefinitionStore } from "./persist.ts";

const node = { node: "n1", id: "11111111-2222-3333-4444-555555555555", address: "10.0.0.1", taggedAddresses: {}, meta: {} };

function setup(options: { configFile?: string; store?: MemoryDefinitionStore } = {}) {
  const clock = new SimClock();
  const rpc = new FakeCatalogRpc();
  const sink = new CaptureSink();
  const logger = createLogger({ sink, level: "debug", now: () => clock.wallNow() });
  const tokens = { agent: () => "agent-secret", user: () => "default-secret", configFile: () => options.configFile ?? "" };
  const agent = new LocalAgent({ node, clock, rng: new Rng(1), logger, rpc, tokens, checkUpdateIntervalMs: 0, ...(options.store ? { store: options.store } : {}) });
  return { clock, rpc, sink, agent };
}

/** The token each Catalog.Register / Deregister carried, keyed by what it wrote. */
function tokensUsed(rpc: FakeCatalogRpc): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const c of rpc.calls) {
    if (c.method === "Catalog.Register") {
      const a = c.args as RpcArgs<"Catalog.Register">;
      const checks = [...(a.check ? [a.check] : []), ...(a.checks ?? [])].map((x) => x.checkId).join(",");
      out[a.service ? `register service:${a.service.id}${checks ? `+${checks}` : ""}` : checks ? `register check:${checks}` : "register node"] = a.token;
    } else if (c.method === "Catalog.Deregister") {
      const a = c.args as RpcArgs<"Catalog.Deregister">;
      out[`deregister ${a.serviceId ? `service:${a.serviceId}` : `check:${a.checkId}`}`] = a.token;
    }
  }
  return out;
}

test("sync tokens: a service syncs with its own token, else the registering request's, else the default; the node and deletions with the agent token", async () => {
  const { clock, rpc, agent } = setup();
  agent.start({ services: [{ name: "files", port: 1 }], checks: [] });
  await clock.runFor(10);
  agent.addService(decodeServiceDefinition({ Name: "own", Port: 2, Token: "own-secret", Check: { TTL: "30s" } }));
  agent.addService(decodeServiceDefinition({ Name: "api", Port: 3, Check: { TTL: "30s" } }), { token: "request-secret" });
  agent.addService(decodeServiceDefinition({ Name: "bare", Port: 4 }), { token: "" });
  agent.addCheck(decodeCheckDefinition({ Name: "extra", ServiceID: "own", TTL: "30s" }), { token: "other-secret" });
  agent.addCheck(decodeCheckDefinition({ Name: "disk", TTL: "30s" }));
  await agent.syncChanges();
  assert.deepEqual(tokensUsed(rpc), {
    "register service:files": "default-secret",
    "register service:own+service:own": "own-secret",
    "register service:api+service:api": "request-secret",
    "register service:bare": "default-secret",
    // A check with another token is not carried by the service's write: it goes alone, with its token.
    "register service:own+extra": "other-secret",
    "register check:disk": "default-secret",
  });
  rpc.calls.length = 0;
  agent.removeService("own");
  await agent.syncChanges();
  // Deregistering the service takes its checks with it.
  assert.deepEqual(tokensUsed(rpc), { "deregister service:own": "agent-secret" });
});

test("sync tokens: config-file entries without a token use config_file_service_registration; the node alone uses the agent token", async () => {
  const { clock, rpc, agent } = setup({ configFile: "files-secret" });
  agent.start({ services: [{ name: "files", port: 1 }, { name: "mine", port: 2, token: "mine-secret" }], checks: [{ name: "load", ttl: "30s" }] });
  await clock.runFor(10);
  assert.deepEqual(tokensUsed(rpc), {
    "register service:files": "files-secret",
    "register service:mine": "mine-secret",
    "register check:load": "files-secret",
  });
  const second = setup();
  second.agent.start();
  await second.clock.runFor(10);
  assert.deepEqual(tokensUsed(second.rpc), { "register node": "agent-secret" });
});

test("sync tokens: a write the ACLs refuse is logged and skipped, the rest syncs, and a full sync tries it again", async () => {
  const { clock, rpc, sink, agent } = setup();
  agent.start();
  await clock.runFor(10);
  rpc.refuse = (method, args) =>
    method === "Catalog.Register" && (args as RpcArgs<"Catalog.Register">).token === "weak-secret" ? new PermissionDeniedError('token lacks permission \'service:write\' on "denied"') : undefined;
  agent.addService(decodeServiceDefinition({ Name: "denied", Port: 1 }), { token: "weak-secret" });
  agent.addService(decodeServiceDefinition({ Name: "allowed", Port: 2 }), { token: "good-secret" });
  await agent.syncChanges();
  assert.equal(rpc.services.get("n1")?.has("allowed"), true);
  assert.equal(rpc.services.get("n1")?.has("denied"), false);
  assert.deepEqual(agent.state.syncStatus().services, { allowed: "in_sync", denied: "in_sync" });
  assert.ok(sink.records.some((r) => r.message === "catalog sync blocked by ACLs" && r.fields.entry === "service:denied"));
  // Nothing is retried until the next full sync; that one tries again (and the token is never logged).
  const before = rpc.count("Catalog.Register");
  await agent.syncChanges();
  assert.equal(rpc.count("Catalog.Register"), before);
  rpc.refuse = undefined;
  await agent.antiEntropy!.syncFull();
  assert.equal(rpc.services.get("n1")?.has("denied"), true);
  assert.ok(!JSON.stringify(sink.records).includes("weak-secret"));
});

test("sync tokens: a registration's token is persisted with it and used again after a restart", async () => {
  const store = new MemoryDefinitionStore();
  const first = setup({ store });
  first.agent.start();
  await first.clock.runFor(10);
  first.agent.addService(decodeServiceDefinition({ Name: "api", Port: 3, Check: { TTL: "30s" } }), { token: "request-secret" });
  first.agent.stop();
  const second = setup({ store });
  second.agent.start();
  await second.clock.runFor(10);
  assert.equal(tokensUsed(second.rpc)["register service:api+service:api"], "request-secret");
});
