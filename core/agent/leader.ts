// Leader duties (consul agent/consul/leader.go): while this server is the
// Raft leader, gossip membership is reconciled into the catalog — every LAN
// member is a catalog node with a `serfHealth` check that follows its gossip
// state (alive → passing, failed → critical, which invalidates the sessions
// bound to it), servers also get the `consul` service on their RPC port, and
// left, reaped or vanished members are deregistered. The leader also hints
// and reaps KV tombstones (TombstoneGc) and asks the local agent for a full
// anti-entropy sync when it gains leadership.
//
// Reconcile runs when leadership is gained, on every LAN member event and
// every `reconcileIntervalMs` (Consul: 60 s). Writes go through the normal
// Catalog.Register / Catalog.Deregister endpoints, so they are replicated
// like any other write; members already in the right state cost nothing.
// Time and timers come from the injected Clock (SimClock in tests).

import type { Clock, Timer } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { CatalogRegisterArgs, HealthCheck, NodeService, RpcArgs, RpcMethod, RpcReply } from "../rpc/methods.ts";
import type { Consensus } from "../server/consensus.ts";
import { serfCheckAliveOutput, serfCheckFailedOutput, serfCheckId, serfHealthRegistration } from "../server/catalog.ts";
import { encodeCommand, MessageType } from "../server/fsm.ts";
import type { Fsm } from "../server/fsm.ts";
import { checksOfNode, nodeTxn, servicesOfNode } from "../state/catalog.ts";
import { TombstoneGc } from "../state/tombstone_gc.ts";
import type { LanPoolLike, MemberLike } from "./bootstrap.ts";

/** Consul's reconcile_interval. */
export const defaultReconcileIntervalMs = 60_000;
/** How often the leader looks at leadership and the tombstone index (cheap: two reads). */
export const defaultLeaderTickMs = 1_000;
/** Consul's structs.ConsulServiceID / ConsulServiceName. */
export const consulServiceId = "consul";
export const consulServiceName = "consul";

/** What the reconcile needs from the server: its endpoints. `Server.handle` fits. */
export interface LeaderEndpoints {
  handle<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>>;
}

export interface LeaderDutiesOptions {
  server: LeaderEndpoints;
  fsm: Fsm;
  consensus: Consensus;
  lan: LanPoolLike;
  clock: Clock;
  logger: Logger;
  /** This agent's node name: never deregistered by its own leader. */
  nodeName: string;
  /** Our datacenter: members tagged with another one are ignored. */
  datacenter: string;
  /** Called each time leadership is gained (the agent asks anti-entropy for a full sync). */
  onLeadershipGained?: () => void;
  reconcileIntervalMs?: number;
  tickMs?: number;
  tombstoneGc?: TombstoneGc;
}

/** What to do about one member (pure; tested directly). */
export type MemberAction =
  | { op: "none" }
  | { op: "register"; args: CatalogRegisterArgs }
  | { op: "deregister"; node: string };

/** The catalog's view of one node, as the reconcile reads it. */
export interface CatalogNodeView {
  id: string;
  address: string;
  serfHealth?: Pick<HealthCheck, "status" | "output">;
  consulService?: Pick<NodeService, "port">;
}

/** The `consul` service of a server member, or undefined for clients (Consul handleAliveMember). */
export function consulServiceOf(m: MemberLike): { id: string; service: string; port: number; meta: Record<string, string> } | undefined {
  const t = m.tags ?? {};
  if (t.role !== "consul") return undefined;
  const port = Number(t.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  const meta: Record<string, string> = {};
  if (t.raft_vsn !== undefined) meta.raft_version = t.raft_vsn;
  if (t.vsn !== undefined) meta.serf_protocol_current = t.vsn;
  if (t.vsn_min !== undefined) meta.serf_protocol_min = t.vsn_min;
  if (t.vsn_max !== undefined) meta.serf_protocol_max = t.vsn_max;
  if (t.build !== undefined) meta.version = t.build.split(":")[0] ?? t.build;
  meta.non_voter = t.nonvoter === "1" ? "true" : "false";
  meta.read_replica = t.read_replica === "1" ? "true" : "false";
  return { id: consulServiceId, service: consulServiceName, port, meta };
}

/**
 * Consul reconcileMember: alive → node + passing serfHealth (+ `consul`
 * service for servers), failed → critical serfHealth, left/reaped → node
 * deregistered (never our own). Already right → "none".
 */
export function memberAction(m: MemberLike, known: CatalogNodeView | undefined, self: string): MemberAction {
  const status = m.status === "reap" ? "reap" : m.status;
  if (status === "left" || status === "reap") {
    if (m.name === self || !known) return { op: "none" };
    return { op: "deregister", node: m.name };
  }
  const id = m.tags?.id ?? "";
  if (status === "alive") {
    const service = consulServiceOf(m);
    const nodeOk = known !== undefined && known.address === m.addr && (id === "" || known.id === id);
    const checkOk = known?.serfHealth?.status === "passing" && known.serfHealth.output === serfCheckAliveOutput;
    const serviceOk = !service || known?.consulService?.port === service.port;
    if (nodeOk && checkOk && serviceOk) return { op: "none" };
    const args = serfHealthRegistration({ name: m.name, id: id || undefined, address: m.addr, alive: true });
    if (nodeOk) args.skipNodeUpdate = true;
    if (service) args.service = service;
    return { op: "register", args };
  }
  if (status === "failed") {
    if (known?.serfHealth?.status === "critical" && known.serfHealth.output === serfCheckFailedOutput) return { op: "none" };
    const args = serfHealthRegistration({ name: m.name, id: id || undefined, address: known?.address || m.addr, alive: false });
    if (known) args.skipNodeUpdate = true;
    return { op: "register", args };
  }
  // "leaving": wait for left (Consul ignores other states).
  return { op: "none" };
}

export class LeaderDuties {
  readonly #o: LeaderDutiesOptions;
  readonly #log: Logger;
  readonly gc: TombstoneGc;
  #leading = false;
  #timer: Timer | undefined;
  #nextFullMs = 0;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #unsubscribe: (() => void) | undefined;
  #lastTombstoneHint = 0;
  /** Counters for tests and stats. */
  readonly stats = { reconciles: 0, registered: 0, deregistered: 0, errors: 0, reaps: 0 };

  constructor(o: LeaderDutiesOptions) {
    this.#o = o;
    this.#log = o.logger;
    this.gc = o.tombstoneGc ?? new TombstoneGc();
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Follow member events and leadership. Call once. */
  start(): void {
    this.#unsubscribe = this.#o.lan.onMemberEvent(() => {
      if (this.#leading) this.reconcileSoon();
    });
    this.leadershipChanged();
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Re-read leadership (call from a Raft leadership callback; also polled every tick). */
  leadershipChanged(): void {
    if (this.#stopped) return;
    const leader = this.#o.consensus.isLeader();
    if (leader === this.#leading) return;
    this.#leading = leader;
    this.gc.reset();
    this.#lastTombstoneHint = 0;
    if (!leader) {
      this.#log.info("cluster leadership lost");
      return;
    }
    this.#log.info("cluster leadership acquired; reconciling members");
    try {
      this.#o.onLeadershipGained?.();
    } catch (err) {
      this.#log.warn("leadership callback failed", { error: errorMessage(err) });
    }
    this.reconcileSoon();
  }

  /** Run a full reconcile now (or right after the one in progress). */
  reconcileSoon(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = async (): Promise<void> => {
      do {
        this.#again = false;
        await this.reconcile();
      } while (this.#again && !this.#stopped);
    };
    this.#running = run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** One full pass: every member, then catalog nodes with serfHealth that gossip no longer knows (Consul reconcileReaped). */
  async reconcile(): Promise<void> {
    if (this.#stopped || !this.#o.consensus.isLeader()) return;
    // Like Consul's barrier before reconciling: read the catalog only once every committed write is applied.
    try {
      await this.#o.consensus.readBarrier();
    } catch (err) {
      this.#log.warn("barrier before reconcile failed; will retry", { error: errorMessage(err) });
      this.#nextFullMs = 0;
      return;
    }
    this.stats.reconciles++;
    this.#nextFullMs = this.#o.clock.now() + (this.#o.reconcileIntervalMs ?? defaultReconcileIntervalMs);
    const dc = this.#o.datacenter;
    const members = this.#o.lan.members().filter((m) => m.tags?.dc === undefined || m.tags.dc === dc);
    const seen = new Set<string>();
    for (const m of members) {
      seen.add(m.name);
      if (!this.#o.consensus.isLeader()) return;
      await this.#apply(memberAction(m, this.#view(m.name), this.#o.nodeName), m.name);
    }
    // Reaped: a node with a serfHealth check that is no longer a member at all.
    const state = this.#o.fsm.state;
    const orphans: string[] = [];
    for (const n of state.tables.nodes.all()) {
      if (seen.has(n.node) || n.node === this.#o.nodeName) continue;
      if (checksOfNode(state, n.node).some((c) => c.checkId === serfCheckId)) orphans.push(n.node);
    }
    for (const node of orphans) {
      if (!this.#o.consensus.isLeader()) return;
      await this.#apply({ op: "deregister", node }, node);
    }
  }

  #view(node: string): CatalogNodeView | undefined {
    const state = this.#o.fsm.state;
    const n = nodeTxn(state, undefined, node);
    if (!n) return undefined;
    const check = checksOfNode(state, node).find((c) => c.checkId === serfCheckId);
    const svc = servicesOfNode(state, node).find((s) => s.id === consulServiceId);
    return {
      id: n.id,
      address: n.address,
      ...(check ? { serfHealth: { status: check.status, output: check.output } } : {}),
      ...(svc ? { consulService: { port: svc.port } } : {}),
    };
  }

  async #apply(action: MemberAction, name: string): Promise<void> {
    try {
      if (action.op === "register") {
        await this.#o.server.handle("Catalog.Register", action.args);
        this.stats.registered++;
        this.#log.debug("member reconciled", { member: name, status: action.args.check?.status ?? "" });
      } else if (action.op === "deregister") {
        await this.#o.server.handle("Catalog.Deregister", { node: action.node });
        this.stats.deregistered++;
        this.#log.info("deregistered member", { member: name });
      }
    } catch (err) {
      this.stats.errors++;
      this.#log.warn("failed to reconcile member", { member: name, error: errorMessage(err) });
    }
  }

  #arm(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimer(this.#o.tickMs ?? defaultLeaderTickMs, () => {
      this.#timer = undefined;
      void this.#tick().finally(() => this.#arm());
    });
  }

  async #tick(): Promise<void> {
    this.leadershipChanged();
    if (!this.#leading) return;
    const now = this.#o.clock.now();
    if (now >= this.#nextFullMs) void this.reconcileSoon();
    // Tombstone GC (Consul hints on each delete; the max index bucketed by granularity is the same).
    const maxTomb = this.#o.fsm.state.maxIndex("tombstones");
    if (maxTomb > this.#lastTombstoneHint) {
      this.gc.hint(maxTomb, now);
      this.#lastTombstoneHint = maxTomb;
    }
    const reap = this.gc.expire(now);
    if (reap > 0) await this.#reap(reap);
  }

  async #reap(reapIndex: number): Promise<void> {
    try {
      const out = await this.#o.consensus.apply(encodeCommand(MessageType.Tombstone, { reapIndex }));
      if (out.result instanceof Error) throw out.result;
      this.stats.reaps++;
      this.#log.debug("reaped tombstones", { reapIndex });
    } catch (err) {
      this.stats.errors++;
      this.#log.warn("failed to reap tombstones", { reapIndex, error: errorMessage(err) });
    }
  }
}
