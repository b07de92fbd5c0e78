// Three Raft servers on real TCP (loopback) with real file stores: elect,
// commit, lose a follower, restart everything from disk, commit again.
// Raft's timers run on a SimClock advanced by the test; I/O is real.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "../log/logger.ts";
import { createRaftNode } from "../raft/driver.ts";
import type { RaftNode } from "../raft/driver.ts";
import { FileLogStore } from "../raft/log_store_file_node.ts";
import { FileSnapshotStore } from "../raft/snapshot_store_file_node.ts";
import { FileStableStore } from "../raft/stable_store_file_node.ts";
import type { Fsm } from "../raft/types.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { TcpRaftTransport } from "./raft_transport_node.ts";
import { createRpcServer, RpcClientPool } from "./transport_node.ts";
import type { RpcServer } from "./transport_node.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

class ListFsm implements Fsm {
  items: string[] = [];
  apply(_index: number, data: Uint8Array): unknown {
    this.items.push(dec.decode(data));
    return this.items.length;
  }
  snapshot(): Uint8Array {
    return enc.encode(JSON.stringify(this.items));
  }
  restore(data: Uint8Array): void {
    this.items = JSON.parse(dec.decode(data)) as string[];
  }
}

interface Server {
  id: string;
  dir: string;
  port: number;
  rpc?: RpcServer;
  pool?: RpcClientPool;
  transport?: TcpRaftTransport;
  node?: RaftNode;
  fsm: ListFsm;
  stores?: { log: FileLogStore; stable: FileStableStore; snaps: FileSnapshotStore };
}

const clock = new SimClock();
const live: Server[] = [];

/**
 * Advances Raft time in 10 ms steps. Between steps every node finishes its
 * pending Ready (fsyncs included) and real I/O gets a few turns, so virtual
 * time never outruns the disk.
 */
async function runUntil(pred: () => boolean, what: string, maxVirtualMs = 60_000): Promise<void> {
  for (let t = 0; t < maxVirtualMs; t += 10) {
    for (let i = 0; i < 3; i++) {
      await Promise.all(live.map((s) => s.node?.idle()));
      await new Promise((r) => setImmediate(r));
    }
    if (pred()) return;
    clock.advance(10);
  }
  throw new Error(`Not reached within ${maxVirtualMs} virtual ms: ${what}`);
}

async function start(s: Server, peers: { id: string; address: string }[], seed: number): Promise<void> {
  s.rpc = await createRpcServer({ host: "127.0.0.1", port: s.port, logger: nullLogger() });
  s.port = s.rpc.port;
  s.pool = new RpcClientPool({ logger: nullLogger(), reconnectBackoffMs: 0 });
  s.transport = new TcpRaftTransport({ server: s.rpc, pool: s.pool, logger: nullLogger() });
  const log = await FileLogStore.open({ dir: join(s.dir, "raft"), logger: nullLogger(), segmentSizeBytes: 4096 });
  const stable = await FileStableStore.open({ dir: join(s.dir, "raft"), logger: nullLogger() });
  const snaps = await FileSnapshotStore.open({ dir: join(s.dir, "raft", "snapshots"), logger: nullLogger() });
  s.stores = { log, stable, snaps };
  s.fsm = new ListFsm();
  s.node = await createRaftNode({
    id: s.id,
    address: s.rpc.address,
    peers,
    fsm: s.fsm,
    logStore: log,
    stableStore: stable,
    snapshotStore: snaps,
    transport: s.transport,
    clock,
    rng: new Rng(seed),
    snapshotThreshold: 25,
  });
}

async function stop(s: Server): Promise<void> {
  await s.node?.stop();
  await s.transport?.close();
  s.pool?.close();
  await s.rpc?.close();
  await s.stores?.log.close();
  await s.stores?.stable.close();
  await s.stores?.snaps.close();
  s.node = undefined;
}

test("raft over TCP with file stores: elect, commit, restart from disk, commit again", async () => {
  const root = await mkdtemp(join(tmpdir(), "cairn-raft-tcp-"));
  const servers: Server[] = ["a", "b", "c"].map((id) => ({ id, dir: join(root, id), port: 0, fsm: new ListFsm() }));
  try {
    // Bind first so every server knows every address.
    for (const s of servers) {
      const probe = await createRpcServer({ host: "127.0.0.1", port: 0, logger: nullLogger() });
      s.port = probe.port;
      await probe.close();
    }
    const peers = servers.map((s) => ({ id: s.id, address: `127.0.0.1:${s.port}` }));
    live.push(...servers);
    for (const [i, s] of servers.entries()) await start(s, peers, 100 + i);

    const leader = () => servers.find((s) => s.node?.isLeader());
    await runUntil(() => leader() !== undefined, "a leader");
    const applyAll = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const l = leader();
        assert.ok(l, "a leader to write to");
        let done = false;
        const p = l.node!.apply(enc.encode(`cmd-${i}`)).finally(() => (done = true));
        await runUntil(() => done, `cmd-${i} committed`);
        await p;
      }
    };
    await applyAll(0, 40);
    await runUntil(() => servers.every((s) => s.fsm.items.length === 40), "every server applied 40");
    for (const s of servers) assert.deepEqual(s.fsm.items, Array.from({ length: 40 }, (_, i) => `cmd-${i}`), `server ${s.id}`);
    const snapshotted = await servers[0]!.stores!.snaps.list();
    assert.ok(snapshotted.length > 0, "a snapshot was taken (threshold 25)");

    // Stop one follower; the other two still commit.
    const follower = servers.find((s) => !s.node!.isLeader())!;
    await stop(follower);
    await applyAll(40, 50);

    // Restart everything from disk on the same ports.
    for (const s of servers) await stop(s);
    for (const [i, s] of servers.entries()) await start(s, peers, 200 + i);
    await runUntil(() => leader() !== undefined, "a leader after restart");
    await applyAll(50, 60);
    await runUntil(() => servers.every((s) => s.fsm.items.length === 60), "every server applied 60 after restart");
    for (const s of servers) assert.deepEqual(s.fsm.items, Array.from({ length: 60 }, (_, i) => `cmd-${i}`), `server ${s.id}`);
    for (const s of servers) assert.equal(s.transport!.stats.invalid, 0);
  } finally {
    for (const s of servers) await stop(s).catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
});
