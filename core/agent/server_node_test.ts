// Server nodes over real loopback TCP and file stores, with a fake LAN pool:
// bootstrap-expect from gossip tags, forwarding from a follower, the
// leader adding a new server and removing one that left, operator calls,
// restart from disk. Raft time is a SimClock advanced by the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../config/defaults.ts";
import type { AgentConfig } from "../config/types.ts";
import { NoLeaderError } from "../errors.ts";
import { Leader } from "../server/leader/leader.ts";
import { CaptureSink, createLogger, nullLogger } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import type { LanPoolLike, MemberLike } from "../server/bootstrap.ts";
import { operatorMethods, startServerNode, type RaftConfigurationReply, type ServerNode } from "./server_node.ts";
import { freePort } from "../testing/free_port_node.ts";

class FakeLan implements LanPoolLike {
  members_: MemberLike[] = [];
  #fns = new Set<(e: { type: string; members: MemberLike[] }) => void>();
  members(): MemberLike[] {
    return this.members_;
  }
  onMemberEvent(fn: (e: { type: string; members: MemberLike[] }) => void): () => void {
    this.#fns.add(fn);
    return () => this.#fns.delete(fn);
  }
  set(name: string, status: string): void {
    this.members_ = this.members_.map((m) => (m.name === name ? { ...m, status } : m));
    for (const fn of this.#fns) fn({ type: status === "left" ? "leave" : "update", members: [] });
  }
  add(m: MemberLike): void {
    this.members_ = [...this.members_.filter((x) => x.name !== m.name), m];
    for (const fn of this.#fns) fn({ type: "join", members: [m] });
  }
}

const clock = new SimClock();
const nodes: ServerNode[] = [];

async function runUntil(pred: () => boolean | Promise<boolean>, what: string, maxVirtualMs = 60_000): Promise<void> {
  for (let t = 0; t < maxVirtualMs; t += 10) {
    for (let i = 0; i < 3; i++) {
      await Promise.all(nodes.map((n) => n.raft?.idle()));
      await new Promise((r) => setImmediate(r));
    }
    if (await pred()) return;
    clock.advance(10);
  }
  throw new Error(`Not reached within ${maxVirtualMs} virtual ms: ${what}`);
}

/** Settle a promise while advancing virtual time. */
async function settle<T>(p: Promise<T>, what: string): Promise<T> {
  let done = false;
  let value: T | undefined;
  let error: unknown;
  p.then((v) => ((done = true), (value = v)), (e) => ((done = true), (error = e)));
  await runUntil(() => done, what);
  if (error !== undefined) throw error;
  return value as T;
}

function config(name: string, dir: string, port: number, expect: number): AgentConfig {
  const c = defaultConfig();
  // Snapshot checks every 200 to 400 virtual ms (Consul: 30 to 60 s), so the wiped server below finds the log compacted.
  return { ...c, nodeName: name, dataDir: dir, server: true, bootstrapExpect: expect, bindAddr: "127.0.0.1", ports: { ...c.ports, server: port }, performance: { raftMultiplier: 1 }, raftSnapshotIntervalMs: 200 };
}

function member(name: string, id: string, port: number, expect: number): MemberLike {
  return { name, addr: "127.0.0.1", port: 8301, tags: { role: "consul", dc: "dc1", id, port: String(port), expect: String(expect) }, status: "alive" };
}

test("server nodes: bootstrap-expect from gossip, forwarding, reconcile, operator calls, restart", { timeout: 120_000 }, async () => {
  const root = await mkdtemp(join(tmpdir(), "cairn-server-node-"));
  const lan = new FakeLan();
  const specs = await Promise.all(["a", "b", "c", "d"].map(async (name, i) => ({
    name,
    id: `0000000${i}-0000-4000-8000-00000000000${i}`,
    port: await freePort(),
    dir: join(root, name),
  })));
  const start = async (s: (typeof specs)[number], expect: number, seed: number, logger = nullLogger()): Promise<ServerNode> => {
    const n = await startServerNode({ config: config(s.name, s.dir, s.port, expect), nodeId: s.id, clock, rng: new Rng(seed), logger, snapshotThreshold: 20, trailingLogs: 5 });
    nodes.push(n);
    n.attachLan(lan);
    // The leader duties the agent runs beside every server (core/server/leader): here they add d as a voter.
    const duties = new Leader({ server: n.server, fsm: n.fsm, consensus: n.consensus, lan, clock, logger, nodeName: s.name, datacenter: "dc1", sessionTimers: n.server.sessionTimers, raft: () => n.raft, selfId: s.id });
    n.leadershipListeners.add(() => duties.leadershipChanged());
    duties.start();
    const stopNode = n.stop.bind(n);
    n.stop = async () => {
      duties.stop();
      await stopNode();
    };
    return n;
  };
  try {
    const [a, b, c, d] = specs as [typeof specs[0], typeof specs[0], typeof specs[0], typeof specs[0]];
    const na = await start(a, 3, 1);
    const nb = await start(b, 3, 2);
    const nc = await start(c, 3, 3);
    lan.add(member("a", a.id, a.port, 3));
    lan.add(member("b", b.id, b.port, 3));
    await runUntil(() => true, "a turn");
    assert.equal(na.raft, undefined, "two of three expected servers: no bootstrap yet");
    // Before a leader exists a write is held, then fails with No cluster leader.
    await assert.rejects(settle(na.router.call("KVS.Apply", { op: "set", entry: { key: "early", value: new Uint8Array([1]) } }), "held write"), NoLeaderError);

    lan.add(member("c", c.id, c.port, 3));
    const leader = () => nodes.find((n) => n.raft?.isLeader());
    await runUntil(() => leader() !== undefined, "a leader after bootstrap");
    for (const n of [na, nb, nc]) assert.equal(n.raft?.peers().length, 3);

    // A follower forwards the write; every server applies it.
    const follower = [na, nb, nc].find((n) => n !== leader())!;
    const put = await settle(follower.router.call("KVS.Apply", { op: "set", entry: { key: "k", value: new TextEncoder().encode("v") } }), "forwarded write");
    assert.equal(put.ok, true);
    await runUntil(() => [na, nb, nc].every((n) => n.fsm.state.kvsGet("k").value !== undefined), "write applied everywhere");
    const q = { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: true };
    const got = await settle(follower.router.call("KVS.Get", { key: "k", query: q }), "consistent read via follower");
    assert.equal(new TextDecoder().decode(got.entries[0]!.value), "v");

    // A fourth server without bootstrap-expect is added by the leader when gossip sees it.
    const nd = await start(d, 0, 4);
    lan.add(member("d", d.id, d.port, 0));
    await runUntil(() => (leader()?.raft?.configuration().servers.length ?? 0) === 4, "d added as a voter");
    await runUntil(() => nd.fsm.state.kvsGet("k").value !== undefined, "d caught up");

    // Operator view from a follower (forwarded to the leader).
    const conf = (await settle(follower.router.callRaw(operatorMethods.getConfiguration, {}), "configuration")) as RaftConfigurationReply;
    assert.deepEqual(conf.servers.map((s) => s.node).sort(), ["a", "b", "c", "d"]);
    assert.equal(conf.servers.filter((s) => s.leader).length, 1);

    // d leaves gracefully: the leader removes it.
    lan.set("d", "left");
    await runUntil(() => (leader()?.raft?.configuration().servers.length ?? 0) === 3, "d removed after leave");

    // Transfer leadership away from the current leader.
    const old = leader()!;
    const target = [na, nb, nc].find((n) => n !== old)!;
    const targetId = specs.find((s) => s.port === Number(target.rpcAddr.split(":")[1]))!.id;
    await settle(follower.router.callRaw(operatorMethods.transferLeader, { id: targetId }), "transfer");
    await runUntil(() => target.raft?.isLeader() === true, "target leads");

    // A follower loses its raft/ directory (same node ID): it catches up by
    // snapshot (the leader compacted its log: threshold 20, 5 trailing entries).
    const wipedNode = [na, nb, nc].find((n) => !n.raft?.isLeader())!;
    const wiped = specs.find((s) => s.port === Number(wipedNode.rpcAddr.split(":")[1]))!;
    await wipedNode.stop();
    nodes.splice(nodes.indexOf(wipedNode), 1);
    for (let i = 0; i < 30; i++) await settle(leader()!.router.call("KVS.Apply", { op: "set", entry: { key: `w${i}`, value: new Uint8Array([i]) } }), "write while down");
    await rm(join(wiped.dir, "raft"), { recursive: true, force: true });
    const capture = new CaptureSink();
    const reborn = await start(wiped, 3, 31, createLogger({ sink: capture, level: "info" }));
    await runUntil(() => reborn.fsm.state.kvsGet("w29").value !== undefined, "wiped server caught up");
    assert.match(capture.text(), /installing snapshot from leader/);
    const rebornIndex = [na, nb, nc].indexOf(wipedNode);
    const trio = [na, nb, nc];
    trio[rebornIndex] = reborn;
    await runUntil(() => (leader()?.raft?.configuration().servers.length ?? 0) === 3, "three voters again");

    // Restart a, b, c from disk: same data, same voters.
    await nd.stop();
    for (const n of trio) await n.stop();
    nodes.length = 0;
    const again = [await start(a, 3, 11), await start(b, 3, 12), await start(c, 3, 13)];
    await runUntil(() => leader() !== undefined, "a leader after restart");
    for (const n of again) assert.equal(n.raft?.peers().length, 3);
    await runUntil(() => again.every((n) => n.fsm.state.kvsGet("k").value !== undefined), "data back from disk");
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
});

test("server node: raft/peers.json replaces the configuration on start and keeps the data", { timeout: 60_000 }, async () => {
  const root = await mkdtemp(join(tmpdir(), "cairn-peers-json-"));
  const id = "00000009-0000-4000-8000-000000000009";
  const port = await freePort();
  const cfg = config("solo", join(root, "solo"), port, 1);
  try {
    // A single server that believes in two other (dead) voters: no quorum.
    let t0 = clock.now();
    let n = await startServerNode({ config: { ...cfg, bootstrapExpect: 1 }, nodeId: id, clock, rng: new Rng(21), logger: nullLogger() });
    nodes.push(n);
    await runUntil(() => n.raft?.isLeader() === true, "solo leader");
    assert.equal(clock.now() - t0, 0, "the only voter campaigns at once, not after an election timeout");
    await settle(n.router.call("KVS.Apply", { op: "set", entry: { key: "kept", value: new Uint8Array([7]) } }), "write");
    // The change is appended (and in effect) but never commits: the leader steps down.
    n.raft!.addVoter("dead-1", "127.0.0.1:1").catch(() => {});
    await runUntil(() => n.raft!.configuration().servers.length === 2 && !n.raft!.isLeader(), "dead voter appended");
    await n.stop();
    nodes.length = 0;
    n = await startServerNode({ config: cfg, nodeId: id, clock, rng: new Rng(22), logger: nullLogger() });
    nodes.push(n);
    await runUntil(() => true, "a turn", 3_000);
    assert.equal(n.raft?.configuration().servers.length, 2, "two voters from the log");
    await n.stop();
    nodes.length = 0;

    // The operator writes peers.json with just this server.
    const raftDir = join(cfg.dataDir, "raft");
    await writeFile(join(raftDir, "peers.json"), JSON.stringify([{ id, address: `127.0.0.1:${port}`, non_voter: false }]));
    t0 = clock.now();
    n = await startServerNode({ config: cfg, nodeId: id, clock, rng: new Rng(23), logger: nullLogger() });
    nodes.push(n);
    await runUntil(() => n.raft?.isLeader() === true, "leader after recovery");
    assert.equal(clock.now() - t0, 0, "a restarted single voter leads at once too");
    assert.deepEqual(n.raft!.configuration().servers.map((s) => s.id), [id]);
    assert.deepEqual(Array.from(n.fsm.state.kvsGet("kept").value?.value ?? []), [7]);
    assert.ok(existsSync(join(raftDir, "peers.info")) && !existsSync(join(raftDir, "peers.json")), "peers.json renamed to peers.info");
    await settle(n.router.call("KVS.Apply", { op: "set", entry: { key: "after", value: new Uint8Array([8]) } }), "write after recovery");
  } finally {
    for (const n of nodes) await n.stop().catch(() => {});
    nodes.length = 0;
    await rm(root, { recursive: true, force: true });
  }
});
