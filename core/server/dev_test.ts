import assert from "node:assert/strict";
import { test } from "node:test";
import { FsmError, NotLeaderError } from "../errors.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "./dev.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { q } from "./_test_query.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

test("dev raft: leader when created, without waiting out an election timeout; the only voter", async () => {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(1), id: "node-1", addr: "127.0.0.1:8300" });
  assert.equal(clock.now(), 0, "no virtual time passed: the single voter campaigned at once");
  assert.equal(d.raft.isLeader(), true);
  assert.equal(d.raft.core.term, 2, "bootstrap entry at term 1, elected at term 2");
  assert.deepEqual(d.raft.configuration().servers, [{ id: "node-1", address: "127.0.0.1:8300", suffrage: "voter" }]);
  // Index 1: the bootstrap configuration; 2: the leader's no-op, applied before createDevServer resolved.
  assert.equal(d.raft.appliedIndex(), 2);
  const rpc = createLocalRpc(d.server);
  assert.equal(await rpc.call("Status.Leader", {}), "127.0.0.1:8300");
  assert.deepEqual(await rpc.call("Status.Peers", {}), ["127.0.0.1:8300"]);
  // Stays leader over many election timeouts (check-quorum with a quorum of one).
  await clock.runFor(30_000);
  assert.equal(d.raft.isLeader(), true);
  assert.equal(d.raft.core.term, 2, "bootstrap entry at term 1, elected at term 2");
  await d.stop();
  assert.equal(d.raft.isLeader(), false);
});

test("dev raft: writes are proposed, stored in the log and applied; consistent reads go through ReadIndex", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(2) });
  const rpc = createLocalRpc(d.server);
  const put = await rpc.call("KVS.Apply", { op: "set", entry: { key: "a", value: bytes("1") } });
  assert.deepEqual(put, { ok: true, index: 3 });
  const stored = await d.stores.log.getEntries(3, 4);
  assert.equal(stored[0]?.type, "normal", "the write is a log entry");
  assert.equal(d.raft.appliedIndex(), 3);
  assert.equal(d.raft.stats.applied, 1);
  const got = await rpc.call("KVS.Get", { key: "a", query: q({ requireConsistent: true }) });
  assert.equal(new TextDecoder().decode(got.entries[0]!.value), "1");
  assert.equal(got.meta.consistencyLevel, "consistent");
  await d.stop();
});

test("dev raft: a snapshot is taken after raft_snapshot_threshold entries and the log keeps raft_trailing_logs", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(3), snapshotThreshold: 10, trailingLogs: 4 });
  const rpc = createLocalRpc(d.server);
  const put = (i: number) => rpc.call("KVS.Apply", { op: "set", entry: { key: `k${i}`, value: bytes(String(i)) } });
  for (let i = 0; i < 7; i++) await put(i);
  assert.equal(d.raft.appliedIndex(), 9);
  assert.equal(d.raft.stats.snapshotsTaken, 0, "9 entries applied: below the threshold");
  for (let i = 7; i < 10; i++) await put(i);
  await d.raft.idle();
  assert.equal(d.raft.stats.snapshotsTaken, 1);
  const snap = await d.stores.snapshots.latest();
  assert.ok(snap, "a snapshot is stored");
  assert.equal(snap.meta.index, 10, "taken when the 10th entry was applied");
  assert.equal(d.raft.core.snapshotMeta?.index, 10);
  assert.deepEqual(snap.meta.configuration.servers.map((s) => s.id), ["dev"]);
  const first = await d.stores.log.firstIndex();
  assert.equal(first, snap.meta.index - 4 + 1, "entries before the snapshot are compacted, 4 trailing ones kept");
  assert.equal(await d.stores.log.lastIndex(), d.raft.core.lastIndex);
  // The store answers as before.
  const list = await rpc.call("KVS.List", { prefix: "k", query: q() });
  assert.equal(list.entries.length, 10);
  await d.stop();
});

test("dev raft: an FsmError halts the server: that write fails with it, later writes fail, nothing else is applied", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(4) });
  await d.raft.apply(encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a" } }));
  await assert.rejects(d.raft.apply(encodeCommand(99, {})), FsmError);
  assert.ok(d.raft.failure instanceof FsmError);
  await assert.rejects(d.raft.apply(encodeCommand(MessageType.KVS, { op: "set", entry: { key: "b" } })), NotLeaderError);
  assert.equal(d.fsm.state.kvsGet("b").value, undefined);
  assert.equal(d.raft.isLeader(), false);
  await d.stop();
});
