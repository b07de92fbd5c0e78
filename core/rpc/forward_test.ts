import { test } from "node:test";
import assert from "node:assert/strict";
import { BadRequestError, DcUnavailableError, LeadershipLostError, NoLeaderError, NoPathToDatacenterError, NotLeaderError, OutcomeUnknownError, RequestExpiredError, RpcError, RpcTimeoutError } from "../errors.ts";
import { nullLogger } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { RpcRouter, type LocalHandler, type RemoteCaller } from "./forward.ts";
import { datacentersByDistance, WanRoutes } from "./wan_routes.ts";

interface Call {
  address: string;
  method: string;
  timeoutMs?: number;
}

function remoteOf(answer: (address: string, method: string) => unknown): RemoteCaller & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    call(address, method, _body, options) {
      calls.push({ address, method, timeoutMs: options?.timeoutMs });
      try {
        return Promise.resolve(answer(address, method));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

function router(o: { local?: LocalHandler; remote: RemoteCaller; servers?: string[]; clock: SimClock }): RpcRouter {
  return new RpcRouter({
    local: o.local,
    remote: o.remote,
    servers: () => o.servers ?? [],
    clock: o.clock,
    rng: new Rng(7),
    logger: nullLogger(),
    holdTimeoutMs: 7_000,
  });
}

test("rpc router: the leader answers locally; a follower forwards to the leader it names", async () => {
  const clock = new SimClock();
  const remote = remoteOf(() => "from-leader");
  const leader = router({ clock, remote, local: { handle: () => Promise.resolve("local") } });
  assert.equal(await leader.callRaw("KVS.Apply", {}), "local");
  assert.equal(remote.calls.length, 0);

  const follower = router({ clock, remote, local: { handle: () => Promise.reject(new NotLeaderError("10.0.0.1:8300")) } });
  assert.equal(await follower.callRaw("KVS.Get", { key: "a", query: { minQueryIndex: 5, maxQueryTimeMs: 16_000 } }), "from-leader");
  assert.equal(remote.calls[0]!.address, "10.0.0.1:8300");
  assert.equal(remote.calls[0]!.timeoutMs, 30_000 + 17_000, "blocking wait is added to the forward timeout");
});

test("rpc router: without a leader a call waits up to the hold timeout, then fails with No cluster leader", async () => {
  const clock = new SimClock();
  let tries = 0;
  const r = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => (tries++, Promise.reject(new NoLeaderError())) } });
  let outcome: unknown;
  const p = r.callRaw("KVS.Apply", {}).then((v) => (outcome = v), (e) => (outcome = e));
  await clock.runFor(6_900);
  assert.ok(outcome === undefined, "still holding before 7 s");
  await clock.runFor(500);
  await p;
  const err = outcome as unknown;
  assert.ok(err instanceof NoLeaderError, `got ${String(err)}`);
  assert.equal(err.message, "No cluster leader");
  assert.ok(tries > 5, `retried while holding (${tries} tries)`);
});

test("rpc router: a leader elected during the hold answers the held call", async () => {
  const clock = new SimClock();
  let leader = "";
  const r = router({
    clock,
    remote: remoteOf(() => "ok"),
    local: { handle: () => Promise.reject(leader === "" ? new NoLeaderError() : new NotLeaderError(leader)) },
  });
  let outcome: unknown;
  const p = r.callRaw("KVS.Apply", {}).then((v) => (outcome = v));
  await clock.runFor(2_000);
  leader = "10.0.0.2:8300";
  await clock.runFor(1_000);
  await p;
  assert.equal(outcome, "ok");
});

test("rpc router: errors the server answered with are not retried", async () => {
  const clock = new SimClock();
  let tries = 0;
  const r = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => (tries++, Promise.reject(new BadRequestError("Must provide key"))) } });
  await assert.rejects(r.callRaw("KVS.Apply", {}), BadRequestError);
  assert.equal(tries, 1);
});

test("rpc router: a client tries another server when one is unreachable, and keeps the one that answered", async () => {
  const clock = new SimClock();
  const remote = remoteOf((address) => {
    if (address === "10.0.0.1:8300") throw new RpcError(`Cannot connect to "${address}": connection refused`);
    return `answer from ${address}`;
  });
  const r = router({ clock, remote, servers: ["10.0.0.1:8300", "10.0.0.2:8300"] });
  for (let i = 0; i < 5; i++) {
    const p = r.callRaw("Status.Leader", {});
    await clock.runFor(1_000);
    assert.equal(await p, "answer from 10.0.0.2:8300");
  }
  const dead = remote.calls.filter((c) => c.address === "10.0.0.1:8300").length;
  assert.ok(dead <= 1, `the dead server was tried ${dead} times`);
});

test("rpc router: a client with no known servers fails after the hold timeout with a clear error", async () => {
  const clock = new SimClock();
  const r = router({ clock, remote: remoteOf(() => "x"), servers: [] });
  let outcome: unknown;
  const p = r.callRaw("KVS.Get", {}).catch((e) => (outcome = e));
  await clock.runFor(8_000);
  await p;
  assert.ok(outcome instanceof RpcError);
  assert.match((outcome as Error).message, /No known Consul servers/);
});

/** A local handler that records the request ids it was given. */
function recordingLocal(answer: (n: number, args: { requestId?: unknown }) => Promise<unknown>): LocalHandler & { ids: unknown[] } {
  const ids: unknown[] = [];
  return {
    ids,
    handle(_method, args) {
      ids.push((args as { requestId?: unknown }).requestId);
      return answer(ids.length, args as { requestId?: unknown });
    },
  };
}

test("rpc router: every write gets a request id; a read does not; an id from an earlier router is kept", async () => {
  const clock = new SimClock();
  const local = recordingLocal(() => Promise.resolve("ok"));
  const r = router({ clock, remote: remoteOf(() => "x"), local });
  await r.callRaw("KVS.Apply", { op: "set" });
  await r.callRaw("KVS.Apply", { op: "set" });
  await r.callRaw("KVS.Get", { key: "a" });
  await r.callRaw("Txn.Apply", { ops: [], requestId: ["7-x", 9] });
  const [a, b, read, kept] = local.ids as [[string, number], [string, number], unknown, unknown];
  assert.equal(a[0], b[0], "one issuer per router");
  assert.deepEqual([a[1], b[1]], [1, 2]);
  assert.match(a[0], /^\d+-[0-9a-z]+$/);
  assert.equal(read, undefined);
  assert.deepEqual(kept, ["7-x", 9]);
});

test("rpc router: a write whose leader was deposed mid-commit is sent again with the same id", async () => {
  const clock = new SimClock();
  const local = recordingLocal((n) => (n === 1 ? Promise.reject(new LeadershipLostError()) : Promise.resolve("first result")));
  const r = router({ clock, remote: remoteOf(() => "x"), local });
  const p = r.callRaw("KVS.Apply", { op: "cas" });
  await clock.runFor(2_000);
  assert.equal(await p, "first result");
  assert.equal(local.ids.length, 2);
  assert.deepEqual(local.ids[0], local.ids[1]);
});

test("rpc router: a client resends a write after a lost connection with the same id, to another server", async () => {
  const clock = new SimClock();
  const sent: { address: string; id: unknown }[] = [];
  const remote: RemoteCaller = {
    call(address, _method, body) {
      sent.push({ address, id: (body as { requestId?: unknown }).requestId });
      if (sent.length === 1) return Promise.reject(new RpcError(`Connection to "${address}" closed`));
      return Promise.resolve("ok");
    },
  };
  const r = router({ clock, remote, servers: ["10.0.0.1:8300", "10.0.0.2:8300"] });
  const p = r.callRaw("KVS.Apply", { op: "set" });
  await clock.runFor(2_000);
  assert.equal(await p, "ok");
  assert.equal(sent.length, 2);
  assert.notEqual(sent[0]!.address, sent[1]!.address);
  assert.deepEqual(sent[0]!.id, sent[1]!.id);
});

test("rpc router: a write that may have been applied and never got an answer ends as outcome unknown, not no leader", async () => {
  const clock = new SimClock();
  let n = 0;
  const r = router({
    clock,
    remote: remoteOf(() => "x"),
    local: { handle: () => Promise.reject(n++ === 0 ? new LeadershipLostError() : new NoLeaderError()) },
  });
  let outcome: unknown;
  const p = r.callRaw("KVS.Apply", { op: "set" }).catch((e) => (outcome = e));
  await clock.runFor(8_000);
  await p;
  assert.ok(outcome instanceof OutcomeUnknownError, `got ${String(outcome)}`);
  assert.match((outcome as Error).message, /outcome unknown/);
  assert.equal(r.stats.outcomeUnknown, 1);
  // The same errors without the deposed attempt: never sent, so "No cluster leader".
  const q = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => Promise.reject(new NoLeaderError()) } });
  const p2 = q.callRaw("KVS.Apply", { op: "set" }).catch((e) => e);
  await clock.runFor(8_000);
  assert.ok((await p2) instanceof NoLeaderError);
});

test("rpc router: a read is not retried after a timeout, a write is (with its id)", async () => {
  const clock = new SimClock();
  let reads = 0;
  const r = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => (reads++, Promise.reject(new RpcTimeoutError("timed out"))) } });
  await assert.rejects(r.callRaw("KVS.Get", { key: "a" }), RpcTimeoutError);
  assert.equal(reads, 1);
  const local = recordingLocal((n) => (n === 1 ? Promise.reject(new RpcTimeoutError("timed out")) : Promise.resolve(true)));
  const w = router({ clock, remote: remoteOf(() => "x"), local });
  const p = w.callRaw("KVS.Apply", { op: "set" });
  await clock.runFor(2_000);
  assert.equal(await p, true);
  assert.deepEqual(local.ids[0], local.ids[1]);
});

test("rpc router: an unknown issuer refused by the table is minted again above its epoch, but only before any send", async () => {
  const clock = new SimClock();
  const local = recordingLocal((n) => (n === 1 ? Promise.reject(new RequestExpiredError("unknown issuer", 9e15)) : Promise.resolve(true)));
  const r = router({ clock, remote: remoteOf(() => "x"), local });
  assert.equal(await r.callRaw("KVS.Apply", { op: "set" }), true);
  const [first, second] = local.ids as [[string, number], [string, number]];
  assert.notEqual(first[0], second[0]);
  assert.ok(Number(second[0].split("-")[0]) > 9e15, second[0]);
  assert.equal(second[1], 1);
  // After an attempt that may have been applied, an expired id is an unknown outcome.
  const l2 = recordingLocal((n) => Promise.reject(n === 1 ? new LeadershipLostError() : new RequestExpiredError("too old")));
  const r2 = router({ clock, remote: remoteOf(() => "x"), local: l2 });
  const p = r2.callRaw("KVS.Apply", { op: "set" }).catch((e) => e);
  await clock.runFor(2_000);
  assert.ok((await p) instanceof OutcomeUnknownError);
  assert.equal(l2.ids.length, 2);
});

test("rpc router: a server answers another agent's call once, forwarding a refusal to the leader it names", async () => {
  const clock = new SimClock();
  const remote = remoteOf(() => "from-leader");
  const r = new RpcRouter({
    local: { handle: () => Promise.reject(new NotLeaderError("10.0.0.9:8300")) },
    remote,
    servers: () => [],
    clock,
    rng: new Rng(1),
    logger: nullLogger(),
    self: "10.0.0.1:8300",
  });
  assert.equal(await r.serve("KVS.Apply", { requestId: ["1-a", 1] }), "from-leader");
  assert.equal(remote.calls.length, 1);
  const self = new RpcRouter({
    local: { handle: () => Promise.reject(new NotLeaderError("10.0.0.1:8300")) },
    remote,
    servers: () => [],
    clock,
    rng: new Rng(1),
    logger: nullLogger(),
    self: "10.0.0.1:8300",
  });
  await assert.rejects(self.serve("KVS.Apply", {}), NotLeaderError);
  assert.equal(remote.calls.length, 1, "never forwarded to itself");
});

function wanOf(servers: Record<string, Array<{ address: string; status?: string }>>, seed = 3): WanRoutes {
  return new WanRoutes({
    localDatacenter: "dc1",
    servers: () => Object.entries(servers).flatMap(([dc, list]) => list.map((s) => ({ name: `${s.address}.${dc}`, datacenter: dc, address: s.address, status: s.status ?? "alive" }))),
    rng: new Rng(seed),
  });
}

function dcRouter(o: { remote: RemoteCaller; wan: WanRoutes; local?: LocalHandler }): { r: RpcRouter; handled: () => number } {
  let handled = 0;
  const r = new RpcRouter({
    local: o.local ?? { handle: () => (handled++, Promise.resolve("local")) },
    remote: o.remote,
    servers: () => [],
    clock: new SimClock(),
    rng: new Rng(1),
    logger: nullLogger(),
    datacenter: "dc1",
    wan: o.wan,
  });
  return { r, handled: () => handled };
}

test("rpc router: a call for an unknown datacenter is refused before any endpoint runs; one for a known datacenter goes to a server there", async () => {
  const remote = remoteOf((address) => `from ${address}`);
  const { r, handled } = dcRouter({ remote, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300" }] }) });
  await assert.rejects(r.callRaw("KVS.Apply", { op: "set", entry: { key: "k" }, datacenter: "nowhere" }), (e: unknown) => e instanceof NoPathToDatacenterError && e.message === "No path to datacenter");
  await assert.rejects(r.callRaw("KVS.Get", { key: "k", query: { datacenter: "nowhere" } }), NoPathToDatacenterError);
  await assert.rejects(r.serve("KVS.Get", { key: "k", query: { datacenter: "nowhere" } }), NoPathToDatacenterError);
  assert.equal(await r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), "from 10.2.0.1:8300");
  assert.equal(await r.serve("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), "from 10.2.0.1:8300");
  assert.equal(handled(), 0);
  assert.equal(await r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc1" } }), "local");
  assert.equal(await r.callRaw("KVS.Get", { key: "k", query: {} }), "local");
  assert.equal(r.stats.crossDc, 2);
});

test("rpc router: a write forwarded to another datacenter keeps the request id the first router gave it", async () => {
  const bodies: unknown[] = [];
  const remote: RemoteCaller = { call: (_a, _m, body) => (bodies.push(body), Promise.resolve({ ok: true, index: 9 })) };
  const { r } = dcRouter({ remote, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300" }] }) });
  await r.callRaw("KVS.Apply", { op: "set", entry: { key: "k" }, datacenter: "dc2" });
  const id = (bodies[0] as { requestId?: unknown }).requestId;
  assert.ok(Array.isArray(id) && id.length === 2, "the first router gives the id");
  // A call that arrives with an id (from a client agent) travels with that id, unchanged.
  await r.serve("KVS.Apply", { op: "set", entry: { key: "k" }, datacenter: "dc2", requestId: ["issuer-x", 41] });
  assert.deepEqual((bodies[1] as { requestId?: unknown }).requestId, ["issuer-x", 41]);
});

test("rpc router: a known datacenter with no live server is Remote DC has no server currently reachable, at once", async () => {
  const remote = remoteOf(() => "x");
  const { r } = dcRouter({ remote, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300", status: "failed" }, { address: "10.2.0.2:8300", status: "left" }] }) });
  await assert.rejects(r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), (e: unknown) => e instanceof DcUnavailableError && e.message === "Remote DC has no server currently reachable");
  assert.equal(remote.calls.length, 0);
});

test("rpc router: a server of another datacenter that cannot be reached goes to the back; every one failing is DcUnavailable, each tried once", async () => {
  const down = new Set(["10.2.0.1:8300", "10.2.0.2:8300"]);
  const remote = remoteOf((address) => {
    if (down.has(address)) throw new RpcError(`Cannot connect to "${address}": connection refused`, { unsent: true });
    return `from ${address}`;
  });
  const wan = wanOf({ dc2: [{ address: "10.2.0.1:8300" }, { address: "10.2.0.2:8300" }, { address: "10.2.0.3:8300" }] });
  const { r } = dcRouter({ remote, wan });
  assert.equal(await r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), "from 10.2.0.3:8300");
  const route = wan.route("dc2");
  assert.ok(route.kind === "servers");
  assert.equal(route.addresses[0], "10.2.0.3:8300", "the failed ones went to the back");
  remote.calls.length = 0;
  assert.equal(await r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), "from 10.2.0.3:8300");
  assert.equal(remote.calls.length, 1, "the working server is tried first now");
  down.add("10.2.0.3:8300");
  remote.calls.length = 0;
  await assert.rejects(r.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), DcUnavailableError);
  assert.equal(remote.calls.length, 3, "each server once, no hold-timeout retries");  // Five servers, none answering: three tries, then the error; the next request starts with the other two.
  const five = wanOf({ dc3: ["a", "b", "c", "d", "e"].map((x) => ({ address: `${x}:8300` })) });
  const dead = remoteOf((address) => {
    throw new RpcError(`Cannot connect to "${address}": timed out`, { unsent: true });
  });
  const first = five.route("dc3");
  assert.ok(first.kind === "servers");
  const untried = first.addresses.slice(3);
  const { r: r5 } = dcRouter({ remote: dead, wan: five });
  await assert.rejects(r5.callRaw("KVS.Get", { key: "k", query: { datacenter: "dc3" } }), DcUnavailableError);
  assert.equal(dead.calls.length, 3, "bounded");
  const after = five.route("dc3");
  assert.ok(after.kind === "servers");
  assert.deepEqual(after.addresses.slice(0, 2), untried, "the untried servers come first next time");
});

test("rpc router: a write across whose connections were lost after sending goes to the next server with its id; if none answers, its outcome is unknown, not unreachable", async () => {
  const bodies: Array<{ address: string; requestId: unknown }> = [];
  const remote: RemoteCaller = {
    call: (address, _m, body) => {
      bodies.push({ address, requestId: (body as { requestId?: unknown }).requestId });
      return Promise.reject(new RpcError(`Connection to "${address}" closed`, { unsent: false }));
    },
  };
  const { r } = dcRouter({ remote, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300" }, { address: "10.2.0.2:8300" }] }) });
  await assert.rejects(r.serve("KVS.Apply", { op: "set", entry: { key: "k" }, datacenter: "dc2", requestId: ["i", 7] }), OutcomeUnknownError);
  assert.deepEqual(bodies.map((b) => b.requestId), [["i", 7], ["i", 7]], "the same id at each server");
  assert.deepEqual(bodies.map((b) => b.address).sort(), ["10.2.0.1:8300", "10.2.0.2:8300"]);
  // A read that lost its connections: unreachable.
  await assert.rejects(r.serve("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), DcUnavailableError);
});

test("rpc router: the remote datacenter's own answer is the answer; a refusal naming its leader does not leak that address", async () => {
  const remote = remoteOf(() => {
    throw new NotLeaderError("10.2.0.9:8300");
  });
  const { r } = dcRouter({ remote, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300" }, { address: "10.2.0.2:8300" }] }) });
  await assert.rejects(r.serve("KVS.Get", { key: "k", query: { datacenter: "dc2" } }), (e: unknown) => e instanceof NotLeaderError && e.leader === undefined);
  assert.equal(remote.calls.length, 1, "an answer from the remote side is not a reason to try another server");
  const notFound = remoteOf(() => {
    throw new BadRequestError("Missing key name");
  });
  const { r: r2 } = dcRouter({ remote: notFound, wan: wanOf({ dc2: [{ address: "10.2.0.1:8300" }] }) });
  await assert.rejects(r2.callRaw("KVS.Get", { key: "", query: { datacenter: "dc2" } }), BadRequestError);
});

test("wan routes: kept servers keep their place across membership changes; the local datacenter is listed first, others by median RTT", () => {
  const servers = [
    { address: "a:1", status: "alive" },
    { address: "b:1", status: "alive" },
  ];
  const wan = wanOf({ dc2: servers });
  const first = wan.route("dc2");
  assert.ok(first.kind === "servers");
  wan.failed("dc2", first.addresses[0]!);
  const before = wan.route("dc2");
  assert.ok(before.kind === "servers");
  servers.push({ address: "c:1", status: "alive" });
  wan.invalidate();
  const after = wan.route("dc2");
  assert.ok(after.kind === "servers");
  assert.deepEqual(after.addresses.filter((a) => a !== "c:1"), before.addresses);
  assert.deepEqual(wan.route("dc9"), { kind: "unknown" });
  assert.deepEqual(wan.datacenters().sort(), ["dc1", "dc2"]);
  const rtt: Record<string, number> = { x1: 80, x2: 90, x3: 100, y1: 20, y2: 500, y3: 30 };
  const list = [
    { name: "x1", datacenter: "dc3" }, { name: "x2", datacenter: "dc3" }, { name: "x3", datacenter: "dc3" },
    { name: "y1", datacenter: "dc2" }, { name: "y2", datacenter: "dc2" }, { name: "y3", datacenter: "dc2" },
    { name: "z1", datacenter: "dc0" }, { name: "l1", datacenter: "dc9" },
  ];
  assert.deepEqual(datacentersByDistance("dc9", list, (n) => rtt[n]), ["dc9", "dc2", "dc3", "dc0"]);
});
