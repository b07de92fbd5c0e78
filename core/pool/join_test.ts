import assert from "node:assert/strict";
import { test } from "node:test";
import { floodTargets } from "./join.ts";

const server = (name: string, o: { dc?: string; status?: string; port?: string; addr?: string } = {}) => ({
  name,
  addr: o.addr ?? "10.0.0.1",
  status: o.status ?? "alive",
  tags: { role: "consul", dc: o.dc ?? "dc1", ...(o.port === "" ? {} : { wan_join_port: o.port ?? "8302" }) },
});

test("wan flood: every alive server of our datacenter the WAN pool lacks, at its WAN join port; not ourselves, clients, other datacenters", () => {
  const lan = [
    server("s1"),
    server("s2", { addr: "10.0.0.2" }),
    server("s3", { addr: "10.0.0.3", port: "9302" }),
    server("s4", { status: "failed" }),
    server("s5", { dc: "dc2" }),
    server("s6", { port: "" }),
    server("s7", { addr: "::1" }),
    { name: "c1", addr: "10.0.0.9", status: "alive", tags: { role: "node", dc: "dc1" } },
  ];
  assert.deepEqual(floodTargets(lan, new Set(["s1.dc1", "s2.dc1"]), { datacenter: "dc1", self: "s1" }), ["10.0.0.3:9302", "[::1]:8302"]);
  assert.deepEqual(floodTargets(lan, new Set(["s1.dc1", "s2.dc1", "s3.dc1", "s7.dc1"]), { datacenter: "dc1", self: "s1" }), []);
});
