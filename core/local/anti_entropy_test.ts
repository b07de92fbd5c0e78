import assert from "node:assert/strict";
import { test } from "node:test";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeCatalogRpc } from "./_fake_catalog_rpc.ts";
import { scaleFactor } from "./anti_entropy.ts";
import { decodeServiceDefinition } from "../service_defs/definition.ts";
import { LocalAgent } from "./local_agent.ts";

const node = { node: "n1", id: "11111111-2222-3333-4444-555555555555", address: "10.0.0.1", taggedAddresses: { lan: "10.0.0.1" }, meta: { rack: "a" } };

function setup(seed = 1, options: { checkUpdateIntervalMs?: number } = {}) {
  const clock = new SimClock();
  const rpc = new FakeCatalogRpc();
  const sink = new CaptureSink();
  const logger = createLogger({ sink, level: "debug", now: () => clock.wallNow() });
  const agent = new LocalAgent({ node, clock, rng: new Rng(seed), logger, rpc, checkUpdateIntervalMs: options.checkUpdateIntervalMs ?? 0 });
  return { clock, rpc, sink, agent };
}

const redis = (extra: Record<string, unknown> = {}) =>
  decodeServiceDefinition({ Name: "redis", Port: 6379, Tags: ["primary"], Check: { TTL: "30s" }, ...extra });

test("scaleFactor: 1 up to 128 nodes, then one more per doubling", () => {
  for (const [n, f] of [[1, 1], [128, 1], [129, 2], [256, 2], [257, 3], [512, 3], [1024, 4], [8192, 7]] as const) {
    assert.equal(scaleFactor(n), f, `nodes=${n}`);
  }
});

test("anti-entropy: start registers the node; a registration is pushed with its checks before the write returns", async () => {
  const { clock, rpc, agent } = setup();
  agent.start();
  await clock.runFor(10);
  assert.equal(rpc.nodes.get("n1")?.address, "10.0.0.1");
  assert.deepEqual(rpc.nodes.get("n1")?.meta, { rack: "a" });
  agent.addService(redis());
  await agent.syncChanges();
  const svc = rpc.services.get("n1")?.get("redis");
  assert.equal(svc?.port, 6379);
  assert.deepEqual(svc?.tags, ["primary"]);
  const chk = rpc.checks.get("n1")?.get("service:redis");
  assert.equal(chk?.status, "critical");
  assert.equal(chk?.serviceName, "redis");
  assert.equal(chk?.type, "ttl");
  const reg = rpc.calls.filter((c) => c.method === "Catalog.Register").at(-1)!.args as { skipNodeUpdate: boolean };
  assert.equal(reg.skipNodeUpdate, true, "node already in sync: the service push skips the node update");
  assert.deepEqual(agent.state.syncStatus(), { services: { redis: "in_sync" }, checks: { "service:redis": "in_sync" } });
  agent.stop();
});

test("anti-entropy: a TTL pass is pushed at once; deregistration deletes service and checks from the catalog", async () => {
  const { clock, rpc, agent } = setup();
  agent.start();
  agent.addService(redis());
  await clock.runFor(10);
  agent.updateTtlCheck("service:redis", "passing", "ok");
  await agent.syncChanges();
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.status, "passing");
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.output, "ok");
  agent.removeService("redis");
  await agent.syncChanges();
  assert.equal(rpc.services.get("n1")?.has("redis"), false);
  assert.equal(rpc.checks.get("n1")?.has("service:redis"), false);
  assert.deepEqual(agent.state.syncStatus(), { services: {}, checks: {} });
  agent.stop();
});

test("anti-entropy: a full sync repairs drift both ways and leaves serfHealth and the consul service alone", async () => {
  const { clock, rpc, agent } = setup();
  agent.start();
  agent.addService(redis());
  await clock.runFor(10);
  // Someone edits the catalog behind the agent's back.
  rpc.putService("n1", { id: "stray", service: "stray" });
  rpc.putCheck("n1", { checkId: "stray-check" });
  rpc.putCheck("n1", { checkId: "serfHealth", type: "serf" });
  rpc.putService("n1", { id: "consul", service: "consul" });
  rpc.putService("n1", { id: "redis", service: "redis", port: 1 });
  rpc.checks.get("n1")!.delete("service:redis");
  await agent.antiEntropy!.syncFull();
  assert.equal(rpc.services.get("n1")?.has("stray"), false);
  assert.equal(rpc.checks.get("n1")?.has("stray-check"), false);
  assert.equal(rpc.checks.get("n1")?.has("serfHealth"), true);
  assert.equal(rpc.services.get("n1")?.has("consul"), true);
  assert.equal(rpc.services.get("n1")?.get("redis")?.port, 6379);
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.name, "Service 'redis' check");
  agent.stop();
});

test("anti-entropy: the periodic full sync finds drift within interval + stagger", async () => {
  for (const seed of seeds(5)) {
    const { clock, rpc, agent } = setup(seed);
    agent.start();
    agent.addService(redis());
    await clock.runFor(10);
    rpc.services.get("n1")!.delete("redis");
    // Interval 60s, stagger < 60s at scale 1: repaired within 120s.
    await clock.runUntil(() => rpc.services.get("n1")?.has("redis") === true, { maxMs: 120_000, what: `seed=${seed}` });
    agent.stop();
  }
});

test("anti-entropy: retries after failures (no leader) and converges", async () => {
  for (const seed of seeds(5)) {
    const { clock, rpc, agent, sink } = setup(seed);
    rpc.failCalls = 3;
    agent.start();
    agent.addService(redis());
    await clock.runFor(10);
    assert.equal(rpc.nodes.has("n1"), false, `seed=${seed}: first passes fail`);
    assert.ok(sink.records.some((r) => r.level === "error" && r.message.startsWith("failed to sync")), `seed=${seed}: failure logged`);
    // Retry after 15s + stagger (< 30s); three failures may take three rounds.
    await clock.runUntil(() => rpc.services.get("n1")?.has("redis") === true, { maxMs: 3 * 30_000 + 1_000, what: `seed=${seed}` });
    assert.equal(rpc.checks.get("n1")?.get("service:redis")?.status, "critical");
    assert.ok(agent.antiEntropy!.passes.failed >= 1);
    agent.stop();
  }
});

test("anti-entropy: a failed partial push (leader change) is repaired by the retry", async () => {
  const { clock, rpc, agent } = setup(7);
  agent.start();
  await clock.runFor(10);
  rpc.failCalls = 1;
  agent.addService(redis());
  await agent.syncChanges();
  assert.equal(rpc.services.get("n1")?.has("redis") ?? false, false);
  assert.deepEqual(agent.state.syncStatus().services, { redis: "push" });
  await clock.runUntil(() => rpc.services.get("n1")?.has("redis") === true, { maxMs: 31_000 });
  agent.stop();
});

test("anti-entropy: output-only changes wait check_update_interval, status changes go at once", async () => {
  const { clock, rpc, agent } = setup(3, { checkUpdateIntervalMs: 300_000 });
  agent.start();
  agent.addService(redis({ Check: { TTL: "1h" } }));
  await clock.runFor(10);
  agent.updateTtlCheck("service:redis", "passing", "one");
  await agent.syncChanges();
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.output, "one");
  agent.updateTtlCheck("service:redis", "passing", "two");
  await clock.runFor(1_000);
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.output, "one", "output-only change deferred");
  // A full sync in between does not count the deferred output as drift.
  await agent.antiEntropy!.syncFull();
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.output, "one");
  // Pushed within [interval/2, 3·interval/2) of the change (consul UpdateCheck's d/2 + RandomStagger(d)).
  await clock.runFor(450_000);
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.output, "two");
  agent.updateTtlCheck("service:redis", "warning", "three");
  await agent.syncChanges();
  assert.equal(rpc.checks.get("n1")?.get("service:redis")?.status, "warning");
  agent.stop();
});

test("anti-entropy: node maintenance is a node-level critical check in the catalog", async () => {
  const { clock, rpc, agent } = setup();
  agent.start();
  await clock.runFor(10);
  agent.enableNodeMaintenance("");
  await agent.syncChanges();
  const c = rpc.checks.get("n1")?.get("_node_maintenance");
  assert.equal(c?.status, "critical");
  assert.equal(c?.name, "Node Maintenance Mode");
  assert.match(c?.notes ?? "", /no reason was provided/);
  agent.disableNodeMaintenance();
  await agent.syncChanges();
  assert.equal(rpc.checks.get("n1")?.has("_node_maintenance"), false);
  agent.stop();
});

test("check_update_interval: a deferred output goes out between half and one and a half intervals after the change, staggered by the seed", async () => {
  const waits = new Set<number>();
  for (const seed of seeds(8)) {
    const { clock, rpc, agent } = setup(seed, { checkUpdateIntervalMs: 60_000 });
    agent.start();
    agent.addService(redis({ Check: { TTL: "1h" } }));
    await clock.runFor(10);
    agent.updateTtlCheck("service:redis", "passing", "one");
    await agent.syncChanges();
    agent.updateTtlCheck("service:redis", "passing", "two");
    const changedAt = clock.now();
    await clock.runUntil(() => rpc.checks.get("n1")?.get("service:redis")?.output === "two", { maxMs: 100_000 });
    const waited = clock.now() - changedAt;
    assert.ok(waited >= 30_000 && waited < 90_000 + 1_000, `seed ${seed}: pushed after ${waited} ms`);
    waits.add(Math.floor(waited / 1_000));
    agent.stop();
  }
  assert.ok(waits.size > 1, `the wait varies with the seed: ${[...waits].join(", ")}`);
});
