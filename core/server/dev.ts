// `-dev` (and tests): one server running the same Raft as a cluster, with a
// single in-memory voter, itself. Writes go through RaftNode.apply (propose,
// append, commit, apply), linearizable reads through ReadIndex, and the log
// is compacted by snapshots; only the stores (memory, no fsync) and the
// transport (nobody to talk to) differ from `-server`.

import type { Rpc } from "../rpc/methods.ts";
import type { Clock } from "../clock/clock.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { CoordinateSource } from "../gossip/near.ts";
import type { CoordinateUpdateConfig } from "./coordinate.ts";
import { createRaftNode, type RaftNode } from "../raft/driver.ts";
import { MemoryLogStore } from "../raft/log_store_memory.ts";
import { MemorySnapshotStore } from "../raft/snapshot_store_memory.ts";
import { MemoryStableStore } from "../raft/stable_store_memory.ts";
import type { RaftMessage, RaftTransport, ServerId } from "../raft/types.ts";
import type { Rng } from "../sim/rng.ts";
import type { QueryTimes } from "./blocking.ts";
import type { Consensus } from "./consensus.ts";
import { Fsm } from "./fsm.ts";
import { Server } from "./server.ts";
import type { AclServerConfig } from "./acl.ts";

export interface DevServerOptions {
  clock: Clock;
  rng: Rng;
  logger?: Logger;
  /** Raft server ID (the node ID). Default "dev". */
  id?: ServerId;
  /** The RPC address the server reports as its own (leader, peers). Default "127.0.0.1:8300". */
  addr?: string;
  datacenter?: string;
  /** LAN coordinates, for prepared queries' `near` sort. */
  coordinates?: CoordinateSource;
  /** Consul's performance.raft_multiplier. Default 1. */
  raftMultiplier?: number;
  /** Consul's raft_snapshot_threshold. Default 16,384. */
  snapshotThreshold?: number;
  /** Consul's raft_snapshot_interval: how often the threshold is checked (see RaftNodeOptions). Default: after every applied batch. */
  snapshotIntervalMs?: number;
  /** Consul's raft_trailing_logs. Default 10,240. */
  trailingLogs?: number;
  /** Consul's default_query_time and max_query_time. Default 5 and 10 minutes. */
  queryTimes?: QueryTimes;
  /** How the leader batches coordinate updates (consul.coordinate.*). */
  coordinateUpdate?: Partial<CoordinateUpdateConfig>;
  /** ACLs (`acl {}`); absent: off. */
  acl?: AclServerConfig;
  /** Calls to other datacenters (tests pair two dev servers as two datacenters). */
  remote?: () => Rpc | undefined;
}

export interface DevServer {
  fsm: Fsm;
  raft: RaftNode;
  /** The Raft node, as the endpoints see it. */
  consensus: Consensus;
  server: Server;
  /** The in-memory Raft stores (tests look at compaction here). */
  stores: { log: MemoryLogStore; snapshots: MemorySnapshotStore };
  /** Stop ticking and fail pending calls; the stores go with the process. */
  stop(): Promise<void>;
}

/** A single voter has nobody to send to: every message is dropped (counted, so a test can see one). */
class LoneRaftTransport implements RaftTransport {
  readonly localAddress: string;
  dropped = 0;

  constructor(localAddress: string) {
    this.localAddress = localAddress;
  }

  send(_target: { id: ServerId; address: string }, _msg: RaftMessage): void {
    this.dropped++;
  }

  onMessage(_handler: (msg: RaftMessage) => void): void {}

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Start the one-voter Raft and resolve once it leads and has applied its
 * first entry, so the first request is served at once. It campaigns
 * straight away rather than after a randomized election timeout, as etcd
 * does for a single-member cluster: with one voter nobody else can win.
 */
export async function createDevServer(options: DevServerOptions): Promise<DevServer> {
  const logger = options.logger ?? nullLogger();
  const id = options.id ?? "dev";
  const addr = options.addr ?? "127.0.0.1:8300";
  const fsm = new Fsm({ logger: logger.named("fsm") });
  const stores = { log: new MemoryLogStore({ modelCrashes: false, copyEntries: false }), snapshots: new MemorySnapshotStore() };
  const raft = await createRaftNode({
    id,
    address: addr,
    peers: [{ id, address: addr }],
    fsm,
    logStore: stores.log,
    stableStore: new MemoryStableStore(),
    snapshotStore: stores.snapshots,
    transport: new LoneRaftTransport(addr),
    clock: options.clock,
    rng: options.rng.fork(),
    logger: logger.named("raft"),
    raftMultiplier: options.raftMultiplier ?? 1,
    snapshotThreshold: options.snapshotThreshold,
    snapshotIntervalMs: options.snapshotIntervalMs,
    raft: { trailingLogs: options.trailingLogs },
  });
  const server = new Server({ fsm, consensus: raft, clock: options.clock, rng: options.rng, logger, datacenter: options.datacenter, coordinates: options.coordinates, queryTimes: options.queryTimes, coordinateUpdate: options.coordinateUpdate, acl: options.acl, remote: options.remote });
  await becomeLeader(raft);
  return {
    fsm,
    raft,
    consensus: raft,
    server,
    stores,
    async stop() {
      server.sessionTimers.stop();
      server.coordinateBatcher.stop();
      await raft.stop();
    },
  };
}

async function becomeLeader(raft: RaftNode): Promise<void> {
  const r = raft.campaign();
  if (!r.ok) {
    await raft.stop();
    throw new Error(`Cannot elect the -dev server: ${r.reason}`);
  }
  // Leader at once; its no-op entry commits as soon as it is stored.
  const target = raft.core.lastIndex;
  for (let round = 0; round < 100 && raft.appliedIndex() < target && !raft.failure; round++) await raft.idle();
  if (!raft.isLeader() || raft.appliedIndex() < target) {
    const why = raft.failure ? `: ${raft.failure.message}` : "";
    await raft.stop();
    throw new Error(`The -dev server did not become leader${why}`);
  }
}
