import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, CairnError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "./dev.ts";
import { Leader } from "./leader/leader.ts";
import { nullLogger } from "../log/logger.ts";
import { q } from "./_test_query.ts";


async function world() {
  const clock = new SimClock({ wallOffsetMs: 1_700_000_000_000 });
  const d = await createDevServer({ clock, rng: new Rng(3) });
  const rpc = createLocalRpc(d.server);
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", check: { name: "Serf Health Status", checkId: "serfHealth", status: "passing" } });
  return { clock, rpc, ...d };
}

const base = { node: "n1", nodeChecks: ["serfHealth"], lockDelayMs: 15_000, behavior: "release" as const };

test("sessions: create, info, list, node, destroy; TTL bounds and behavior are validated", async () => {
  const { rpc } = await world();
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { ...base, name: "s1", ttl: "30s" } });
  assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  const got = await rpc.call("Session.Get", { sessionId: id, query: q() });
  assert.deepEqual(got.sessions.map((s) => [s.name, s.node, s.ttl, s.lockDelayMs, s.behavior]), [["s1", "n1", "30s", 15_000, "release"]]);
  assert.equal((await rpc.call("Session.List", { query: q() })).sessions.length, 1);
  assert.equal((await rpc.call("Session.NodeSessions", { node: "n1", query: q() })).sessions.length, 1);
  await rpc.call("Session.Apply", { op: "destroy", session: { id } });
  assert.equal((await rpc.call("Session.Get", { sessionId: id, query: q() })).sessions.length, 0);
  for (const ttl of ["5s", "25h", "abc"]) {
    await assert.rejects(rpc.call("Session.Apply", { op: "create", session: { ...base, ttl } }), (e: unknown) =>
      e instanceof CairnError && !(e instanceof BadRequestError) && /^(Invalid Session TTL|Session TTL)/.test(e.message), ttl);
  }
  await assert.rejects(rpc.call("Session.Apply", { op: "create", session: { ...base, behavior: "keep" as "delete" } }), /Invalid Behavior setting 'keep'/);
  await assert.rejects(rpc.call("Session.Apply", { op: "create", session: { ...base, node: "ghost" } }), (e: unknown) =>
    e instanceof CairnError && /Missing node registration/.test(e.message));
});

test("sessions: TTL expires at 2x TTL unless renewed, releasing locks with a lock delay", async () => {
  const { rpc, clock, server } = await world();
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { ...base, ttl: "10s" } });
  assert.equal((await rpc.call("KVS.Apply", { op: "lock", entry: { key: "leader", session: id } })).ok, true);
  clock.advance(15_000);
  const renewed = await rpc.call("Session.Renew", { sessionId: id });
  assert.equal(renewed.sessions[0]!.id, id);
  clock.advance(19_000);
  await drainMicrotasks();
  assert.equal((await rpc.call("Session.Get", { sessionId: id, query: q() })).sessions.length, 1, "renew pushed expiry to 2x TTL from the renew");
  clock.advance(2_000);
  await drainMicrotasks();
  assert.equal(server.sessionTimers.expired, 1);
  assert.equal((await rpc.call("Session.Get", { sessionId: id, query: q() })).sessions.length, 0, "expired");
  const e = await rpc.call("KVS.Get", { key: "leader", query: q() });
  assert.equal(e.entries[0]!.session, "", "lock released on expiry");
  // Lock delay: 15 s during which nobody can take the key.
  const { id: other } = await rpc.call("Session.Apply", { op: "create", session: { ...base, nodeChecks: [] } });
  assert.equal((await rpc.call("KVS.Apply", { op: "lock", entry: { key: "leader", session: other } })).ok, false, "lock delay holds");
  clock.advance(15_001);
  assert.equal((await rpc.call("KVS.Apply", { op: "lock", entry: { key: "leader", session: other } })).ok, true, "lock delay over");
  assert.deepEqual((await rpc.call("Session.Renew", { sessionId: "nope" })).sessions, []);
});

test("sessions: a bound check going critical invalidates; behavior delete removes the key", async () => {
  const { rpc } = await world();
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { ...base, behavior: "delete", lockDelayMs: 0 } });
  await rpc.call("KVS.Apply", { op: "lock", entry: { key: "svc/leader", session: id, value: new Uint8Array([1]) } });
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1", check: { name: "Serf Health Status", checkId: "serfHealth", status: "critical" } });
  assert.equal((await rpc.call("Session.Get", { sessionId: id, query: q() })).sessions.length, 0);
  assert.equal((await rpc.call("KVS.Get", { key: "svc/leader", query: q() })).entries.length, 0);
  await assert.rejects(rpc.call("Session.Apply", { op: "create", session: base }), /Check 'serfHealth' is in critical state/);
});

test("sessions: TTL timers follow leadership and restart at 2x TTL on a new leader", async () => {
  const clock = new SimClock({ wallOffsetMs: 1_700_000_000_000 });
  const { Server } = await import("./server.ts");
  const { fsm, raft: inner } = await createDevServer({ clock, rng: new Rng(5) });
  let leader = true;
  const consensus = {
    apply: inner.apply.bind(inner),
    isLeader: () => leader,
    leaderAddr: () => (leader ? "127.0.0.1:8300" : "10.0.0.2:8300"),
    lastContactMs: () => 0,
    peers: () => ["127.0.0.1:8300"],
    readBarrier: inner.readBarrier.bind(inner),
  };
  const server = new Server({ fsm, consensus, clock, rng: new Rng(4) });
  const rpc = createLocalRpc(server);
  await rpc.call("Catalog.Register", { node: "n1", address: "10.0.0.1" });
  const { id } = await rpc.call("Session.Apply", { op: "create", session: { node: "n1", ttl: "10s" } });
  // The leader duties drive the timers: armed while leading, dropped otherwise.
  const duties = new Leader({ server, fsm, consensus, lan: { members: () => [], onMemberEvent: () => () => {} }, clock, logger: nullLogger(), nodeName: "n0", datacenter: "dc1", sessionTimers: server.sessionTimers });
  duties.start();
  assert.equal(server.sessionTimers.size, 1);
  leader = false;
  clock.advance(1_000);
  assert.equal(server.sessionTimers.size, 0, "a follower holds no timers");
  clock.advance(60_000);
  await drainMicrotasks();
  assert.ok(fsm.state.tables.sessions.get(id), "no expiry while nobody leads here");
  leader = true;
  clock.advance(1_000);
  assert.equal(server.sessionTimers.size, 1, "the new leader re-arms");
  clock.advance(18_500);
  await drainMicrotasks();
  assert.ok(fsm.state.tables.sessions.get(id), "still alive before 2x TTL from the leadership change");
  clock.advance(1_500);
  await drainMicrotasks();
  assert.equal(fsm.state.tables.sessions.get(id), undefined, "expired at 2x TTL");
  duties.stop();
  assert.equal(server.sessionTimers.size, 0);
});
