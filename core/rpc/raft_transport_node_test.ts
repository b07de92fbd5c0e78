import { test } from "node:test";
import assert from "node:assert/strict";
import { nullLogger } from "../log/logger.ts";
import type { AppendRequest, RaftMessage, SnapshotRequest, VoteRequest } from "../raft/types.ts";
import { until } from "../testing/until.ts";
import { raftMessageMethod, TcpRaftTransport } from "./raft_transport_node.ts";
import { createRpcServer, RpcClientPool } from "./transport_node.ts";

/** Poll on every event-loop turn (I/O), failing after 5 s. */
const eachTurn = { intervalMs: 0 };

async function node(id: string) {
  const server = await createRpcServer({ host: "127.0.0.1", port: 0, logger: nullLogger() });
  const pool = new RpcClientPool({ logger: nullLogger() });
  const transport = new TcpRaftTransport({ server, pool, logger: nullLogger() });
  const inbox: RaftMessage[] = [];
  transport.onMessage((m) => inbox.push(m));
  return {
    id,
    server,
    pool,
    transport,
    inbox,
    async close() {
      await transport.close();
      pool.close();
      await server.close();
    },
  };
}

test("raft transport: messages cross TCP both ways, validated and intact", async () => {
  const a = await node("a");
  const b = await node("b");
  try {
    assert.equal(a.transport.localAddress, a.server.address);
    const vote: VoteRequest = { type: "vote", from: "a", to: "b", term: 3, pre: true, lastIndex: 10, lastTerm: 2, transfer: false, fromAddress: a.server.address };
    a.transport.send({ id: "b", address: b.server.address }, vote);
    await until(() => b.inbox.length === 1, "the vote at b", eachTurn);
    assert.deepEqual(b.inbox[0], vote);

    const append: AppendRequest = {
      type: "append",
      from: "b",
      to: "a",
      term: 3,
      prevIndex: 4,
      prevTerm: 2,
      commit: 4,
      entries: [
        { index: 5, term: 3, type: "normal", data: new Uint8Array([1, 2, 3]) },
        { index: 6, term: 3, type: "noop", data: new Uint8Array(0) },
      ],
    };
    // A tick's worth of messages: one socket write.
    for (let i = 0; i < 100; i++) b.transport.send({ id: "a", address: a.server.address }, { ...append, commit: i });
    await until(() => a.inbox.length === 100, "100 appends at a", eachTurn);
    const first = a.inbox[0] as AppendRequest;
    assert.deepEqual(first.entries, append.entries);
    assert.ok(first.entries[0]!.data instanceof Uint8Array);
    assert.deepEqual(a.inbox.map((m) => (m as AppendRequest).commit), Array.from({ length: 100 }, (_, i) => i));
    assert.ok(b.pool.stats.writes <= 2, `${b.pool.stats.writes} writes for 100 messages`);
    assert.equal(b.transport.stats.sent, 100);
  } finally {
    await a.close();
    await b.close();
  }
});

test("raft transport: malformed bodies are counted and dropped", async () => {
  const a = await node("a");
  const pool = new RpcClientPool({ logger: nullLogger() });
  try {
    pool.send(a.server.address, raftMessageMethod, { type: "vote", from: "x" });
    pool.send(a.server.address, raftMessageMethod, "junk");
    pool.send(a.server.address, raftMessageMethod, { type: "timeoutNow", from: "x", to: "a", term: 1 });
    await until(() => a.transport.stats.received === 1, "the good message", eachTurn);
    assert.equal(a.transport.stats.invalid, 2);
    assert.equal(a.inbox.length, 1);
    assert.equal(a.inbox[0]!.type, "timeoutNow");
  } finally {
    pool.close();
    await a.close();
  }
});

test("raft transport: sends to a down peer are dropped, never thrown", async () => {
  const a = await node("a");
  const b = await node("b");
  const deadAddress = b.server.address;
  await b.close();
  try {
    const msg: RaftMessage = { type: "heartbeat", from: "a", to: "b", term: 1, commit: 0, ctx: 0 };
    assert.doesNotThrow(() => a.transport.send({ id: "b", address: deadAddress }, msg));
    await until(() => a.pool.stats.connectFailures === 1, "the failed connect", eachTurn);
    a.transport.send({ id: "b", address: deadAddress }, msg);
    assert.equal(a.transport.stats.dropped, 1, "dropped during the back-off");
    a.transport.send({ id: "b", address: "not an address" }, msg);
    assert.equal(a.transport.stats.dropped, 2);
  } finally {
    await a.close();
  }
});

test("raft transport: an InstallSnapshot chunk written into its frame, or sent as parts, arrives as sent, in order with other messages", async () => {
  const a = await node("a");
  const b = await node("b");
  try {
    const to = { id: "b", address: b.server.address };
    const meta = { index: 40, term: 2, sizeBytes: 3 << 20, configuration: { servers: [{ id: "a", address: a.server.address, suffrage: "voter" as const }] } };
    const base: SnapshotRequest = { type: "snapshot", from: "a", to: "b", term: 2, meta, offset: 0, chunk: new Uint8Array([9, 9]), done: false, fromAddress: a.server.address };
    const sizes = [1 << 20, 0, 2 << 20];
    let offset = 0;
    for (const n of sizes) {
      const msg = { ...base, offset, done: offset + n >= meta.sizeBytes };
      if (n === 2 << 20) {
        // The last one as parts end to end (a restore's bytes sent from memory).
        const bytes = new Uint8Array(n).map((_, i) => (offset + i) % 251);
        assert.ok(a.transport.sendSnapshotChunkParts(to, msg, [bytes.subarray(0, 7), bytes.subarray(7, 7), bytes.subarray(7, 300_000), bytes.subarray(300_000)]));
        offset += n;
        continue;
      }
      const p = a.transport.prepareSnapshotChunk(to, msg, n);
      assert.ok(p);
      assert.equal(p.chunk.length, n);
      for (let i = 0; i < n; i++) p.chunk[i] = (offset + i) % 251;
      p.send();
      offset += n;
    }
    a.transport.send(to, { type: "heartbeat", from: "a", to: "b", term: 2, commit: 0, ctx: 1, fromAddress: a.server.address } as RaftMessage);
    await until(() => b.inbox.length === 4, "three chunks and a heartbeat at b", eachTurn);
    offset = 0;
    for (let k = 0; k < sizes.length; k++) {
      const m = b.inbox[k] as SnapshotRequest;
      assert.equal(m.type, "snapshot");
      assert.deepEqual({ ...m, chunk: undefined }, { ...base, offset, done: offset + sizes[k]! >= meta.sizeBytes, chunk: undefined });
      assert.equal(m.chunk.length, sizes[k]);
      for (let i = 0; i < m.chunk.length; i++) if (m.chunk[i] !== (offset + i) % 251) assert.fail(`chunk ${k} byte ${i}`);
      offset += sizes[k]!;
    }
    assert.equal(b.inbox[3]!.type, "heartbeat");
  } finally {
    await a.close();
    await b.close();
  }
});
