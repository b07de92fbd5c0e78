import assert from "node:assert/strict";
import { test } from "node:test";
import { Encoder } from "@msgpack/msgpack";
import { FsmError, StateError } from "../errors.ts";
import { CaptureSink, createLogger } from "../log/logger.ts";
import type { Fsm as RaftFsm } from "../raft/types.ts";
import { WatchSet } from "../state/watch.ts";
import { encodeCommand, Fsm, ignoreUnknownTypeFlag, MessageType, wrapCommand } from "./fsm.ts";

const bytes = (s: string) => new TextEncoder().encode(s);

test("fsm: KVS commands change the store at the entry's index", () => {
  const fsm = new Fsm();
  assert.equal(fsm.apply(2, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a", value: bytes("1"), flags: 3 } })), true);
  const e = fsm.state.kvsGet("a").value!;
  assert.deepEqual([e.createIndex, e.modifyIndex, e.flags], [2, 2, 3]);
  assert.equal(fsm.apply(3, encodeCommand(MessageType.KVS, { op: "cas", entry: { key: "a", modifyIndex: 1 } })), false);
  assert.equal(fsm.apply(4, encodeCommand(MessageType.KVS, { op: "delete-cas", entry: { key: "a", modifyIndex: 2 } })), true);
  assert.equal(fsm.state.kvsGet("a").value, undefined);
  assert.equal(fsm.lastIndex, 4);
});

test("fsm: fits the Raft driver's Fsm seam", () => {
  const seam: RaftFsm = new Fsm();
  assert.equal(seam.apply(2, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a" } })), true);
});

test("fsm: values are copied out of the log buffer", () => {
  const fsm = new Fsm();
  const cmd = encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a", value: bytes("xyz") } });
  fsm.apply(2, cmd);
  cmd.fill(0);
  assert.equal(new TextDecoder().decode(fsm.state.kvsGet("a").value!.value), "xyz");
});

test("fsm: refused ops come back as errors, the node keeps going", () => {
  const fsm = new Fsm();
  const r = fsm.apply(2, encodeCommand(MessageType.KVS, { op: "lock", entry: { key: "a", session: "nope" } }));
  assert.ok(r instanceof StateError);
  assert.equal((r as Error).message, 'invalid session "nope"');
  const bad = fsm.apply(3, encodeCommand(MessageType.KVS, { op: "frobnicate", entry: { key: "a" } }));
  assert.ok(bad instanceof Error && /Invalid KVS operation/.test(bad.message));
  const badEntry = fsm.apply(4, encodeCommand(MessageType.KVS, { op: "set", entry: { key: 7 } }));
  assert.ok(badEntry instanceof Error);
  assert.equal(fsm.state.tables.kvs.size, 0);
});

test("fsm: an unknown type halts (FsmError) unless flagged ignorable", () => {
  const sink = new CaptureSink();
  const fsm = new Fsm({ logger: createLogger({ sink, level: "debug" }) });
  assert.throws(() => fsm.apply(2, encodeCommand(77, {})), FsmError);
  assert.equal(fsm.apply(3, encodeCommand(77 | ignoreUnknownTypeFlag, {})), undefined);
  assert.ok(sink.text().includes("ignoring unknown message type"), sink.text());
  assert.throws(() => fsm.apply(4, new Uint8Array([0xc1])), FsmError);
  assert.throws(() => fsm.apply(5, new Encoder().encode({ op: "set" })), FsmError);
  assert.throws(() => fsm.register(MessageType.KVS, () => undefined), TypeError);
});

test("fsm: txn and tombstone commands", () => {
  const fsm = new Fsm();
  const out = fsm.apply(2, encodeCommand(MessageType.Txn, {
    ops: [{ kv: { verb: "set", key: "x", value: bytes("1") } }, { kv: { verb: "set", key: "y" } }],
  })) as { results: unknown[]; errors: unknown[] };
  assert.deepEqual(out.errors, []);
  assert.equal(out.results.length, 2);
  const bad = fsm.apply(3, encodeCommand(MessageType.Txn, { ops: [{ kv: { verb: "set", key: 5 } }, { nope: 1 }] })) as {
    errors: { opIndex: number }[];
  };
  assert.deepEqual(bad.errors.map((e) => e.opIndex), [0, 1]);
  fsm.apply(4, encodeCommand(MessageType.KVS, { op: "delete", entry: { key: "x" } }));
  assert.equal(fsm.state.tables.tombstones.size, 1);
  assert.equal(fsm.apply(5, encodeCommand(MessageType.Tombstone, { reapIndex: 4 })), true);
  assert.equal(fsm.state.tables.tombstones.size, 0);
});

test("fsm: snapshot → restore round trip is equal and wakes watchers of the old store", async () => {
  const fsm = new Fsm();
  fsm.apply(2, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a/1", value: bytes("1") } }));
  fsm.apply(3, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "a/2", value: bytes("2") } }));
  fsm.apply(4, encodeCommand(MessageType.KVS, { op: "delete", entry: { key: "a/2" } }));
  fsm.apply(5, encodeCommand(MessageType.KVS, { op: "cas", entry: { key: "a/1", modifyIndex: 99 } }));
  const snap = fsm.snapshot();
  const before = fsm.state;
  const ws = new WatchSet();
  let woke = 0;
  ws.onFire(() => woke++);
  before.kvsGet("zzz", ws);

  const other = new Fsm();
  await other.restore(snap);
  assert.deepEqual(other.state.kvsList("").value, before.kvsList("").value);
  assert.deepEqual(other.state.tables.tombstones.all(), before.tables.tombstones.all());
  assert.equal(other.lastIndex, 5, "the last applied index survives even when that entry changed nothing");

  await fsm.restore(fsm.snapshotStream());
  assert.notEqual(fsm.state, before);
  assert.equal(woke, 1);
  assert.ok(before.abandoned);
  await assert.rejects(fsm.restore(snap.subarray(0, 10)));
  assert.ok(!fsm.state.abandoned, "a failed restore keeps the current store");
});

test("fsm: a Restore entry replaces the state at its index, wakes watchers, and a bad state changes nothing", () => {
  const source = new Fsm();
  source.apply(2, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "kept", value: bytes("v") } }));
  const saved = source.snapshot();

  const fsm = new Fsm();
  fsm.apply(2, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "gone", value: bytes("x") } }));
  fsm.apply(3, encodeCommand(MessageType.KVS, { op: "set", entry: { key: "gone2", value: bytes("y") } }));
  const ws = new WatchSet();
  fsm.state.kvsGet("gone", ws);
  let woken = 0;
  ws.onFire(() => woken++);

  const bad = fsm.apply(4, encodeCommand(MessageType.Restore, { state: bytes("garbage") }));
  assert.ok(bad instanceof Error && /Snapshot state is not valid/.test(bad.message));
  assert.equal(fsm.state.kvsGet("gone").value?.key, "gone", "a refused restore keeps the state");
  assert.equal(woken, 0);

  assert.equal(fsm.apply(5, encodeCommand(MessageType.Restore, { state: saved })), true);
  assert.equal(woken, 1, "the old store is abandoned");
  assert.equal(fsm.state.kvsGet("gone").value, undefined);
  assert.equal(fsm.state.kvsGet("kept").value?.modifyIndex, 2, "rows keep their own indexes");
  assert.equal(fsm.state.kvsGet("kept").index, 5, "the table index moves to the restore's, so blocking readers see a change");
  assert.equal(fsm.lastIndex, 5);
});

test("fsm: a command with a request id is applied once; a repeat gets the first result and changes nothing", () => {
  const fsm = new Fsm();
  const put = (v: string) => encodeCommand(MessageType.KVS, { op: "set", entry: { key: "k", value: bytes(v) } });
  const cas = encodeCommand(MessageType.KVS, { op: "cas", entry: { key: "k", modifyIndex: 2, value: bytes("cas") } });
  assert.equal(fsm.apply(2, wrapCommand(put("old"), ["1-a", 1], 1_000)), true);
  assert.equal(fsm.apply(3, wrapCommand(cas, ["1-a", 2], 1_000)), true);
  assert.equal(fsm.apply(4, wrapCommand(put("new"), ["1-b", 1], 1_000)), true);
  // The same two commands again (a deposed leader's entry and its retry, both committed).
  assert.equal(fsm.apply(5, wrapCommand(put("old"), ["1-a", 1], 2_000)), true);
  assert.equal(fsm.apply(6, wrapCommand(cas, ["1-a", 2], 2_000)), true, "the CAS's true first answer, although a second apply would fail");
  const e = fsm.state.kvsGet("k").value!;
  assert.equal(new TextDecoder().decode(e.value), "new", "no old value re-installed over a newer write");
  assert.equal(e.modifyIndex, 4);
  assert.equal(fsm.lastIndex, 6);
  assert.deepEqual(fsm.stats, { repeats: 2, expired: 0 });
  // A malformed envelope is a damaged entry: the node halts.
  assert.throws(() => fsm.apply(7, new Uint8Array([0xc1, 0, 9, 1])), FsmError);
});

test("fsm: the request table survives snapshots, and a Restore entry does not forget it", async () => {
  const fsm = new Fsm();
  const put = (v: string) => encodeCommand(MessageType.KVS, { op: "set", entry: { key: "k", value: bytes(v) } });
  fsm.apply(2, wrapCommand(put("a"), ["1-a", 1], 1_000));
  const snap = fsm.snapshot();
  const other = new Fsm();
  await other.restore(snap);
  other.apply(3, wrapCommand(put("b"), ["1-b", 1], 1_000));
  assert.equal(other.apply(4, wrapCommand(put("a"), ["1-a", 1], 1_000)), true);
  assert.equal(new TextDecoder().decode(other.state.kvsGet("k").value!.value), "b", "the repeat after a snapshot install is not applied");

  const empty = new Fsm().snapshot();
  assert.equal(other.apply(5, wrapCommand(encodeCommand(MessageType.Restore, { state: empty }), ["1-c", 1], 1_000)), true);
  other.apply(6, wrapCommand(put("a"), ["1-a", 1], 1_000));
  assert.equal(other.state.kvsGet("k").value, undefined, "a write applied before a restore is not applied again after it");
  assert.equal(other.apply(7, wrapCommand(encodeCommand(MessageType.Restore, { state: empty }), ["1-c", 1], 1_000)), true);
  assert.equal(other.stats.repeats, 3);
});

test("fsm: an enveloped lock checks the lock delay at the leader's stamped time", () => {
  const fsm = new Fsm();
  const session = { id: "s1", name: "", node: "n1", lockDelayMs: 15_000, behavior: "release", ttl: "", nodeChecks: [], serviceChecks: [] };
  fsm.apply(2, encodeCommand(MessageType.Register, { node: "n1", address: "10.0.0.1" }));
  fsm.apply(3, encodeCommand(MessageType.Session, { op: "create", session }));
  const lock = encodeCommand(MessageType.KVS, { op: "lock", entry: { key: "l", session: "s1" } });
  assert.equal(fsm.apply(4, wrapCommand(lock, ["1-a", 1], 100_000)), true);
  fsm.apply(5, encodeCommand(MessageType.Session, { op: "destroy", id: "s1", nowMs: 100_000 }));
  fsm.apply(6, encodeCommand(MessageType.Session, { op: "create", session: { ...session, id: "s2" } }));
  const again = encodeCommand(MessageType.KVS, { op: "lock", entry: { key: "l", session: "s2" } });
  assert.equal(fsm.apply(7, wrapCommand(again, ["1-a", 2], 110_000)), false, "inside the 15 s lock delay");
  assert.equal(fsm.apply(8, wrapCommand(again, ["1-a", 3], 116_000)), true, "after it");
});
