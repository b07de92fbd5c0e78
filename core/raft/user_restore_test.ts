// RaftNode.restoreUserSnapshot (hashicorp/raft Restore) on a simulated
// three-server cluster: the leader installs an operator's snapshot at an
// index above its log, the followers get it by InstallSnapshot in many
// chunks (a few in flight), a restarted follower starts from it, and writes
// go on after it everywhere.
import { test } from "node:test";
import assert from "node:assert/strict";
import { NotLeaderError } from "../errors.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { SimFsm } from "./_sim_cluster.ts";
import { createRaftNode } from "./driver.ts";
import type { RaftNode } from "./driver.ts";
import { MemoryLogStore } from "./log_store_memory.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import { MemoryStableStore } from "./stable_store_memory.ts";
import { SimRaftTransport } from "./transport_sim.ts";
import type { RaftMessage } from "./types.ts";

const enc = new TextEncoder();

/** Run the simulated clock until `p` settles; its value or its error. */
async function settle<T>(clock: SimClock, p: Promise<T>): Promise<T> {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await clock.runUntil(() => done, { maxMs: 20_000 });
  return p;
}

/** A member of the simulated cluster `ids`, with in-memory stores unless given. */
function simNode(o: {
  id: string;
  ids: string[];
  clock: SimClock;
  rng: Rng;
  transport: SimRaftTransport;
  stores?: { log: MemoryLogStore; stable: MemoryStableStore; snaps: MemorySnapshotStore; fsm: SimFsm };
  snapshotChunkBytes?: number;
}): Promise<RaftNode> {
  const s = o.stores ?? { log: new MemoryLogStore(), stable: new MemoryStableStore(), snaps: new MemorySnapshotStore(), fsm: new SimFsm() };
  return createRaftNode({
    id: o.id,
    address: `${o.id}:8300`,
    peers: o.ids.map((p) => ({ id: p, address: `${p}:8300` })),
    fsm: s.fsm,
    logStore: s.log,
    stableStore: s.stable,
    snapshotStore: s.snaps,
    transport: o.transport,
    clock: o.clock,
    rng: o.rng.fork(),
    tickMs: 10,
    ...(o.snapshotChunkBytes ? { raft: { snapshotChunkBytes: o.snapshotChunkBytes } } : {}),
  });
}

test("user restore: installed above the log on the leader, sent to followers in chunks, kept across a restart, writes go on", async () => {
  const clock = new SimClock();
  const rng = new Rng(7);
  const net = new SimNetwork<Uint8Array | RaftMessage>(clock, rng.fork(), { delayMs: [1, 3] });
  const ids = ["a", "b", "c"];
  const stores = new Map(ids.map((id) => [id, { log: new MemoryLogStore(), stable: new MemoryStableStore(), snaps: new MemorySnapshotStore(), fsm: new SimFsm() }]));
  const chunksSent: number[] = [];
  const boot = (id: string): Promise<RaftNode> => {
    const s = stores.get(id)!;
    const transport = new SimRaftTransport(net, `${id}:8300`, { encode: true });
    const send = transport.send.bind(transport);
    transport.send = (to, msg) => {
      if (msg.type === "snapshot") chunksSent.push(msg.chunk.length);
      send(to, msg);
    };
    return simNode({ id, ids, clock, rng, transport, stores: s, snapshotChunkBytes: 64 });
  };
  const nodes = new Map<string, RaftNode>();
  for (const id of ids) nodes.set(id, await boot(id));
  await clock.runUntil(() => [...nodes.values()].some((n) => n.isLeader()), { maxMs: 5_000 });
  const leader = [...nodes.values()].find((n) => n.isLeader())!;
  for (let i = 0; i < 5; i++) await settle(clock, leader.apply(enc.encode(`before-${i}`)));
  const lastBefore = leader.core.lastIndex;

  // The operator's state: another history, saved at index 1000 (above this log).
  const restored: [number, string][] = Array.from({ length: 30 }, (_, i) => [i + 1, `restored-${i}`]);
  const bytes = enc.encode(JSON.stringify(restored));
  const sink = leader.snapshotStore.begin();
  for (let off = 0; off < bytes.length; off += 100) await sink.write(bytes.subarray(off, off + 100));
  const leaderFsm = stores.get(leader.id)!.fsm;
  const r = await settle(clock, leader.restoreUserSnapshot({ sink, stateIndex: 1000, install: () => void (leaderFsm.state = restored.map((e) => [...e] as [number, string])) }));
  assert.equal(r.index, 1001, "above the snapshot's own index and the log's");
  assert.ok(r.index > lastBefore);
  assert.equal(leader.core.snapshotMeta?.userRestore, true);
  assert.equal(leader.appliedIndex(), 1001);
  await settle(clock, r.replicated);

  for (const id of ids) {
    await clock.runUntil(() => JSON.stringify(stores.get(id)!.fsm.state) === JSON.stringify(restored), { maxMs: 5_000 });
  }
  const chunks = chunksSent.filter((n) => n > 0);
  assert.ok(chunks.length >= 2 * Math.ceil(bytes.length / 64), `both followers got every chunk (${chunks.length} sent)`);
  assert.ok(chunks.every((n) => n <= 64));

  // Writes after the restore land after it, everywhere.
  const after = await settle(clock, leader.apply(enc.encode("after")));
  assert.equal(after.index, 1003, "after the snapshot (1001) and its noop (1002)");
  for (const id of ids) await clock.runUntil(() => stores.get(id)!.fsm.state.at(-1)?.[1] === "after", { maxMs: 5_000 });

  // A follower restarted from its own stores starts from the restored snapshot.
  const follower = ids.find((id) => id !== leader.id)!;
  await settle(clock, nodes.get(follower)!.stop());
  const s = stores.get(follower)!;
  s.fsm = new SimFsm();
  const again = await settle(clock, boot(follower));
  nodes.set(follower, again);
  assert.equal((await s.snaps.list())[0]?.index, 1001);
  await clock.runUntil(() => s.fsm.state.at(-1)?.[1] === "after", { maxMs: 5_000 });
  assert.deepEqual(s.fsm.state.slice(0, restored.length), restored);
  for (const n of nodes.values()) await settle(clock, n.stop());
});

test("user restore: refused on a follower, and the follower changes nothing", async () => {
  const clock = new SimClock();
  const rng = new Rng(8);
  const net = new SimNetwork<Uint8Array | RaftMessage>(clock, rng.fork(), { delayMs: [1, 3] });
  const ids = ["a", "b", "c"];
  const nodes: RaftNode[] = [];
  for (const id of ids) {
    nodes.push(await simNode({ id, ids, clock, rng, transport: new SimRaftTransport(net, `${id}:8300`, { encode: true }) }));
  }
  await clock.runUntil(() => nodes.some((n) => n.isLeader()), { maxMs: 5_000 });
  const follower = nodes.find((n) => !n.isLeader())!;
  const sink = follower.snapshotStore.begin();
  await sink.write(enc.encode("[]"));
  let installed = false;
  await assert.rejects(settle(clock, follower.restoreUserSnapshot({ sink, stateIndex: 0, install: () => void (installed = true) })), NotLeaderError);
  assert.equal(installed, false);
  assert.equal(follower.core.snapshotMeta, undefined);
  for (const n of nodes) await settle(clock, n.stop());
});

test("user restore: the snapshot goes first to the follower a quorum needs, the other follower gets one chunk at a time until then", async () => {
  const clock = new SimClock();
  const rng = new Rng(9);
  const net = new SimNetwork<Uint8Array | RaftMessage>(clock, rng.fork(), { delayMs: [1, 3] });
  const ids = ["a", "b", "c"];
  /** Per follower, InstallSnapshot chunks sent to it; and per follower, how many the other had when its last one left. */
  const sent = new Map<string, number>();
  const otherAtDone = new Map<string, number>();
  const nodes: RaftNode[] = [];
  for (const id of ids) {
    const transport = new SimRaftTransport(net, `${id}:8300`, { encode: true });
    const send = transport.send.bind(transport);
    transport.send = (to, msg) => {
      if (msg.type === "snapshot" && msg.chunk.length > 0) {
        sent.set(msg.to, (sent.get(msg.to) ?? 0) + 1);
        if (msg.done && !otherAtDone.has(msg.to)) {
          const other = ids.find((x) => x !== id && x !== msg.to)!;
          otherAtDone.set(msg.to, sent.get(other) ?? 0);
        }
      }
      send(to, msg);
    };
    nodes.push(await simNode({ id, ids, clock, rng, transport, snapshotChunkBytes: 64 }));
  }
  await clock.runUntil(() => nodes.some((n) => n.isLeader()), { maxMs: 5_000 });
  const leader = nodes.find((n) => n.isLeader())!;
  const bytes = enc.encode(JSON.stringify(Array.from({ length: 400 }, (_, i) => [i + 1, `restored-${i}`])));
  const chunks = Math.ceil(bytes.length / 64);
  const sink = leader.snapshotStore.begin();
  await sink.write(bytes);
  const r = await settle(clock, leader.restoreUserSnapshot({ sink, stateIndex: 1000, install: () => {} }));
  await settle(clock, r.replicated);
  const followers = ids.filter((id) => id !== leader.id);
  await clock.runUntil(() => followers.every((f) => otherAtDone.has(f)), { maxMs: 10_000 });
  const [first, second] = [...followers].sort((x, y) => otherAtDone.get(x)! - otherAtDone.get(y)!);
  assert.ok(sent.get(first!)! >= chunks && sent.get(second!)! >= chunks, `both got every chunk: ${JSON.stringify([...sent])}`);
  // When the first had all of it, the second had far fewer (4 chunks in flight against 1).
  assert.ok(otherAtDone.get(first!)! < chunks / 2, `the second follower had ${otherAtDone.get(first!)} of ${chunks} chunks when the first had them all`);
  for (const n of nodes) await settle(clock, n.stop());
});

/**
 * A three-server cluster (messages in order, as over TCP, unless `reorder`)
 * whose leader restores `bytes` after sending them
 * ahead (RaftNode.sendAhead) as they are "written" in pieces of 100 bytes;
 * `beforeInstall` runs between the last piece and the install. Answers the
 * InstallSnapshot bytes each follower was sent after the install began, the
 * prefetch bytes it was sent, and each server's state afterwards.
 */
async function restoreSentAhead(seed: number, bytes: Uint8Array, options: { loss?: number; reorder?: boolean; complete?: boolean; beforeInstall?: (c: { clock: SimClock; net: SimNetwork<Uint8Array | RaftMessage>; leader: RaftNode; followers: string[]; aheadBytes: Map<string, number> }) => Promise<void> } = {}) {
  const clock = new SimClock();
  const rng = new Rng(seed);
  const net = new SimNetwork<Uint8Array | RaftMessage>(clock, rng.fork(), { delayMs: options.reorder ? [1, 3] : [2, 2], loss: options.loss ?? 0 });
  const ids = ["a", "b", "c"];
  const installBytes = new Map<string, number>();
  const aheadBytes = new Map<string, number>();
  let installing = false;
  const stores = new Map(ids.map((id) => [id, { log: new MemoryLogStore(), stable: new MemoryStableStore(), snaps: new MemorySnapshotStore(), fsm: new SimFsm() }]));
  const nodes: RaftNode[] = [];
  for (const id of ids) {
    const transport = new SimRaftTransport(net, `${id}:8300`, { encode: true });
    const send = transport.send.bind(transport);
    transport.send = (to, msg) => {
      if (msg.type === "snapshot" && installing) installBytes.set(msg.to, (installBytes.get(msg.to) ?? 0) + msg.chunk.length);
      if (msg.type === "prefetch") aheadBytes.set(msg.to, (aheadBytes.get(msg.to) ?? 0) + msg.chunk.length);
      send(to, msg);
    };
    nodes.push(await simNode({ id, ids, clock, rng, transport, stores: stores.get(id)!, snapshotChunkBytes: 64 }));
  }
  await clock.runUntil(() => nodes.some((n) => n.isLeader()), { maxMs: 5_000 });
  const leader = nodes.find((n) => n.isLeader())!;
  const followers = ids.filter((id) => id !== leader.id);
  const sink = leader.snapshotStore.begin();
  const ahead = leader.sendAhead("restore-1", sink);
  assert.ok(ahead, "a leader sends ahead");
  for (let off = 0; off < bytes.length; off += 100) {
    await sink.write(bytes.subarray(off, off + 100));
    ahead.grew();
    await clock.runFor(1);
  }
  if (options.complete !== false) ahead.complete(sink.written);
  await clock.runFor(50);
  await options.beforeInstall?.({ clock, net, leader, followers, aheadBytes });
  installing = true;
  const restored = JSON.parse(new TextDecoder().decode(bytes)) as [number, string][];
  const leaderFsm = stores.get(leader.id)!.fsm;
  const r = await settle(clock, leader.restoreUserSnapshot({ sink, stateIndex: 1000, contentId: "restore-1", install: () => void (leaderFsm.state = restored.map((e) => [...e] as [number, string])) }));
  await settle(clock, r.replicated);
  for (const id of ids) await clock.runUntil(() => JSON.stringify(stores.get(id)!.fsm.state) === JSON.stringify(restored), { maxMs: 20_000 });
  const after = await settle(clock, leader.apply(enc.encode("after")));
  for (const id of ids) await clock.runUntil(() => stores.get(id)!.fsm.state.at(-1)?.[1] === "after", { maxMs: 5_000 });
  assert.equal(after.index, r.index + 2);
  const snaps = await Promise.all(followers.map(async (f) => (await stores.get(f)!.snaps.list())[0]));
  for (const n of nodes) await settle(clock, n.stop());
  return { followers, installBytes, aheadBytes, snaps };
}

const restoredBytes = enc.encode(JSON.stringify(Array.from({ length: 200 }, (_, i) => [i + 1, `restored-${i}`])));

test("user restore sent ahead: the follower a quorum needs writes the bytes while they arrive, and the install sends it only its first chunk", async () => {
  const { followers, installBytes, aheadBytes, snaps } = await restoreSentAhead(21, restoredBytes);
  const [ahead, other] = [...followers].sort((x, y) => (aheadBytes.get(y) ?? 0) - (aheadBytes.get(x) ?? 0));
  assert.equal(aheadBytes.get(ahead!), restoredBytes.length, `${ahead} got every byte ahead`);
  assert.equal(aheadBytes.get(other!) ?? 0, 0, "one follower is all a quorum needs");
  assert.ok((installBytes.get(ahead!) ?? 0) <= 64, `${ahead} was sent ${installBytes.get(ahead!)} bytes at the install (one chunk at most)`);
  assert.ok((installBytes.get(other!) ?? 0) >= restoredBytes.length, "the other got it all by InstallSnapshot");
  for (const s of snaps) assert.equal(s?.sizeBytes, restoredBytes.length);
  assert.ok(snaps.every((s) => s?.contentId === "restore-1"));
});

test("user restore sent ahead: a follower cut off halfway gets the rest by InstallSnapshot", async () => {
  let cutOff = "";
  let heldBefore = 0;
  const { installBytes, aheadBytes } = await restoreSentAhead(22, restoredBytes, {
    complete: false,
    beforeInstall: async ({ clock, net, followers, aheadBytes }) => {
      // Cut the follower off for a moment: what was in flight to it is lost, and the rest is sent at the install.
      cutOff = followers.find((f) => (aheadBytes.get(f) ?? 0) > 0)!;
      heldBefore = aheadBytes.get(cutOff)!;
      net.partition([`${cutOff}:8300`], ["a:8300", "b:8300", "c:8300"].filter((a) => a !== `${cutOff}:8300`));
      await clock.runFor(5);
      net.heal();
    },
  });
  assert.ok(heldBefore > 0 && heldBefore <= restoredBytes.length);
  assert.equal(aheadBytes.get(cutOff), heldBefore, "nothing more was sent ahead after the cut");
  const sentAtInstall = installBytes.get(cutOff) ?? 0;
  assert.ok(sentAtInstall < restoredBytes.length, `${cutOff} was not sent everything again (${sentAtInstall} bytes)`);
});

test("user restore sent ahead: with 20% of messages lost and the rest reordered, every server still ends with the restored state", async () => {
  for (const seed of [31, 32, 33]) {
    try {
      await restoreSentAhead(seed, restoredBytes, { loss: 0.2, reorder: true });
    } catch (err) {
      throw new Error(`seed ${seed}: ${(err as Error).message}`, { cause: err });
    }
  }
});

test("user restore sent ahead: nothing more goes out once the restore is cancelled, or once the leader lost its leadership", async () => {
  for (const ending of ["cancel", "leadership"] as const) {
    const clock = new SimClock();
    const rng = new Rng(41);
    const net = new SimNetwork<Uint8Array | RaftMessage>(clock, rng.fork(), { delayMs: [2, 2] });
    const ids = ["a", "b", "c"];
    let sentAhead = 0;
    const nodes: RaftNode[] = [];
    for (const id of ids) {
      const transport = new SimRaftTransport(net, `${id}:8300`, { encode: true });
      const send = transport.send.bind(transport);
      transport.send = (to, msg) => {
        if (msg.type === "prefetch") sentAhead++;
        // The followers' answers are lost: the leader sends the window again every two election timeouts.
        if (msg.type !== "prefetchResp") send(to, msg);
      };
      nodes.push(await simNode({ id, ids, clock, rng, transport, snapshotChunkBytes: 64 }));
    }
    await clock.runUntil(() => nodes.some((n) => n.isLeader()), { maxMs: 5_000 });
    const leader = nodes.find((n) => n.isLeader())!;
    const sink = leader.snapshotStore.begin();
    const ahead = leader.sendAhead("restore-2", sink)!;
    await sink.write(restoredBytes);
    ahead.grew();
    await clock.runFor(1_000);
    assert.ok(sentAhead > 4, `${ending}: windows sent again while nobody answered (${sentAhead} chunks)`);
    if (ending === "cancel") {
      ahead.cancel();
    } else {
      net.partition([`${leader.id}:8300`], ids.filter((i) => i !== leader.id).map((i) => `${i}:8300`));
      await clock.runUntil(() => !leader.isLeader(), { maxMs: 10_000, what: "the cut-off leader to step down" });
    }
    const before = sentAhead;
    await clock.runFor(5_000);
    assert.equal(sentAhead, before, `${ending}: nothing sent ahead afterwards`);
    for (const n of nodes) await settle(clock, n.stop());
  }
});
