// Server mode: the Raft peer (core/raft driver) with its file stores under
// `<dataDir>/raft/`, the FSM and endpoints (core/server), the server RPC on
// `bindAddr:ports.server` (endpoints + `Raft.Message`), forwarding to the
// leader (core/rpc/forward.ts), bootstrap-expect from LAN gossip and the leader's
// reconciliation of gossip servers into the Raft configuration. `-dev` runs
// the same Raft with one in-memory voter (startDevNode) and the same
// operator endpoints, without the RPC listener.
import type { CoordinateSource } from "../gossip/near.ts";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { lazyFsPromises } from "../lazy_builtins_node.ts";
import { join } from "node:path";
import type { Clock, Timer } from "../clock/clock.ts";
import { defaultConfig } from "../config/defaults.ts";
import type { AgentConfig } from "../config/types.ts";
import { BadRequestError, CairnError, CorruptionError, NoLeaderError, RpcError, errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { createRaftNode, type RaftNode } from "../raft/driver.ts";
import { FileLogStore } from "../raft/log_store_file_node.ts";
import { FileSnapshotStore } from "../raft/snapshot_store_file_node.ts";
import type { SnapshotStore } from "../raft/types.ts";
import { FileStableStore } from "../raft/stable_store_file_node.ts";
import type { Configuration } from "../raft/types.ts";
import { operatorRaftMethods, type OperatorRaftRpc as OperatorRaftBackend } from "../rpc/methods.ts";
import { TcpRaftTransport } from "../rpc/raft_transport_node.ts";
import { RateLimits, type RateLimitsConfig, type RequestLimitsMode } from "../rpc/rate_limit.ts";
import { createRpcServer, RpcClientPool, type RpcServer } from "../rpc/transport_node.ts";
import type { Consensus } from "../server/consensus.ts";
import { createDevServer } from "../server/dev.ts";
import { Fsm } from "../server/fsm.ts";
import { Autopilot } from "../server/leader/autopilot.ts";
import { operatorMethodAccess, raftOperatorEndpoints, raftStats, type RaftOperatorEndpoints } from "../server/operator.ts";
import { autopilotEndpoints, type AutopilotEndpoints } from "../server/operator_autopilot.ts";
import { version } from "../version.ts";
import { Server } from "../server/server.ts";
import type { Rng } from "../sim/rng.ts";
import {
  aliveServers,
  bootstrapConfiguration,
  decideBootstrap,
  parsePeersJson,
  serverFromMember,
  type LanPoolLike,
} from "../server/bootstrap.ts";
import { RpcRouter } from "../rpc/forward.ts";
import { datacentersByDistance, WanRoutes, type WanServer } from "../rpc/wan_routes.ts";
import { distanceSeconds } from "../gossip/coordinate.ts";
import { coordinateListDatacentersMethod, wanDatacenterMaps } from "../http/coordinate.ts";
import type { PoolMember } from "../http/backends.ts";
import { writeFileDurable, writeFileDurableSync } from "../durable_node.ts";
import { randomUUID } from "../random_node.ts";
import type { RpcTls } from "./rpc_tls.ts";
import { aclServerConfig } from "./acl_node.ts";
import { userEventPrefix } from "../pool/user_events.ts";

const mkdir = lazyFsPromises("mkdir");
const readFile = lazyFsPromises("readFile");
const rename = lazyFsPromises("rename");

export type { RaftConfigurationReply, RaftServerInfo } from "../server/operator.ts";

/** Consul's Internal.EventFire: a user event fired into this server's datacenter from another one. */
export const eventFireMethod = "Internal.EventFire";

/** Operator methods served over the server RPC (outside the typed KV/catalog contract). */
export const operatorMethods = operatorRaftMethods;

/**
 * Answer an operator method from `ops` (and `autopilot`, on servers that run
 * it), or undefined when `method` is not one. `authorize` (the server's
 * `authorizeOperator`) checks the token in the args first.
 */
export function callRaftOperator(ops: RaftOperatorEndpoints, method: string, args: unknown, autopilot?: AutopilotEndpoints, authorize?: (method: string, args: unknown) => void): Promise<unknown> | undefined {
  if (authorize && Object.hasOwn(operatorMethodAccess, method)) {
    try {
      authorize(method, args);
    } catch (err) {
      return Promise.reject(err);
    }
  }
  switch (method) {
    case operatorMethods.autopilotGetConfiguration:
    case operatorMethods.autopilotSetConfiguration:
    case operatorMethods.serverHealth:
      if (!autopilot) return Promise.reject(new CairnError("autopilot_unavailable", "Autopilot does not run on this agent"));
      return method === operatorMethods.autopilotGetConfiguration
        ? autopilot.getConfiguration(args)
        : method === operatorMethods.autopilotSetConfiguration
          ? autopilot.setConfiguration(args)
          : autopilot.serverHealth(args);
    case operatorMethods.getConfiguration:
      return ops.getConfiguration(args);
    case operatorMethods.removePeer:
      return ops.removePeer(args);
    case operatorMethods.transferLeader:
      return ops.transferLeader(args);
    default:
      return undefined;
  }
}

export interface ServerNodeOptions {
  config: AgentConfig;
  nodeId: string;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Address other servers dial for RPC and Raft (host only); default advertiseAddr, else bindAddr. */
  advertiseAddr?: string;
  /** Take a snapshot after this many entries; default config.raftSnapshotThreshold (Consul raft_snapshot_threshold). */
  snapshotThreshold?: number;
  /** Entries kept behind a snapshot; default config.raftTrailingLogs (Consul raft_trailing_logs). */
  trailingLogs?: number;
  /** TLS on server RPC (tls.internal_rpc); absent: plaintext. */
  rpcTls?: RpcTls;
  /** The agent's rpc_rate and request_limits; absent: built from config (tests). */
  limits?: RateLimits;
  /** Called at each write to the snapshot store (FileSnapshotStoreOptions.onWrite). */
  onSnapshotWrite?: () => void;
}

/** The limits block as the rate limiters take it ("" mode is Consul's "disabled"). */
export function rateLimitsConfig(config: AgentConfig): RateLimitsConfig {
  const { rpcRate, rpcMaxBurst, requestLimits } = config.limits;
  return { rpcRate, rpcMaxBurst, requestLimits: { ...requestLimits, mode: (requestLimits.mode || "disabled") as RequestLimitsMode } };
}

/** Consensus for the endpoints: the Raft node once it exists, "no leader" before. */
class RaftConsensus implements Consensus {
  node: RaftNode | undefined;

  apply(command: Uint8Array, options?: { signal?: AbortSignal }): Promise<{ index: number; result: unknown }> {
    if (!this.node) return Promise.reject(new NoLeaderError());
    return this.node.apply(command, options);
  }
  isLeader(): boolean {
    return this.node?.isLeader() ?? false;
  }
  leaderAddr(): string {
    return this.node?.leaderAddr() ?? "";
  }
  lastContactMs(): number {
    return this.node?.lastContactMs() ?? 0;
  }
  peers(): string[] {
    return this.node?.peers() ?? [];
  }
  readBarrier(options?: { signal?: AbortSignal }): Promise<void> {
    if (!this.node) return Promise.reject(new NoLeaderError());
    return this.node.readBarrier(options);
  }
  // Snapshot restores (core/server/snapshot.ts SnapshotInstaller) and the archive's term.
  get address(): string | undefined {
    return this.node?.address;
  }
  get snapshotStore(): SnapshotStore | undefined {
    return this.node?.snapshotStore;
  }
  get core(): RaftNode["core"] | undefined {
    return this.node?.core;
  }
  restoreUserSnapshot(options: Parameters<RaftNode["restoreUserSnapshot"]>[0]): ReturnType<RaftNode["restoreUserSnapshot"]> {
    if (!this.node) return Promise.reject(new NoLeaderError());
    return this.node.restoreUserSnapshot(options);
  }
  sendAhead(...args: Parameters<RaftNode["sendAhead"]>): ReturnType<RaftNode["sendAhead"]> {
    return this.node?.sendAhead(...args);
  }
}

export class ServerNode {
  readonly fsm: Fsm;
  readonly server: Server;
  readonly router: RpcRouter;
  readonly rpcServer: RpcServer;
  readonly pool: RpcClientPool;
  /** "host:port" other servers dial. */
  readonly rpcAddr: string;
  readonly #o: ServerNodeOptions;
  readonly #log: Logger;
  readonly #consensus: RaftConsensus;
  readonly #stores: { log: FileLogStore; stable: FileStableStore; snaps: FileSnapshotStore };
  readonly #transport: TcpRaftTransport;
  readonly #operator: RaftOperatorEndpoints;
  readonly #autopilotOps: AutopilotEndpoints;
  /** Autopilot: the leader duty runs it; the operator endpoints report its health. */
  readonly autopilot: Autopilot;
  #lan: (LanPoolLike & { userEvent?(name: string, payload: Uint8Array, coalesce: boolean): void }) | undefined;
  #wan: LanPoolLike | undefined;
  /** Servers of other datacenters, from the WAN pool: where a request for one goes. */
  readonly wanRoutes: WanRoutes;
  #unsubscribe: (() => void) | undefined;
  #unsubscribeWan: (() => void) | undefined;
  #unsubscribeLost: (() => void) | undefined;
  #timer: Timer | undefined;
  #starting = false;
  #bootstrapNote = "";
  #stopped = false;
  /** Called with the new state whenever this server gains or loses Raft leadership (leader duties follow it). */
  readonly leadershipListeners = new Set<(leader: boolean) => void>();
  /** Called if Raft halts (a full disk, a damaged file): the agent exits so a supervisor restarts it. */
  readonly haltListeners = new Set<(err: Error) => void>();

  constructor(
    o: ServerNodeOptions,
    parts: {
      fsm: Fsm;
      consensus: RaftConsensus;
      rpcServer: RpcServer;
      pool: RpcClientPool;
      transport: TcpRaftTransport;
      stores: { log: FileLogStore; stable: FileStableStore; snaps: FileSnapshotStore };
      rpcAddr: string;
    },
  ) {
    this.#o = o;
    this.#log = o.logger;
    this.fsm = parts.fsm;
    this.#consensus = parts.consensus;
    this.rpcServer = parts.rpcServer;
    this.pool = parts.pool;
    this.#transport = parts.transport;
    this.#stores = parts.stores;
    this.rpcAddr = parts.rpcAddr;
    this.wanRoutes = new WanRoutes({ localDatacenter: o.config.datacenter, servers: () => this.#wanServers(), rng: o.rng.fork() });
    // verify_server_hostname: a server of another datacenter must have a certificate for server.<its dc>.<domain>.
    if (o.rpcTls) o.rpcTls.dcOf = (address) => this.wanRoutes.datacenterOf(address);
    this.server = new Server({
      fsm: this.fsm,
      consensus: this.#consensus,
      clock: o.clock,
      rng: o.rng.fork(),
      logger: o.logger,
      datacenter: o.config.datacenter,
      datacenters: () => this.datacentersByDistance(),
      // Prepared-query failover asks other datacenters through this server's router (over the WAN).
      remote: () => this.router,
      coordinates: () => this.#lan?.coordinates?.() ?? [],
      queryTimes: { defaultMs: o.config.defaultQueryTimeMs, maxMs: o.config.maxQueryTimeMs },
      coordinateUpdate: coordinateUpdateOf(o.config),
      acl: aclServerConfig(o.config, o.logger),
    });
    const local = {
      handle: (method: string, args: unknown, options?: { signal?: AbortSignal }): Promise<unknown> => this.#handleLocal(method, args, options),
    };
    this.router = new RpcRouter({
      local,
      remote: this.pool,
      servers: () => this.#serverAddrs(),
      clock: o.clock,
      rng: o.rng.fork(),
      logger: o.logger.named("rpc"),
      holdTimeoutMs: o.config.limits.rpcHoldTimeoutMs,
      self: this.rpcAddr,
      datacenter: o.config.datacenter,
      wan: this.wanRoutes,
      limits: o.limits ?? new RateLimits(o.clock, rateLimitsConfig(o.config), o.logger.named("rpc")),
      isLeader: () => this.#consensus.isLeader(),
    });
    // Calls from other agents: answer here, or forward once to the leader (the caller retries).
    const methods = [...Object.keys(this.server.handlers), ...Object.values(operatorMethods), coordinateListDatacentersMethod, eventFireMethod];
    for (const m of methods) this.rpcServer.handle(m, (body, ctx) => this.router.serve(m, body, { signal: ctx.signal }));
    this.#operator = raftOperatorEndpoints({
      raft: () => this.#consensus.node,
      selfId: o.nodeId,
      nodeName: o.config.nodeName,
      names: () => this.#serverNames(),
      clock: o.clock,
      raftMultiplier: o.config.performance.raftMultiplier,
      logger: this.#log,
    });
    this.autopilot = new Autopilot({
      raft: () => this.#consensus.node,
      lan: () => this.#lan,
      state: () => this.fsm.state,
      // Configs built in code before autopilot {} existed have no such field.
      initial: { ...(o.config.autopilot ?? defaultConfig().autopilot) },
      clock: o.clock,
      nodeName: o.config.nodeName,
      version,
    });
    this.#autopilotOps = autopilotEndpoints({ autopilot: this.autopilot, consensus: this.#consensus, clock: o.clock });
  }

  /** The Raft node, once bootstrapped or restored. */
  get raft(): RaftNode | undefined {
    return this.#consensus.node;
  }

  get consensus(): Consensus {
    return this.#consensus;
  }

  /** The WAN pool (servers of every datacenter): which datacenters exist and where their servers are. */
  attachWan(wan: LanPoolLike): void {
    this.#wan = wan;
    this.#unsubscribeWan = wan.onMemberEvent(() => this.wanRoutes.invalidate());
    this.wanRoutes.invalidate();
  }

  /** Every known datacenter, ours first, then by median WAN round trip (consul GetDatacentersByDistance). */
  datacentersByDistance(): string[] {
    const dc = this.#o.config.datacenter;
    const wan = this.#wan;
    if (!wan) return [dc];
    const coords = new Map((wan.coordinates?.() ?? []).map((c) => [c.node, c.coord]));
    const self = coords.get(`${this.#o.config.nodeName}.${dc}`);
    return datacentersByDistance(dc, this.#wanServers(), (node) => {
      const c = coords.get(node);
      return self && c && c.vec.length === self.vec.length ? distanceSeconds(self, c) * 1_000 : undefined;
    });
  }

  #wanServers(): WanServer[] {
    const out: WanServer[] = [];
    for (const m of this.#wan?.members() ?? []) {
      const s = serverFromMember(m);
      if (s) out.push({ name: s.name, datacenter: s.datacenter, address: s.address, status: s.status });
    }
    return out;
  }

  /** Follow the LAN pool: bootstrap-expect, and (on the leader) add/remove servers as gossip sees them. */
  attachLan(lan: LanPoolLike & { userEvent?(name: string, payload: Uint8Array, coalesce: boolean): void }): void {
    this.#lan = lan;
    this.#unsubscribe = lan.onMemberEvent(() => this.#onMembership());
    this.#onMembership();
  }

  /** Start Raft now: from disk, as the single bootstrap voter (`-bootstrap`), or waiting to be added. */
  async startRaft(peers?: Configuration): Promise<void> {
    if (this.#consensus.node || this.#stopped) return;
    const { config, clock } = this.#o;
    // The core keeps a bootstrap configuration in memory only (until a config
    // entry or snapshot supersedes it): keep it on disk so a restart uses it again.
    const bootstrapPath = join(config.dataDir, "raft", bootstrapFile);
    if (peers) await writeFileDurable(bootstrapPath, JSON.stringify(peers.servers), { mode: 0o600 });
    else peers = await readBootstrap(bootstrapPath, this.#log);
    const node = await createRaftNode({
      id: this.#o.nodeId,
      address: this.rpcAddr,
      peers: peers?.servers.map((s) => ({ id: s.id, address: s.address })),
      fsm: this.fsm,
      logStore: this.#stores.log,
      stableStore: this.#stores.stable,
      snapshotStore: this.#stores.snaps,
      transport: this.#transport,
      clock,
      rng: this.#o.rng.fork(),
      logger: this.#log.named("raft"),
      raftMultiplier: config.performance.raftMultiplier,
      snapshotThreshold: this.#o.snapshotThreshold ?? config.raftSnapshotThreshold,
      snapshotIntervalMs: config.raftSnapshotIntervalMs,
      // InstallSnapshot chunks of 4 MiB (a frame holds 16): a big snapshot is not thousands of round trips.
      raft: { trailingLogs: this.#o.trailingLogs ?? config.raftTrailingLogs, snapshotChunkBytes: 4 * 1024 * 1024 },
    });
    if (this.#stopped) {
      await node.stop();
      return;
    }
    this.#consensus.node = node;
    node.onLeadershipChange((leader) => {
      for (const fn of this.leadershipListeners) fn(leader);
    });
    node.onHalt((err) => {
      for (const fn of this.haltListeners) fn(err);
    });
    // A leader killed outright closes our connection to it: elect a new one without waiting out the timeout.
    this.#unsubscribeLost = this.pool.onConnectionLost((address) => node.peerUnreachable(address));
    // The only voter (a single -bootstrap server, also after a restart) need not wait out an election timeout.
    const voters = node.configuration().servers.filter((s) => s.suffrage === "voter");
    if (voters.length === 1 && voters[0]!.id === this.#o.nodeId) node.campaign();
    this.#log.info("raft started", { id: this.#o.nodeId, address: this.rpcAddr, voters: node.peers().length });
  }

  #serverAddrs(): string[] {
    const lan = this.#lan;
    if (!lan) return [];
    return aliveServers(lan.members(), this.#o.config.datacenter).map((s) => s.address);
  }

  /** Until Raft runs: bootstrap-expect. Afterwards the leader duties (core/server/leader) follow membership. */
  #onMembership(): void {
    if (this.#stopped || this.#consensus.node) return;
    void this.#maybeBootstrap();
    this.#armTimer();
  }

  #armTimer(): void {
    if (this.#timer || this.#stopped) return;
    this.#timer = this.#o.clock.setTimer(1_000, () => {
      this.#timer = undefined;
      this.#onMembership();
    });
  }

  async #maybeBootstrap(): Promise<void> {
    const { config } = this.#o;
    const lan = this.#lan;
    if (this.#starting || !lan || config.bootstrapExpect <= 0) return;
    const d = decideBootstrap(lan.members(), { expect: config.bootstrapExpect, datacenter: config.datacenter });
    if (d.kind !== "bootstrap") {
      const note = `${d.kind}: ${d.reason}`;
      if (note !== this.#bootstrapNote) {
        this.#bootstrapNote = note;
        if (d.kind === "refuse") this.#log.error("not bootstrapping", { reason: d.reason });
        else this.#log.info("waiting for servers to bootstrap", { reason: d.reason });
      }
      return;
    }
    this.#starting = true;
    try {
      // A server joining a cluster that already exists must not bootstrap a second one (consul maybeBootstrap).
      for (const s of d.servers) {
        if (s.id === this.#o.nodeId) continue;
        let peers: unknown;
        try {
          peers = await this.pool.call(s.address, "Status.Peers", {}, { timeoutMs: 2_000 });
        } catch (err) {
          this.#log.warn("cannot ask server for its peers; will retry bootstrap", { server: s.name, error: errorMessage(err) });
          return;
        }
        if (Array.isArray(peers) && peers.length > 0) {
          this.#log.info("existing Raft peers reported; disabling bootstrap mode", { server: s.name });
          await this.startRaft();
          return;
        }
      }
      const configuration = bootstrapConfiguration(d.servers);
      this.#log.info("found expected number of peers, bootstrapping", {
        peers: configuration.servers.map((s) => `${s.id}@${s.address}`).join(","),
      });
      await this.startRaft(configuration);
    } finally {
      this.#starting = false;
    }
  }

  // ---------------------------------------------------------------- operator

  #handleLocal(method: string, args: unknown, options?: { signal?: AbortSignal }): Promise<unknown> {
    if (method === eventFireMethod) return Promise.resolve().then(() => this.#fireEvent(args));
    if (method === coordinateListDatacentersMethod) {
      const wan = this.#wan;
      return Promise.resolve(wan?.coordinates ? wanDatacenterMaps({ members: () => wan.members() as PoolMember[], coordinates: () => wan.coordinates!() }, { node: this.#o.config.nodeName, datacenter: this.#o.config.datacenter }) : []);
    }
    // Operator calls check their token outside Server.handle: in a secondary datacenter, resolve it at the primary first.
    const wait = Object.hasOwn(operatorMethodAccess, method) ? this.server.prefetchAcl(args) : undefined;
    const run = () => callRaftOperator(this.#operator, method, args, this.#autopilotOps, (m, a) => this.server.authorizeOperator(m, a))
      ?? (this.server.handle as (m: string, a: unknown, o?: { signal?: AbortSignal }) => Promise<unknown>)(method, args, options);
    return wait ? wait.then(run) : run();
  }

  /** Internal.EventFire: a user event for this datacenter, from another one; gossip takes it from here. */
  #fireEvent(args: unknown): Record<string, never> {
    const a = (typeof args === "object" && args !== null ? args : {}) as { name?: unknown; payload?: unknown };
    if (typeof a.name !== "string" || a.name === "") throw new BadRequestError("User event missing name");
    if (!(a.payload instanceof Uint8Array)) throw new BadRequestError("Invalid arguments to \"Internal.EventFire\": \"payload\" must be bytes");
    const lan = this.#lan;
    if (!lan?.userEvent) throw new CairnError("no_lan", "This server has no LAN pool to fire the event into");
    lan.userEvent(`${userEventPrefix}${a.name}`, a.payload, false);
    return {};
  }

  /** Server ID → node name, from the LAN pool. */
  #serverNames(): Map<string, string> {
    const names = new Map<string, string>();
    for (const m of this.#lan?.members() ?? []) {
      const s = serverFromMember(m);
      if (s && s.id !== "") names.set(s.id, s.name);
    }
    return names;
  }

  /** Raft facts for `/v1/agent/self` `Stats.raft` (Consul's keys, string values). */
  raftStats(): Record<string, string> {
    return raftStats(this.#consensus.node, this.#o.nodeId);
  }

  /** Graceful leave: a leader with other voters removes itself first (consul Server.Leave). */
  async leave(): Promise<void> {
    const node = this.#consensus.node;
    if (!node || !node.isLeader()) return;
    if (node.configuration().servers.filter((s) => s.suffrage === "voter").length <= 1) return;
    try {
      await node.removeServer(this.#o.nodeId);
    } catch (err) {
      this.#log.warn("cannot remove self from the Raft configuration on leave", { error: errorMessage(err) });
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#timer?.cancel();
    this.#unsubscribe?.();
    this.#unsubscribeWan?.();
    this.#unsubscribeLost?.();
    this.server.sessionTimers.stop();
    this.server.coordinateBatcher.stop();
    await this.#consensus.node?.stop();
    await this.#transport.close();
    this.pool.close();
    await this.rpcServer.close();
    await this.#stores.log.close();
    await this.#stores.stable.close();
    await this.#stores.snaps.close();
  }
}

const bootstrapFile = "bootstrap.json";

async function readBootstrap(path: string, logger: Logger): Promise<Configuration | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  const parsed = parsePeersJson(text.replaceAll('"suffrage":"nonvoter"', '"non_voter":true'));
  if (typeof parsed === "string") {
    logger.error("ignoring unreadable bootstrap configuration", { file: path, error: parsed });
    return undefined;
  }
  return parsed;
}

/** Rebuild the stores from `raft/peers.json` (Consul's manual outage recovery), then rename it to peers.info. */
async function recoverFromPeersJson(
  raftDir: string,
  stores: { log: FileLogStore; stable: FileStableStore; snaps: FileSnapshotStore },
  logger: Logger,
): Promise<void> {
  const path = join(raftDir, "peers.json");
  if (!existsSync(path)) return;
  const parsed = parsePeersJson(await readFile(path, "utf8"));
  if (typeof parsed === "string") throw new Error(`${parsed} (${path})`);
  // Replay everything stored into a fresh FSM and store it as a snapshot with the new configuration.
  const fsm = new Fsm({ logger });
  const snap = await stores.snaps.latest();
  if (snap) await fsm.restore(snap.data);
  let index = snap?.meta.index ?? 0;
  let term = snap?.meta.term ?? 0;
  const first = await stores.log.firstIndex();
  const last = await stores.log.lastIndex();
  if (first > 0 && last > index) {
    for (const e of await stores.log.getEntries(Math.max(first, index + 1), last + 1)) {
      if (e.type === "normal") fsm.apply(e.index, e.data);
      index = e.index;
      term = e.term;
    }
  }
  if (index === 0) {
    logger.warn("peers.json found but there is no Raft state to recover; ignoring it", { file: path });
  } else {
    const data = await fsm.snapshot();
    await stores.snaps.create({ index, term, configuration: parsed, sizeBytes: data.length }, data);
    await stores.log.deleteRange(0, Number.MAX_SAFE_INTEGER);
    logger.info("recovered Raft configuration from peers.json", { index, term, servers: parsed.servers.map((s) => s.id).join(",") });
  }
  await rename(path, join(raftDir, "peers.info"));
}

/** Open the stores, bind the server RPC port and decide how Raft starts (see ServerNode.attachLan for bootstrap-expect). */
export async function startServerNode(o: ServerNodeOptions): Promise<ServerNode> {
  const { config, logger } = o;
  if (config.dataDir === "") throw new Error("A server agent needs -data-dir (or run `cairn agent -dev`)");
  const raftDir = join(config.dataDir, "raft");
  await mkdir(raftDir, { recursive: true });
  const stores = {
    // The Raft core never changes an entry it appended: the store may keep them without copies.
    log: await FileLogStore.open({ dir: raftDir, logger: logger.named("raft.log"), copyEntries: false }),
    stable: await FileStableStore.open({ dir: raftDir, logger: logger.named("raft.stable") }),
    snaps: await FileSnapshotStore.open({ dir: join(raftDir, "snapshots"), logger: logger.named("raft.snapshots"), onWrite: o.onSnapshotWrite }),
  };
  await recoverFromPeersJson(raftDir, stores, logger.named("raft"));
  let rpcServer: RpcServer;
  try {
    rpcServer = await createRpcServer({ host: config.bindAddr, port: config.ports.server, logger: logger.named("rpc"), handshakeTimeoutMs: config.limits.rpcHandshakeTimeoutMs, ...(o.rpcTls ? { tls: o.rpcTls.server } : {}) });
  } catch (err) {
    await stores.log.close();
    await stores.stable.close();
    await stores.snaps.close();
    throw new Error(`Cannot listen for server RPC on ${config.bindAddr}:${config.ports.server}: ${errorMessage(err)}`);
  }
  const host = o.advertiseAddr || config.advertiseAddr || (config.bindAddr === "0.0.0.0" ? "127.0.0.1" : config.bindAddr);
  const rpcAddr = `${host.includes(":") ? `[${host}]` : host}:${rpcServer.port}`;
  const pool = new RpcClientPool({ logger: logger.named("rpc.pool"), localAddress: config.bindAddr, ...(o.rpcTls ? { tls: o.rpcTls.client } : {}) });
  const transport = new TcpRaftTransport({ server: rpcServer, pool, logger: logger.named("raft.transport"), localAddress: rpcAddr });
  const node = new ServerNode(o, { fsm: new Fsm({ logger: logger.named("fsm") }), consensus: new RaftConsensus(), rpcServer, pool, transport, stores, rpcAddr });

  const hasState = (await stores.stable.load()) !== undefined || (await stores.log.lastIndex()) > 0 || (await stores.snaps.latest()) !== undefined;
  if (hasState) await node.startRaft();
  else if (config.bootstrap || config.bootstrapExpect === 1) {
    await node.startRaft({ servers: [{ id: o.nodeId, address: rpcAddr, suffrage: "voter" }] });
  } else if (config.bootstrapExpect <= 0) {
    // Not bootstrapping: wait for a leader to add us (it sees us in gossip).
    await node.startRaft();
  }
  return node;
}

/** The server side of a `-dev` agent: the same Raft as a server, one in-memory voter, no RPC listener. */
export interface DevNode {
  readonly server: Server;
  readonly fsm: Fsm;
  readonly consensus: Consensus;
  readonly raft: RaftNode;
  /** Every RPC of the agent goes through this, as on a server. */
  readonly router: RpcRouter;
  /** Backend of `/v1/operator/raft/*`: the same handlers a server runs. */
  readonly operator: OperatorRaftBackend;
  /** Raft facts for `/v1/agent/self`. */
  raftStats(): Record<string, string>;
  /** Autopilot of the one server: reports its health; the leader duty stores the configuration. */
  readonly autopilot: Autopilot;
  stop(): Promise<void>;
}

/** Start `-dev`'s Raft; resolves once it is leader (it elects itself at once). */
/** consul.coordinate.* as the server's batcher takes it. */
function coordinateUpdateOf(config: AgentConfig): { updatePeriodMs: number; batchSize: number; maxBatches: number } {
  const c = config.coordinate ?? defaultConfig().coordinate;
  return { updatePeriodMs: c.updatePeriodMs, batchSize: c.updateBatchSize, maxBatches: c.updateMaxBatches };
}

export async function startDevNode(o: { config: AgentConfig; nodeId: string; clock: Clock; rng: Rng; logger: Logger; coordinates?: CoordinateSource; limits?: RateLimits }): Promise<DevNode> {
  const { config } = o;
  const host = config.advertiseAddr || config.bindAddr;
  const dev = await createDevServer({
    clock: o.clock,
    rng: o.rng,
    logger: o.logger,
    id: o.nodeId,
    addr: `${host.includes(":") ? `[${host}]` : host}:${config.ports.server}`,
    datacenter: config.datacenter,
    raftMultiplier: config.performance.raftMultiplier,
    snapshotThreshold: config.raftSnapshotThreshold,
    snapshotIntervalMs: config.raftSnapshotIntervalMs,
    trailingLogs: config.raftTrailingLogs,
    coordinates: o.coordinates,
    queryTimes: { defaultMs: config.defaultQueryTimeMs, maxMs: config.maxQueryTimeMs },
    coordinateUpdate: coordinateUpdateOf(config),
    acl: aclServerConfig(config, o.logger),
  });
  const ops = raftOperatorEndpoints({
    raft: () => dev.raft,
    selfId: o.nodeId,
    nodeName: config.nodeName,
    clock: o.clock,
    raftMultiplier: config.performance.raftMultiplier,
    logger: o.logger,
  });
  const autopilot = new Autopilot({
    raft: () => dev.raft,
    lan: () => undefined,
    state: () => dev.fsm.state,
    initial: { ...(config.autopilot ?? defaultConfig().autopilot) },
    clock: o.clock,
    nodeName: config.nodeName,
    version,
  });
  const autopilotOps = autopilotEndpoints({ autopilot, consensus: dev.consensus, clock: o.clock });
  const authorize = (method: string, args: unknown) => dev.server.authorizeOperator(method, args);
  const operator = {
    callRaw: (method: string, args: unknown) => callRaftOperator(ops, method, args, autopilotOps, authorize) ?? Promise.reject(new TypeError(`Unknown operator method "${method}"`)),
  };
  // The same router as a server's, with nowhere to forward: one voter is always the leader.
  const router = new RpcRouter({
    local: { handle: (method, args, options) => callRaftOperator(ops, method, args, autopilotOps, authorize) ?? (dev.server.handle as (m: string, a: unknown, o?: { signal?: AbortSignal }) => Promise<unknown>)(method, args, options) },
    remote: { call: () => Promise.reject(new RpcError("A -dev agent has no other server to ask", { unsent: true })) },
    servers: () => [],
    clock: o.clock,
    rng: o.rng.fork(),
    logger: o.logger.named("rpc"),
    holdTimeoutMs: config.limits.rpcHoldTimeoutMs,
    datacenter: config.datacenter,
    limits: o.limits ?? new RateLimits(o.clock, rateLimitsConfig(config), o.logger.named("rpc")),
    // The one voter always leads.
    isLeader: () => true,
  });
  return {
    server: dev.server,
    fsm: dev.fsm,
    consensus: dev.consensus,
    raft: dev.raft,
    router,
    operator,
    raftStats: () => raftStats(dev.raft, o.nodeId),
    autopilot,
    stop: () => dev.stop(),
  };
}

/**
 * The node's UUID from `<dataDir>/node-id`, created once (Consul keeps it
 * there too). A file that does not hold a UUID stops the start, as Consul
 * does: quietly making a new ID would give a server a new Raft identity.
 */
export async function readOrCreateNodeId(dataDir: string): Promise<string> {
  if (dataDir === "") return randomUUID();
  const path = join(dataDir, "node-id");
  // Synchronous (once, at start): node:fs/promises is not loaded in a client otherwise.
  let text: string | undefined;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as { code?: unknown }).code !== "ENOENT") throw new CorruptionError(`Cannot read the node ID from "${path}": ${errorMessage(err)}`, { file: path });
  }
  if (text !== undefined) {
    const id = text.trim();
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) return id.toLowerCase();
    throw new CorruptionError(
      `Node ID file "${path}" does not hold a UUID (${JSON.stringify(id.slice(0, 64))}): restore it from a backup, or delete it to give this agent a new node ID (a server then joins as a new Raft member)`,
      { file: path },
    );
  }
  mkdirSync(dataDir, { recursive: true });
  const id = randomUUID();
  // Durable before the ID is used anywhere: a power cut must not leave an empty file behind.
  writeFileDurableSync(path, id + "\n", { mode: 0o600 });
  return id;
}

/**
 * A client agent's RPC: every call goes to a server learned from the LAN pool
 * (`role=consul`, same datacenter, alive), another one when it fails, and is
 * held up to `limits.rpcHoldTimeoutMs` while there is no leader or no server.
 */
export function createClientRpc(o: { config: AgentConfig; clock: Clock; rng: Rng; logger: Logger; lan: () => LanPoolLike | undefined; rpcTls?: RpcTls; limits?: RateLimits }): { router: RpcRouter; close(): void } {
  const pool = new RpcClientPool({ logger: o.logger.named("rpc.pool"), localAddress: o.config.bindAddr, ...(o.rpcTls ? { tls: o.rpcTls.client } : {}) });
  const router = new RpcRouter({
    remote: pool,
    servers: () => {
      const lan = o.lan();
      return lan ? aliveServers(lan.members(), o.config.datacenter).map((s) => s.address) : [];
    },
    clock: o.clock,
    rng: o.rng,
    logger: o.logger.named("rpc"),
    holdTimeoutMs: o.config.limits.rpcHoldTimeoutMs,
    limits: o.limits ?? new RateLimits(o.clock, rateLimitsConfig(o.config), o.logger.named("rpc")),
  });
  return { router, close: () => pool.close() };
}
