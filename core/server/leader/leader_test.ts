import { test } from "node:test";
import assert from "node:assert/strict";
import { SimClock } from "../../sim/sim_clock.ts";
import { Rng } from "../../sim/rng.ts";
import { createLogger, CaptureSink } from "../../log/mod.ts";
import { createDevServer } from "../dev.ts";
import type { Consensus } from "../consensus.ts";
import { checksOfNode, nodeTxn, servicesOfNode } from "../../state/catalog.ts";
import { TombstoneGc } from "../../state/tombstone_gc.ts";
import type { LanPoolLike, MemberLike } from "./membership.ts";
import { memberAction } from "./catalog_reconcile.ts";
import { Leader } from "./leader.ts";

class FakeLan implements LanPoolLike {
  list: MemberLike[] = [];
  #subs = new Set<(e: { type: string; members: MemberLike[] }) => void>();
  members(): MemberLike[] {
    return this.list.map((m) => ({ ...m }));
  }
  onMemberEvent(fn: (e: { type: string; members: MemberLike[] }) => void): () => void {
    this.#subs.add(fn);
    return () => this.#subs.delete(fn);
  }
  set(name: string, status: string): void {
    this.list = this.list.map((m) => (m.name === name ? { ...m, status } : m));
    for (const fn of this.#subs) fn({ type: status === "alive" ? "join" : status === "failed" ? "failed" : "leave", members: this.list.filter((m) => m.name === name) });
  }
  remove(name: string): void {
    const gone = this.list.filter((m) => m.name === name);
    this.list = this.list.filter((m) => m.name !== name);
    for (const fn of this.#subs) fn({ type: "reap", members: gone.map((m) => ({ ...m, status: "reap" })) });
  }
}

function member(name: string, addr: string, extra: { server?: boolean; status?: string; id?: string } = {}): MemberLike {
  const tags: Record<string, string> = { role: extra.server ? "consul" : "node", dc: "dc1", id: extra.id ?? `id-${name}`, vsn: "2", build: "1.0.0:abc" };
  if (extra.server) Object.assign(tags, { port: "8300", raft_vsn: "3" });
  return { name, addr, port: 8301, tags, status: extra.status ?? "alive" };
}

/** A consensus whose leadership the test flips. */
class SwitchableConsensus implements Consensus {
  leader = true;
  constructor(readonly inner: Consensus) {}
  apply(c: Uint8Array, o?: { signal?: AbortSignal }) {
    return this.inner.apply(c, o);
  }
  isLeader() {
    return this.leader;
  }
  leaderAddr() {
    return this.inner.leaderAddr();
  }
  lastContactMs() {
    return 0;
  }
  peers() {
    return this.inner.peers();
  }
  readBarrier() {
    return Promise.resolve();
  }
}

async function world(options: { gcTtlMs?: number } = {}) {
  const clock = new SimClock();
  const sink = new CaptureSink();
  const logger = createLogger({ sink, level: "debug", now: () => clock.wallNow() });
  const dev = await createDevServer({ clock, rng: new Rng(7), logger });
  const consensus = new SwitchableConsensus(dev.consensus);
  const lan = new FakeLan();
  lan.list = [member("srv1", "10.0.0.1", { server: true }), member("c1", "10.0.0.2"), member("c2", "10.0.0.3")];
  let gained = 0;
  const duties = new Leader({
    server: dev.server,
    fsm: dev.fsm,
    consensus,
    lan,
    clock,
    logger,
    nodeName: "srv1",
    datacenter: "dc1",
    onLeadershipGained: () => gained++,
    tombstoneGc: new TombstoneGc({ ttlMs: options.gcTtlMs ?? 60_000, granularityMs: 1_000 }),
  });
  const serf = (node: string) => checksOfNode(dev.fsm.state, node).find((c) => c.checkId === "serfHealth");
  return { clock, dev, consensus, lan, duties, serf, gained: () => gained };
}

test("leader reconcile: members become catalog nodes with serfHealth; servers get the consul service", async () => {
  const w = await world();
  w.duties.start();
  await w.clock.runFor(10);
  assert.equal(w.gained(), 1);
  for (const [name, addr] of [["srv1", "10.0.0.1"], ["c1", "10.0.0.2"], ["c2", "10.0.0.3"]]) {
    const n = nodeTxn(w.dev.fsm.state, undefined, name);
    assert.ok(n, `node ${name} registered`);
    assert.equal(n.address, addr);
    assert.equal(n.id, `id-${name}`);
    assert.equal(w.serf(name)?.status, "passing");
    assert.equal(w.serf(name)?.output, "Agent alive and reachable");
  }
  const consul = servicesOfNode(w.dev.fsm.state, "srv1").find((s) => s.id === "consul");
  assert.equal(consul?.port, 8300);
  assert.equal(consul?.meta.raft_version, "3");
  assert.equal(servicesOfNode(w.dev.fsm.state, "c1").length, 0, "clients get no consul service");
  // A second pass over an unchanged pool writes nothing.
  const index = w.dev.raft.core.lastIndex;
  await w.duties.reconcileSoon();
  assert.equal(w.dev.raft.core.lastIndex, index, "idempotent reconcile");
  w.duties.stop();
});

test("leader reconcile: a failed member's serfHealth goes critical and its sessions are invalidated; left is deregistered", async () => {
  const w = await world();
  w.duties.start();
  await w.clock.runFor(10);
  const { id } = await w.dev.server.handle("Session.Apply", { op: "create", session: { node: "c1", name: "lock", nodeChecks: ["serfHealth"] } });
  await w.dev.server.handle("KVS.Apply", { op: "lock", entry: { key: "svc/leader", value: new TextEncoder().encode("c1"), session: id } });
  assert.equal(w.dev.fsm.state.tables.sessions.all().length, 1);
  w.lan.set("c1", "failed");
  await w.clock.runFor(10);
  assert.equal(w.serf("c1")?.status, "critical");
  assert.equal(w.serf("c1")?.output, "Agent not live or unreachable");
  assert.equal(w.dev.fsm.state.tables.sessions.all().length, 0, "session bound to serfHealth invalidated");
  const kv = w.dev.fsm.state.tables.kvs.all().find((e) => e.key === "svc/leader");
  assert.equal(kv?.session ?? "", "", "lock released");
  // Back alive: passing again.
  w.lan.set("c1", "alive");
  await w.clock.runFor(10);
  assert.equal(w.serf("c1")?.status, "passing");
  // Left: deregistered; our own node never is.
  w.lan.set("c2", "left");
  w.lan.set("srv1", "left");
  await w.clock.runFor(10);
  assert.equal(nodeTxn(w.dev.fsm.state, undefined, "c2"), undefined);
  assert.ok(nodeTxn(w.dev.fsm.state, undefined, "srv1"));
  // Reaped (gone from the pool): deregistered by the orphan pass.
  w.lan.remove("c1");
  await w.clock.runFor(10);
  assert.equal(nodeTxn(w.dev.fsm.state, undefined, "c1"), undefined);
  w.duties.stop();
});

test("leader reconcile: nodes registered without serfHealth are left alone; the periodic pass repairs a deleted node", async () => {
  const w = await world();
  w.duties.start();
  await w.clock.runFor(10);
  await w.dev.server.handle("Catalog.Register", { node: "external", address: "192.0.2.1", service: { service: "db" } });
  await w.dev.server.handle("Catalog.Deregister", { node: "c2" });
  await w.clock.runFor(59_000);
  assert.equal(nodeTxn(w.dev.fsm.state, undefined, "c2"), undefined, "not before the 60 s pass");
  await w.clock.runFor(2_000);
  assert.equal(w.serf("c2")?.status, "passing", "periodic reconcile re-registers");
  assert.ok(nodeTxn(w.dev.fsm.state, undefined, "external"), "external node untouched");
  w.duties.stop();
});

test("leader duties: only the leader writes; regaining leadership reconciles and calls back", async () => {
  const w = await world();
  w.consensus.leader = false;
  w.duties.start();
  await w.clock.runFor(5_000);
  assert.equal(nodeTxn(w.dev.fsm.state, undefined, "c1"), undefined, "a follower writes nothing");
  assert.equal(w.gained(), 0);
  w.consensus.leader = true;
  w.duties.leadershipChanged();
  await w.clock.runFor(10);
  assert.equal(w.gained(), 1);
  assert.equal(w.serf("c1")?.status, "passing");
  w.consensus.leader = false;
  await w.clock.runFor(1_500);
  assert.equal(w.duties.leading, false, "the tick notices lost leadership");
  w.duties.stop();
});

test("leader duties: tombstones are reaped once the GC TTL has passed", async () => {
  const w = await world({ gcTtlMs: 10_000 });
  w.duties.start();
  await w.clock.runFor(10);
  await w.dev.server.handle("KVS.Apply", { op: "set", entry: { key: "a", value: new Uint8Array([1]) } });
  await w.dev.server.handle("KVS.Apply", { op: "delete", entry: { key: "a" } });
  assert.equal(w.dev.fsm.state.tables.tombstones.all().length, 1);
  await w.clock.runFor(5_000);
  assert.equal(w.dev.fsm.state.tables.tombstones.all().length, 1, "kept within the TTL");
  await w.clock.runFor(8_000);
  assert.equal(w.dev.fsm.state.tables.tombstones.all().length, 0, "reaped after the TTL");
  assert.equal(w.duties.stats.reaps, 1);
  w.duties.stop();
});

test("memberAction: leaving waits, a failed node unknown to the catalog is registered critical", () => {
  assert.deepEqual(memberAction(member("x", "10.0.0.9", { status: "leaving" }), undefined, "me"), { op: "none" });
  const a = memberAction(member("x", "10.0.0.9", { status: "failed" }), undefined, "me");
  assert.equal(a.op, "register");
  if (a.op === "register") assert.equal(a.args.check?.status, "critical");
  assert.deepEqual(memberAction(member("me", "10.0.0.1", { status: "left" }), { id: "id-me", address: "10.0.0.1" }, "me"), { op: "none" });
});

test("leader reconcile at scale: 1,000 members failing, together or one by one, cost one look each and at most reconcileConcurrency writes in flight", async () => {
  const w = await world();
  const n = 1_000;
  for (let i = 0; i < n; i++) w.lan.list.push(member(`m${i}`, `10.1.${i >> 8}.${i & 255}`));
  let inFlight = 0;
  let maxInFlight = 0;
  const handle = w.dev.server.handle.bind(w.dev.server);
  const counted = {
    handle: (async (method: string, args: unknown, o?: { signal?: AbortSignal }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        return await (handle as (m: string, a: unknown, o?: unknown) => Promise<unknown>)(method, args, o);
      } finally {
        inFlight--;
      }
    }) as typeof w.dev.server.handle,
  };
  const duties = new Leader({
    server: counted, fsm: w.dev.fsm, consensus: w.consensus, lan: w.lan, clock: w.clock,
    logger: createLogger({ sink: new CaptureSink(), level: "warn" }), nodeName: "srv1", datacenter: "dc1", reconcileConcurrency: 8,
  });
  duties.start();
  await w.clock.runFor(10);
  assert.equal(w.serf(`m${n - 1}`)?.status, "passing");
  assert.ok(maxInFlight > 1 && maxInFlight <= 8, `writes in flight: ${maxInFlight}`);
  const passes = duties.stats.reconciles;

  // Half fail one by one, each event handled before the next (failures trickling in).
  const examined0 = duties.stats.examined;
  for (let i = 0; i < n / 2; i++) {
    w.lan.set(`m${i}`, "failed");
    await w.clock.runFor(1);
  }
  // Without per-member reconciles each of these events cost a pass over all 1,003 members.
  assert.equal(duties.stats.examined - examined0, n / 2, "one look per failed member");

  // The other half fail together: 500 events before the leader runs at all.
  const examined1 = duties.stats.examined;
  maxInFlight = 0;
  for (let i = n / 2; i < n; i++) w.lan.set(`m${i}`, "failed");
  await w.clock.runFor(10);
  assert.equal(duties.stats.examined - examined1, n / 2);
  assert.ok(maxInFlight > 1 && maxInFlight <= 8, `writes in flight: ${maxInFlight}`);
  for (let i = 0; i < n; i++) assert.equal(w.serf(`m${i}`)?.status, "critical", `m${i}`);
  assert.equal(duties.stats.reconciles, passes, "member events never cost a full pass");
  assert.equal(duties.stats.errors, 0);

  // A reaped member (gone from gossip) is deregistered by its own event too.
  w.lan.remove("m0");
  await w.clock.runFor(10);
  assert.equal(nodeTxn(w.dev.fsm.state, undefined, "m0"), undefined);
  duties.stop();
});
