import assert from "node:assert/strict";
import { test } from "node:test";
import type { Clock } from "../clock/mod.ts";
import { nullLogger } from "../log/mod.ts";
import { UserEventStore } from "../agent/user_events.ts";
import { fakeGossip } from "./_fake_gossip.ts";
import { coordinateRoutes } from "./coordinate.ts";
import { eventRoutes } from "./event.ts";
import { keyringRoutes } from "./keyring.ts";
import type { PoolMember } from "../agent/gossip.ts";
import { memberJson, memberRoutes } from "./members.ts";
import { Router } from "./routes.ts";
import { makeRequest } from "./types.ts";

// A real clock whose timers keep the test process alive (systemClock's are unref'd).
const clock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimer(ms, fn) {
    const h = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(h) };
  },
};

function setup(options: { wan?: boolean } = {}) {
  const gossip = fakeGossip(options);
  let leaves = 0;
  const events = new UserEventStore({ pool: gossip.lan, nodeName: "n1", localServices: () => [{ service: "web", tags: ["v1"] }], clock, logger: nullLogger() });
  const router = new Router([
    ...memberRoutes({ gossip, onLeave: () => leaves++ }),
    ...keyringRoutes({ keyring: gossip.keyring }),
    ...eventRoutes({ events }),
    ...coordinateRoutes({ gossip }),
  ]);
  const call = async (method: string, target: string, body?: string) => {
    const r = await router.handle(makeRequest(method, target, { body }));
    const text = typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
    return { status: r.status, text, headers: r.headers, json: () => JSON.parse(text) as unknown };
  };
  return { gossip, call, events, leaves: () => leaves };
}

test("members: Consul's JSON, sorted; ?wan needs a server", async () => {
  const { call } = setup();
  const r = await call("GET", "/v1/agent/members");
  assert.equal(r.status, 200);
  const list = r.json() as Array<Record<string, unknown>>;
  assert.deepEqual(list.map((m) => [m.Name, m.Status, m.Port]), [["n1", 1, 8301], ["n2", 4, 8311]]);
  assert.deepEqual(Object.keys(list[0]!), ["Name", "Addr", "Port", "Tags", "Status", "ProtocolMin", "ProtocolMax", "ProtocolCur", "DelegateMin", "DelegateMax", "DelegateCur"]);
  assert.equal((await call("GET", "/v1/agent/members?wan")).status, 400);
  const wan = await setup({ wan: true }).call("GET", "/v1/agent/members?wan=1");
  assert.deepEqual((wan.json() as Array<{ Name: string }>).map((m) => m.Name), ["n1.dc1"]);
});

test("members: each member's JSON is reused until the member changes (status, tags, address)", async () => {
  const { gossip, call } = setup();
  const plain = () => JSON.stringify(gossip.lan.members().sort((a, b) => (a.name < b.name ? -1 : 1)).map(memberJson));
  assert.equal((await call("GET", "/v1/agent/members")).text, plain());
  const [n1, n2] = gossip.lan.list as [PoolMember, PoolMember];
  gossip.lan.list = [n1, { ...n2, status: "alive" }];
  assert.equal((await call("GET", "/v1/agent/members")).text, plain());
  gossip.lan.list = [{ ...n1, tags: { ...n1.tags, role: "consul" } }, { ...n2, status: "alive", addr: "10.0.0.9" }];
  const r = await call("GET", "/v1/agent/members");
  assert.equal(r.text, plain());
  assert.equal(r.headers["Content-Type"], "application/json");
  assert.deepEqual((r.json() as Array<{ Status: number; Addr: string }>).map((m) => [m.Status, m.Addr]), [[1, n1.addr], [1, "10.0.0.9"]]);
  // ?pretty is indented, with the same content.
  const pretty = await call("GET", "/v1/agent/members?pretty");
  assert.match(pretty.text, /^\[\n {4}\{/);
  assert.deepEqual(pretty.json(), r.json());
});

test("join, leave, force-leave", async () => {
  const { gossip, call, leaves } = setup();
  assert.equal((await call("PUT", "/v1/agent/join/10.0.0.1:8301")).status, 200);
  assert.deepEqual(gossip.lan.joins, [["10.0.0.1:8301"]]);
  gossip.lan.joinResult = { joined: 0, errors: ["Failed to join 10.0.0.2:8301: connection refused"] };
  const bad = await call("PUT", "/v1/agent/join/10.0.0.2:8301");
  assert.equal(bad.status, 500);
  assert.match(bad.text, /1 error occurred:\n\t\* Failed to join 10\.0\.0\.2:8301: connection refused/);
  assert.equal((await call("GET", "/v1/agent/join/x")).status, 405);
  assert.equal((await call("PUT", "/v1/agent/force-leave/n2?prune")).status, 200);
  assert.deepEqual(gossip.lan.forceLeaves, [{ node: "n2", prune: true }]);
  const ghost = await call("PUT", "/v1/agent/force-leave/ghost");
  assert.equal(ghost.status, 500);
  assert.match(ghost.text, /No node found with name 'ghost'/);
  assert.equal((await call("PUT", "/v1/agent/leave")).status, 200);
  assert.equal(gossip.lan.left, true);
  assert.equal(leaves(), 1);
});

test("keyring: list JSON, install/use/remove bodies, errors as Consul's", async () => {
  const { gossip, call } = setup();
  const r = await call("GET", "/v1/operator/keyring");
  assert.equal(r.status, 200);
  assert.deepEqual(r.json(), [{ WAN: false, Datacenter: "dc1", Segment: "", Messages: {}, Keys: { "K1==": 2 }, PrimaryKeys: { "K1==": 2 }, NumNodes: 2, Error: "" }]);
  assert.equal((await call("POST", "/v1/operator/keyring", JSON.stringify({ Key: "K2==" }))).status, 200);
  assert.equal((await call("PUT", "/v1/operator/keyring", JSON.stringify({ Key: "K2==" }))).status, 200);
  assert.equal((await call("DELETE", "/v1/operator/keyring", JSON.stringify({ Key: "K1==" }))).status, 200);
  assert.deepEqual(gossip.keyring.calls, ["list", "install K2==", "use K2==", "remove K1=="]);
  const garbage = await call("POST", "/v1/operator/keyring", "{nope");
  assert.equal(garbage.status, 400);
  assert.match(garbage.text, /Request decode failed/);
  gossip.keyring.answer = [{ wan: false, datacenter: "dc1", segment: "", keys: {}, primaryKeys: {}, numNodes: 2, messages: { n2: "Requested key is not in the keyring" }, error: "1/2 nodes reported failure" }];
  const failed = await call("PUT", "/v1/operator/keyring", JSON.stringify({ Key: "K9==" }));
  assert.equal(failed.status, 500);
  assert.equal(failed.text, "2 errors occurred:\n\t* dc1 (LAN) error: 1/2 nodes reported failure\n\t* n2: Requested key is not in the keyring\n\n");
});

test("events: fire returns Consul's JSON; list filters by name and blocks on the index", async () => {
  const { gossip, call } = setup();
  const fired = await call("PUT", "/v1/event/fire/deploy?node=^n", "v1");
  assert.equal(fired.status, 200);
  const e = fired.json() as Record<string, unknown>;
  assert.deepEqual(Object.keys(e), ["ID", "Name", "Payload", "NodeFilter", "ServiceFilter", "TagFilter", "Version", "LTime"]);
  assert.equal(e.Name, "deploy");
  assert.equal(e.Payload, Buffer.from("v1").toString("base64"));
  assert.equal(e.NodeFilter, "^n");
  assert.equal(gossip.lan.fired[0]!.name, "consul:event:deploy");
  assert.equal((await call("PUT", "/v1/event/fire/x?tag=v1")).status, 400, "tag filter needs a service filter");
  assert.equal((await call("PUT", "/v1/event/fire/x?node=(")).status, 400);
  // Filtered out here: another node, another service.
  await call("PUT", "/v1/event/fire/other?node=^zz$");
  await call("PUT", "/v1/event/fire/other?service=^db$");
  await call("PUT", "/v1/event/fire/svc?service=^web$&tag=^v1$");
  const list = await call("GET", "/v1/event/list");
  assert.deepEqual((list.json() as Array<{ Name: string }>).map((x) => x.Name), ["deploy", "svc"]);
  const index = list.headers["X-Consul-Index"]!;
  assert.match(index, /^\d+$/);
  const empty = await call("GET", "/v1/event/list?name=none");
  assert.equal(empty.headers["X-Consul-Index"], "1");
  // Blocking: same index waits until a new event arrives.
  const pending = call("GET", `/v1/event/list?index=${index}&wait=5s`);
  setTimeout(() => gossip.lan.deliver("plain", new TextEncoder().encode("p")), 30);
  const woke = await pending;
  assert.notEqual(woke.headers["X-Consul-Index"], index);
  assert.deepEqual((woke.json() as Array<{ Name: string }>).map((x) => x.Name), ["deploy", "svc", "plain"]);
  const timedOut = await call("GET", `/v1/event/list?index=${woke.headers["X-Consul-Index"]}&wait=50ms`);
  assert.equal(timedOut.headers["X-Consul-Index"], woke.headers["X-Consul-Index"]);
  // A bad Consul payload is dropped, not thrown.
  gossip.lan.deliver("consul:event:bad", new Uint8Array([0xc1]));
  assert.equal(((await call("GET", "/v1/event/list")).json() as unknown[]).length, 3);
});

test("coordinates: nodes from the LAN pool, datacenters from WAN", async () => {
  const { gossip, call } = setup({ wan: true });
  const coord = { vec: [0, 0, 0, 0, 0, 0, 0, 0.001], error: 0.5, adjustment: 0, height: 0.0001 };
  gossip.lan.coords.set("n2", coord);
  gossip.lan.coords.set("n1", coord);
  gossip.wan!.coords.set("n1.dc1", coord);
  const nodes = (await call("GET", "/v1/coordinate/nodes")).json() as Array<{ Node: string; Coord: { Vec: number[] } }>;
  assert.deepEqual(nodes.map((n) => n.Node), ["n1", "n2"]);
  assert.equal(nodes[0]!.Coord.Vec.length, 8);
  assert.equal((await call("GET", "/v1/coordinate/node/n2")).status, 200);
  assert.equal((await call("GET", "/v1/coordinate/node/zz")).status, 404);
  const dcs = (await call("GET", "/v1/coordinate/datacenters")).json() as Array<{ Datacenter: string; AreaID: string; Coordinates: Array<{ Node: string }> }>;
  assert.deepEqual(dcs.map((d) => [d.Datacenter, d.AreaID, d.Coordinates.map((c) => c.Node)]), [["dc1", "wan", ["n1.dc1"]]]);
  assert.deepEqual((await setup().call("GET", "/v1/coordinate/datacenters")).json(), []);
});
