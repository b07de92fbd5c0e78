import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng } from "../sim/rng.ts";
import { WanRoutes, type WanServer } from "./wan_routes.ts";

test("WanRoutes.datacenterOf: the datacenter of any server the WAN pool knows, failed ones too", () => {
  const servers: WanServer[] = [
    { name: "a.dc2", datacenter: "dc2", address: "127.0.0.2:8300", status: "alive" },
    { name: "b.dc3", datacenter: "dc3", address: "127.0.0.3:8300", status: "failed" },
  ];
  const routes = new WanRoutes({ localDatacenter: "dc1", servers: () => servers, rng: new Rng(1) });
  assert.equal(routes.datacenterOf("127.0.0.2:8300"), "dc2");
  assert.equal(routes.datacenterOf("127.0.0.3:8300"), "dc3");
  assert.equal(routes.datacenterOf("127.0.0.9:8300"), undefined);
});
