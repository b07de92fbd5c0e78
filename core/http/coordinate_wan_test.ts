import assert from "node:assert/strict";
import { test } from "node:test";
import type { Coordinate } from "../gossip/coordinate.ts";
import { coordinateDatacentersHandler, wanDatacenterMaps } from "./coordinate.ts";
import type { GossipBackend, GossipPoolBackend } from "./backends.ts";
import type { HttpRequest } from "./types.ts";

const at = (x: number): Coordinate => ({ vec: [x, 0, 0, 0, 0, 0, 0, 0], error: 0.1, adjustment: 0, height: 0 });

function pool(members: Array<{ name: string; dc: string; x: number }>): Pick<GossipPoolBackend, "members" | "coordinates"> {
  return {
    members: () => members.map((m) => ({ name: m.name, addr: "10.0.0.1", port: 8302, tags: { dc: m.dc, role: "consul" }, status: "alive", protocolMin: 1, protocolMax: 5, protocolCur: 2, delegateMin: 2, delegateMax: 5, delegateCur: 4 })),
    coordinates: () => members.map((m) => ({ node: m.name, coord: at(m.x) })),
  };
}

test("coordinate datacenters: ours first, then by median WAN round trip from this server, nodes by name", () => {
  const wan = pool([
    { name: "b.dc1", dc: "dc1", x: 0.001 },
    { name: "a.dc1", dc: "dc1", x: 0 },
    { name: "far1.dc3", dc: "dc3", x: 0.2 },
    { name: "far2.dc3", dc: "dc3", x: 0.25 },
    { name: "near.dc2", dc: "dc2", x: 0.05 },
    { name: "azz.dc0", dc: "dc0", x: 0.3 },
  ]);
  const maps = wanDatacenterMaps(wan, { node: "a", datacenter: "dc1" });
  assert.deepEqual(maps.map((m) => m.Datacenter), ["dc1", "dc2", "dc3", "dc0"], "not by name: by RTT");
  assert.deepEqual(maps[0]!.Coordinates.map((c) => c.Node), ["a.dc1", "b.dc1"]);
  assert.equal(maps[0]!.AreaID, "wan");
  const fromDc3 = wanDatacenterMaps(wan, { node: "far1", datacenter: "dc3" });
  assert.deepEqual(fromDc3.map((m) => m.Datacenter), ["dc3", "dc0", "dc2", "dc1"]);
});

test("coordinate datacenters: a client (no WAN pool) asks a server", async () => {
  const asked: string[] = [];
  const handler = coordinateDatacentersHandler({
    gossip: { lan: {} as GossipPoolBackend } as GossipBackend,
    operator: { callRaw: (method) => (asked.push(method), Promise.resolve([{ Datacenter: "dc1", AreaID: "wan", Coordinates: [] }])) },
    self: { node: "c1", datacenter: "dc1" },
  });
  const res = await handler({ method: "GET", path: "/v1/coordinate/datacenters", query: new URLSearchParams(), headers: {} } as unknown as HttpRequest);
  assert.deepEqual(asked, ["Coordinate.ListDatacenters"]);
  assert.equal(res.status, 200);
  assert.deepEqual(JSON.parse(String(res.body)), [{ Datacenter: "dc1", AreaID: "wan", Coordinates: [] }]);
});
