// Anti-entropy under random registrations, check results, catalog drift and
// RPC failures: once failures stop, the catalog's view of the node must
// equal the agent's local state within one full-sync period.
import assert from "node:assert/strict";
import { test } from "node:test";
import { nullLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeCatalogRpc } from "./_fake_catalog_rpc.ts";
import { decodeCheckDefinition, decodeServiceDefinition } from "../service_defs/definition.ts";
import { LocalAgent } from "./local_agent.ts";
import type { HealthStatus } from "../service_defs/types.ts";

const node = { node: "n1", id: "", address: "10.0.0.1", taggedAddresses: {}, meta: {} };

function catalogView(rpc: FakeCatalogRpc) {
  const services = [...(rpc.services.get("n1")?.values() ?? [])].map((s) => `${s.id}:${s.service}:${s.port}:${s.tags.join(",")}`).sort();
  const checks = [...(rpc.checks.get("n1")?.values() ?? [])]
    .filter((c) => c.checkId !== "serfHealth")
    .map((c) => `${c.checkId}:${c.status}:${c.serviceId}`)
    .sort();
  return { services, checks };
}

function localView(a: LocalAgent) {
  return {
    services: a.state.services().map((s) => `${s.id}:${s.service}:${s.port}:${s.tags.join(",")}`),
    checks: a.state.checks().map((c) => `${c.checkId}:${c.status}:${c.serviceId}`).sort(),
  };
}

test("anti-entropy converges after random changes, drift and failures", async () => {
  for (const seed of seeds(8)) {
    const rng = new Rng(seed);
    const clock = new SimClock();
    const rpc = new FakeCatalogRpc();
    rpc.putCheck("n1", { checkId: "serfHealth", type: "serf" });
    const a = new LocalAgent({ node, clock, rng: rng.fork(), logger: nullLogger(), rpc, checkUpdateIntervalMs: 0 });
    a.start();
    const names = ["web", "db", "cache", "api"];
    const statuses: HealthStatus[] = ["passing", "warning", "critical"];
    for (let step = 0; step < 60; step++) {
      const op = rng.int(8);
      const name = rng.pick(names);
      try {
        if (op === 0) a.addService(decodeServiceDefinition({ Name: name, Port: rng.int(100), Tags: rng.chance(0.5) ? ["x"] : [], Checks: [{ TTL: "1h" }, { TTL: "1h" }].slice(0, rng.int(3)) }));
        else if (op === 1 && a.state.service(name)) a.removeService(name);
        else if (op === 2) a.addCheck(decodeCheckDefinition({ Name: `node-${name}`, TTL: "1h" }));
        else if (op === 3 && a.state.check(`node-${name}`)) a.removeCheck(`node-${name}`);
        else if (op === 4) {
          const checks = a.state.checks().filter((c) => c.type === "ttl");
          if (checks.length > 0) a.updateTtlCheck(rng.pick(checks).checkId, rng.pick(statuses), `out ${step}`);
        } else if (op === 5) rpc.failCalls = rng.int(3);
        else if (op === 6) {
          // Drift: someone edits the catalog directly.
          if (rng.chance(0.5)) rpc.putService("n1", { id: `stray-${step}`, service: "stray" });
          else rpc.services.get("n1")?.delete(rng.pick(names));
        } else if (op === 7 && a.state.service(name)) a.enableServiceMaintenance(name, "");
      } catch (err) {
        assert.fail(`seed=${seed} step=${step}: ${String(err)}`);
      }
      await clock.runFor(rng.int(5_000));
    }
    rpc.failCalls = 0;
    // Retry (<30s) then the periodic full sync (<120s) repairs everything.
    await clock.runUntil(() => JSON.stringify(catalogView(rpc)) === JSON.stringify(localView(a)), { maxMs: 160_000, what: `seed=${seed}` })
      .catch(() => assert.deepEqual(catalogView(rpc), localView(a), `seed=${seed}`));
    assert.ok(rpc.checks.get("n1")?.has("serfHealth"), `seed=${seed}: serfHealth kept`);
    a.stop();
  }
});
