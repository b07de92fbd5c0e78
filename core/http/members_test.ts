import assert from "node:assert/strict";
import { test } from "node:test";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeUserEvents } from "./_fake_backends.ts";
import { fakeGossip } from "./_fake_gossip.ts";
import { testBackends } from "./_test_env.ts";
import type { PoolMember } from "./backends.ts";
import { uuidToIndex } from "./event.ts";
import { memberJson } from "./members.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

function setup(options: { wan?: boolean } = {}) {
  const clock = new SimClock();
  const gossip = fakeGossip(options);
  let leaves = 0;
  const events = new FakeUserEvents(clock);
  const router = createRoutes(testBackends({ gossip, events, clock, onLeave: () => leaves++ }));
  const call = async (method: string, target: string, body?: string) => {
    const r = await router.handle(makeRequest(method, target, { body }));
    const text = typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
    return { status: r.status, text, headers: r.headers, json: () => JSON.parse(text) as unknown };
  };
  return { gossip, call, events, clock, leaves: () => leaves };
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

test("events: fire answers Consul's JSON; a bad filter is a 400; list carries the index of its last event and blocks on it", async () => {
  const { events, call, clock } = setup();
  const fired = await call("PUT", "/v1/event/fire/deploy?node=^n", "v1");
  assert.equal(fired.status, 200);
  const e = fired.json() as Record<string, unknown>;
  assert.deepEqual(Object.keys(e), ["ID", "Name", "Payload", "NodeFilter", "ServiceFilter", "TagFilter", "Version", "LTime"]);
  assert.deepEqual([e.Name, e.Payload, e.NodeFilter], ["deploy", Buffer.from("v1").toString("base64"), "^n"]);
  const refused = await call("PUT", "/v1/event/fire/x?tag=v1");
  assert.deepEqual([refused.status, refused.text], [400, "Cannot provide tag filter without service filter"]);
  assert.equal((await call("PUT", "/v1/event/fire/")).status, 400, "a name is needed");
  // ?dc naming another datacenter fires there (through a server of it); our own datacenter fires here.
  const across = await call("PUT", "/v1/event/fire/deploy?dc=dc2", "v2");
  assert.equal(across.status, 200);
  assert.deepEqual(events.firedIn.map((f) => [f.datacenter, f.event.name, (across.json() as { ID: string }).ID === f.event.id]), [["dc2", "deploy", true]]);
  assert.equal((await call("PUT", "/v1/event/fire/deploy?dc=dc1")).status, 200);
  assert.equal(events.firedIn.length, 1, "dc1 is ours");

  assert.equal((await call("GET", "/v1/event/list")).headers["X-Consul-Index"], "1", "no events");
  events.deliver("deploy");
  const last = events.deliver("other", new TextEncoder().encode("p"));
  const list = await call("GET", "/v1/event/list");
  assert.deepEqual((list.json() as Array<{ Name: string; Payload: string | null }>).map((x) => [x.Name, x.Payload]), [["deploy", null], ["other", "cA=="]]);
  const index = list.headers["X-Consul-Index"]!;
  assert.equal(index, uuidToIndex(last.id));
  assert.deepEqual((await call("GET", "/v1/event/list?name=deploy")).json(), [(list.json() as unknown[])[0]]);
  assert.equal((await call("GET", "/v1/event/list?index=x")).status, 400);

  // The same index waits for an event that changes the list, up to ?wait.
  const pending = call("GET", `/v1/event/list?index=${index}&wait=5s`);
  await clock.runFor(1_000);
  events.deliver("third");
  const woke = await pending;
  assert.notEqual(woke.headers["X-Consul-Index"], index);
  assert.equal((woke.json() as unknown[]).length, 3);
  const timedOut = call("GET", `/v1/event/list?index=${woke.headers["X-Consul-Index"]}&wait=50ms`);
  await clock.runFor(50);
  assert.equal((await timedOut).headers["X-Consul-Index"], woke.headers["X-Consul-Index"]);
});

test("event index: Consul's uuidToUint64", () => {
  assert.equal(uuidToIndex("00000000-0000-0000-0000-000000000001"), "1");
  assert.equal(uuidToIndex("00000000-0000-0001-0000-000000000000"), "1");
  assert.equal(uuidToIndex("00000000-0000-0002-0000-000000000001"), "3");
  assert.equal(uuidToIndex("bad"), "1");
});

test("coordinates: datacenters from the WAN pool (nodes come from the catalog: coordinate_test.ts)", async () => {
  const { gossip, call } = setup({ wan: true });
  const coord = { vec: [0, 0, 0, 0, 0, 0, 0, 0.001], error: 0.5, adjustment: 0, height: 0.0001 };
  gossip.wan!.coords.set("n1.dc1", coord);
  const dcs = (await call("GET", "/v1/coordinate/datacenters")).json() as Array<{ Datacenter: string; AreaID: string; Coordinates: Array<{ Node: string }> }>;
  assert.deepEqual(dcs.map((d) => [d.Datacenter, d.AreaID, d.Coordinates.map((c) => c.Node)]), [["dc1", "wan", ["n1.dc1"]]]);
  // A client (no WAN pool) asks a server: coordinate_wan_test.ts.
});

test("members: ?filter keeps the members whose AgentMember fields match; a bad filter is a 400", async () => {
  const { call } = setup();
  const byStatus = await call("GET", `/v1/agent/members?filter=${encodeURIComponent("Status == 4")}`);
  assert.equal(byStatus.status, 200);
  assert.deepEqual((byStatus.json() as Array<{ Name: string }>).map((m) => m.Name), ["n2"]);
  const byTag = await call("GET", `/v1/agent/members?filter=${encodeURIComponent('Tags.role == "node" and Name != "n2"')}`);
  assert.deepEqual((byTag.json() as Array<{ Name: string }>).map((m) => m.Name), ["n1"]);
  const none = await call("GET", `/v1/agent/members?filter=${encodeURIComponent("Port == 9000")}`);
  assert.deepEqual(none.json(), []);
  const bad = await call("GET", `/v1/agent/members?filter=${encodeURIComponent("Name ==")}`);
  assert.equal(bad.status, 400);
});
