import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { bodyJson, bodyText, testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

async function env() {
  const clock = new SimClock();
  const dev = await createDevServer({ clock, rng: new Rng(3), coordinateUpdate: { updatePeriodMs: 1_000 } });
  const router = createRoutes(testBackends({ rpc: createLocalRpc(dev.server), clock }));
  const req = (method: string, target: string, body?: unknown) =>
    router.handle(makeRequest(method, target, body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }));
  for (const node of ["web-1", "db-1"]) assert.equal((await req("PUT", "/v1/catalog/register", { Node: node, Address: "10.0.0.9" })).status, 200);
  return { clock, dev, req };
}

const coord = { Vec: [0.001, 0, 0, 0, 0, 0, 0, -0.002], Error: 0.25, Adjustment: 0.0001, Height: 0.00002 };

test("coordinate: PUT /v1/coordinate/update reaches /v1/coordinate/nodes after the leader's period, with the catalog's index", async () => {
  const { clock, dev, req } = await env();
  const empty = await req("GET", "/v1/coordinate/nodes");
  assert.equal(empty.status, 200);
  assert.equal(bodyText(empty), "[]");
  const emptyIndex = Number(empty.headers["X-Consul-Index"]);
  assert.ok(emptyIndex >= 1);
  const put = await req("PUT", "/v1/coordinate/update", { Node: "web-1", Segment: "", Coord: coord });
  assert.deepEqual([put.status, bodyText(put)], [200, ""]);
  assert.equal((await req("PUT", "/v1/coordinate/update", { Node: "db-1", Coord: { ...coord, Vec: [0, 0, 0, 0, 0, 0, 0, 0.003] } })).status, 200);
  // A blocking query on the list wakes when the batch lands.
  const blocked = req("GET", `/v1/coordinate/nodes?index=${emptyIndex}&wait=30s`);
  await clock.runFor(1_000);
  await drainMicrotasks();
  const woke = await blocked;
  assert.equal(woke.status, 200);
  const list = bodyJson(woke) as Array<{ Node: string; Segment: string; Coord: typeof coord }>;
  assert.deepEqual(list.map((c) => c.Node), ["db-1", "web-1"], "sorted by node name");
  assert.deepEqual(list[1], { Node: "web-1", Segment: "", Partition: "default", Coord: coord });
  assert.equal(Number(woke.headers["X-Consul-Index"]), dev.fsm.state.maxIndex("coordinates"));
  assert.ok(Number(woke.headers["X-Consul-Index"]) > emptyIndex);
  const one = await req("GET", "/v1/coordinate/node/web-1");
  assert.equal(one.status, 200);
  assert.deepEqual((bodyJson(one) as unknown[]).length, 1);
  assert.equal(bodyText(await req("GET", "/v1/coordinate/nodes?segment=alpha")), "[]");
  // Deregistering the node deletes its coordinate.
  assert.equal((await req("PUT", "/v1/catalog/deregister", { Node: "web-1" })).status, 200);
  const gone = await req("GET", "/v1/coordinate/node/web-1");
  assert.deepEqual([gone.status, bodyText(gone)], [404, ""]);
  assert.ok(gone.headers["X-Consul-Index"]);
  assert.deepEqual((bodyJson(await req("GET", "/v1/coordinate/nodes")) as Array<{ Node: string }>).map((c) => c.Node), ["db-1"]);
  await dev.stop();
});

test("coordinate: a bad update body is a 400 naming the problem; a non-finite or wrong-sized coordinate is refused", async () => {
  const { dev, req } = await env();
  const cases: Array<[unknown, RegExp]> = [
    ["{", /^Request decode failed/],
    [[1], /must be a JSON object/],
    [{ Node: "web-1" }, /Coord must be an object/],
    [{ Node: "web-1", Coord: { ...coord, Vec: "x" } }, /Coord.Vec must be a list of numbers/],
    [{ Node: "web-1", Coord: { ...coord, Error: "x" } }, /Coord.Error must be a number/],
    [{ Node: "web-1", Coord: { ...coord, Vec: [1, 2] } }, /incompatible coordinate/],
    [{ Node: "", Coord: coord }, /Must provide node/],
  ];
  for (const [body, want] of cases) {
    const r = await req("PUT", "/v1/coordinate/update", body);
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.match(bodyText(r), want);
  }
  assert.equal(dev.server.coordinateBatcher.pending, 0);
  await dev.stop();
});

test("coordinate: disable_coordinates answers every /v1/coordinate route with 401, as Consul", async () => {
  const router = createRoutes(testBackends({ disableCoordinates: true }));
  for (const [method, path] of [["GET", "/v1/coordinate/nodes"], ["GET", "/v1/coordinate/node/web-1"], ["GET", "/v1/coordinate/datacenters"], ["PUT", "/v1/coordinate/update"]] as const) {
    const r = await router.handle(makeRequest(method, path, { body: "{}" }));
    assert.deepEqual([r.status, bodyText(r)], [401, "Coordinate support disabled"], path);
  }
});
