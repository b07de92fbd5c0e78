// Gossip pools in one process on loopback with -dev timings: two client
// agents join, see each other alive with Consul's tags, fire user events,
// rotate keys through the keyring queries, leave, force-leave; plus the pure
// helpers (tags, join addresses, keyring file, snapshot format).
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { systemClock } from "../clock/mod.ts";
import { buildConfig } from "../config/mod.ts";
import type { AgentConfig } from "../config/types.ts";
import { CaptureSink, createLogger, nullLogger } from "../log/mod.ts";
import { until } from "../testing/until.ts";
import { consulTags, resolveJoinAddr, startGossip, type AgentGossip, type GossipPool } from "./mod.ts";
import { loadKeyring } from "./keyring_node.ts";
import { formatSerfSnapshot, parseSerfSnapshot } from "./serf_snapshot_node.ts";
import { UserEventStore } from "./user_events.ts";

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "cairn-gossip-"));
  dirs.push(d);
  return d;
}

function config(name: string, extra: Partial<AgentConfig> = {}): AgentConfig {
  const base = buildConfig({ dev: true, sources: [], flags: { nodeName: name, ports: { http: -1, dns: -1, serfLan: 0, serfWan: 0, server: 8300 } } });
  return { ...base, ...extra };
}

const alive = (p: GossipPool) => p.members().filter((m) => m.status === "alive").map((m) => m.name).sort();
const addrOf = (p: GossipPool) => `${p.localMember().addr}:${p.localMember().port}`;

test("consul tags: clients and servers as Consul sets them", () => {
  const c = config("n1", { server: false, bootstrap: false });
  const t = consulTags(c, { nodeId: "id-1", pool: "lan" });
  assert.equal(t.role, "node");
  assert.equal(t.dc, "dc1");
  assert.equal(t.id, "id-1");
  assert.equal(t.vsn, "2");
  assert.equal(t.segment, "");
  assert.equal(t.port, undefined);
  const s = consulTags(config("s1", { server: true, bootstrapExpect: 3, bootstrap: false }), { nodeId: "id-2", pool: "wan" });
  assert.equal(s.role, "consul");
  assert.equal(s.port, "8300");
  assert.equal(s.expect, "3");
  assert.equal(s.raft_vsn, "3");
  assert.equal(s.segment, undefined);
  // cairn's own http_port tag: LAN only, and only for a port fixed before the listener binds.
  const withHttp = (http: number) => consulTags(config("n2", { server: false, bootstrap: false, ports: { ...c.ports, http } }), { nodeId: "id-3", pool: "lan" }).http_port;
  assert.equal(withHttp(8500), "8500");
  assert.equal(withHttp(0), undefined);
  assert.equal(withHttp(-1), undefined);
  assert.equal(s.http_port, undefined);
});

test("join addresses: default port, host:port, IPv6, names", async () => {
  assert.equal(await resolveJoinAddr("127.0.0.1", 8301), "127.0.0.1:8301");
  assert.equal(await resolveJoinAddr("127.0.0.1:9", 8301), "127.0.0.1:9");
  assert.equal(await resolveJoinAddr("[::1]:7", 8301), "[::1]:7");
  assert.equal(await resolveJoinAddr("::1", 8301), "[::1]:8301");
  assert.match(await resolveJoinAddr("localhost", 5), /:5$/);
  await assert.rejects(resolveJoinAddr("provider=aws tag_key=x", 1), /not supported/);
});

test("keyring file: written from -encrypt once, then read back; bad files are a clear error", () => {
  const d = tmp();
  const file = join(d, "serf", "local.keyring");
  const key = Buffer.alloc(32, 7).toString("base64");
  const ring = loadKeyring({ file, encrypt: key, logger: nullLogger(), pool: "LAN" })!;
  assert.equal(ring.keys.length, 1);
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), [key]);
  const sink = new CaptureSink();
  const other = Buffer.alloc(16, 1).toString("base64");
  const again = loadKeyring({ file, encrypt: other, logger: createLogger({ sink, level: "info" }), pool: "LAN" })!;
  assert.equal(Buffer.from(again.primaryKey).toString("base64"), key);
  assert.ok(sink.records.some((r) => /keyring exists but -encrypt given/.test(r.message)));
  writeFileSync(file, "{not json");
  assert.throws(() => loadKeyring({ file, encrypt: "", logger: nullLogger(), pool: "LAN" }), /Invalid keyring file/);
  assert.equal(loadKeyring({ encrypt: "", logger: nullLogger(), pool: "LAN" }), undefined);
});

test("serf snapshot: round trip, not-alive, leave, bad lines skipped", () => {
  const text = formatSerfSnapshot({ alive: new Map([["a", "127.0.0.1:1"], ["b", "127.0.0.1:2"]]), clock: 5, eventClock: 6, queryClock: 7 });
  const s = parseSerfSnapshot(text + "not-alive: b\ngarbage\nclock: x\nleave\n");
  assert.deepEqual([...s.alive], [["a", "127.0.0.1:1"]]);
  assert.equal(s.clock, 5);
  assert.equal(s.eventClock, 6);
  assert.equal(s.queryClock, 7);
  assert.equal(s.left, true);
  assert.equal(s.skipped, 2);
});

test("two client pools: join, tags, events, keyring rotation, force-leave, leave", async () => {
  const key1 = Buffer.alloc(32, 1).toString("base64");
  const key2 = Buffer.alloc(32, 2).toString("base64");
  const mk = (name: string) => startGossip(config(name, { encrypt: key1, server: false }), { logger: nullLogger(), clock: systemClock, nodeId: `00000000-0000-0000-0000-00000000000${name.length}` });
  const gossips: AgentGossip[] = [];
  try {
    const a = await mk("a");
    gossips.push(a);
    const b = await mk("bb");
    gossips.push(b);
    assert.equal(a.wan, undefined);
    const r = await b.lan.join([addrOf(a.lan)]);
    assert.deepEqual(r, { joined: 1, errors: [] });
    await until(() => alive(a.lan).length === 2 && alive(b.lan).length === 2, "both alive on both");
    assert.equal(a.lan.members().find((m) => m.name === "bb")!.tags.role, "node");
    assert.equal(a.lan.localMember().protocolCur, 2);
    assert.equal(a.lan.localMember().delegateCur, 4);

    // User events reach the other agent's store, with Consul's payload format.
    const events = new UserEventStore({ pool: b.lan, nodeName: "bb", localServices: () => [], clock: systemClock, logger: nullLogger() });
    const sent = new UserEventStore({ pool: a.lan, nodeName: "a", localServices: () => [], clock: systemClock, logger: nullLogger() }).fire({ name: "deploy", payload: new TextEncoder().encode("v1") });
    await until(() => events.list().length === 1, "event delivered");
    assert.equal(events.list()[0]!.id, sent.id);
    assert.equal(new TextDecoder().decode(events.list()[0]!.payload!), "v1");
    assert.ok(events.list()[0]!.lTime > 0);
    // Filtered out by node name: not stored.
    new UserEventStore({ pool: a.lan, nodeName: "a", localServices: () => [], clock: systemClock, logger: nullLogger() }).fire({ name: "x", payload: null, nodeFilter: "^nomatch$" });

    // Keyring: list, install, use, remove across both nodes.
    let list = await a.keyring.list();
    assert.equal(list.length, 1);
    assert.deepEqual(list[0]!.keys, { [key1]: 2 });
    assert.equal(list[0]!.numNodes, 2);
    assert.equal(list[0]!.error, undefined);
    await a.keyring.install(key2);
    list = await b.keyring.list();
    assert.deepEqual(list[0]!.keys, { [key1]: 2, [key2]: 2 });
    await a.keyring.use(key2);
    list = await a.keyring.list();
    assert.deepEqual(list[0]!.primaryKeys, { [key2]: 2 });
    await a.keyring.remove(key1);
    list = await a.keyring.list();
    assert.deepEqual(list[0]!.keys, { [key2]: 2 });
    const bad = await a.keyring.remove(key2);
    assert.match(bad[0]!.error ?? "", /2\/2 nodes reported failure/);
    assert.match(Object.values(bad[0]!.messages)[0] ?? "", /primary key/);
    await assert.rejects(a.keyring.install("nope"), /Invalid key/);
    // Still talking after rotation.
    await until(() => alive(a.lan).length === 2, "alive after rotation");

    // force-leave of an unknown node is an error; leave is seen as left.
    await assert.rejects(a.lan.forceLeave("ghost"), /No node found with name 'ghost'/);
    await b.leave();
    await until(() => a.lan.members().find((m) => m.name === "bb")?.status === "left", "bb left");
    events.stop();
  } finally {
    for (const g of gossips) await g.stop();
  }
});

test("wrong key: the join fails and says why; a plaintext node cannot join an encrypted one", async () => {
  const k1 = Buffer.alloc(16, 9).toString("base64");
  const k2 = Buffer.alloc(16, 8).toString("base64");
  const sink = new CaptureSink();
  const a = await startGossip(config("ka", { encrypt: k1, server: false }), { logger: createLogger({ sink, level: "debug" }), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000aa" });
  const b = await startGossip(config("kb", { encrypt: k2, server: false }), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000bb" });
  try {
    const r = await b.lan.join([addrOf(a.lan)]);
    assert.equal(r.joined, 0);
    assert.match(r.errors.join(";"), /key|decrypt/i);
    await until(() => sink.records.some((x) => /No installed keys could decrypt the message/.test(`${x.message} ${JSON.stringify(x.fields ?? {})}`)), "decrypt failure logged");
    assert.equal(alive(a.lan).length, 1);
  } finally {
    await a.stop();
    await b.stop();
  }
});

test("server pools: WAN name is node.dc; conflicting node ID refused", async () => {
  const s = await startGossip(config("s1", { server: true }), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-000000000001" });
  const dup = await startGossip(config("s2", { server: false }), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-000000000001" });
  try {
    assert.equal(s.wan!.localMember().name, "s1.dc1");
    assert.equal(s.wan!.localMember().tags.role, "consul");
    const r = await dup.lan.join([addrOf(s.lan)]);
    assert.equal(r.joined, 0, "a node with our ID is refused");
    assert.match(r.errors.join(";"), /conflicting node ID/);
  } finally {
    await s.stop();
    await dup.stop();
  }
});

test("bad packets are counted and dropped, never thrown: garbage, truncated, oversized", async () => {
  const { createSocket } = await import("node:dgram");
  const g = await startGossip(config("bad", { server: false }), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000cc" });
  const sock = createSocket("udp4");
  try {
    const port = g.lan.localMember().port;
    const send = (b: Uint8Array) => new Promise<void>((r) => sock.send(b, port, "127.0.0.1", () => r()));
    await send(new Uint8Array([0xff, 1, 2, 3]));
    await send(new Uint8Array([2, 0x85])); // truncated ping
    await send(new Uint8Array(9000).fill(7));
    await until(() => Number(g.lan.stats().packetsReceived) >= 3, "packets received");
    const s = g.lan.stats();
    assert.ok(Number(s.packetsGarbage) + Number(s.wire_errors) + Number(s.packetsUnhandled) >= 2, JSON.stringify(s));
    assert.deepEqual(alive(g.lan), ["bad"]);
  } finally {
    sock.close();
    await g.stop();
  }
});

test("restart with a data dir: the member snapshot rejoins the previous members; after a leave only with rejoin", async () => {
  const dataDir = tmp();
  const persistent = (extra: Partial<AgentConfig> = {}) => config("snap", { dev: false, dataDir, server: false, ...extra });
  const peer = await startGossip(config("peer", { server: false }), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000d1" });
  try {
    const a = await startGossip(persistent(), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000d2" });
    assert.equal((await a.lan.join([addrOf(peer.lan)])).joined, 1);
    await until(() => alive(a.lan).length === 2, "joined");
    await a.stop(); // a crash-like stop: the snapshot still lists the peer
    assert.match(readFileSync(join(dataDir, "serf", "local.snapshot"), "utf8"), /alive: peer 127\.0\.0\.1:\d+/);
    const b = await startGossip(persistent(), { logger: nullLogger(), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000d2" });
    await until(() => alive(b.lan).includes("peer"), "rejoined from the snapshot");
    await b.leave();
    await b.stop();
    assert.match(readFileSync(join(dataDir, "serf", "local.snapshot"), "utf8"), /leave\n$/);
    const sink = new CaptureSink();
    const c = await startGossip(persistent(), { logger: createLogger({ sink, level: "info" }), clock: systemClock, nodeId: "00000000-0000-0000-0000-0000000000d2" });
    assert.ok(sink.records.some((r) => /Ignoring previous node list/.test(r.message)), "no rejoin after a graceful leave");
    assert.deepEqual(alive(c.lan), ["snap"]);
    await c.stop();
  } finally {
    await peer.stop();
  }
});
