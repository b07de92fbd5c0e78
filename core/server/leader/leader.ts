// Leader duties, all in one place (consul agent/consul/leader.go). While
// this server is the Raft leader it:
// - reconciles gossip membership into the catalog (catalog_reconcile.ts):
//   every member on leadership and every reconcileIntervalMs, and the
//   members named by each LAN member event (only those: a pool of 10,000
//   whose failures trickle in must not cost a pass over all 10,000 per
//   failure), at most reconcileConcurrency writes in flight (Raft appends
//   them together, one fsync for the lot);
// - keeps the Raft configuration in step with the servers gossip sees
//   (raft_peers.ts): adds alive servers, removes servers that left;
// - runs autopilot (autopilot.ts) beside it: stores the agent's autopilot
//   configuration when the cluster has none, adds new servers as
//   non-voters, promotes them once stable, removes dead servers;
// - runs session TTL timers (session_ttl.ts), armed afresh on leadership;
// - hints and reaps KV tombstones (core/state/tombstone_gc.ts);
// - asks the local agent for a full anti-entropy sync when it gains
//   leadership.
// Everything starts when leadership is gained and stops when it is lost;
// leadership is read from the consensus on every change callback and every
// tick. Writes go through the normal endpoints (replicated like any write).
// Time and timers come from the injected Clock (SimClock in tests).

import type { Clock, Timer } from "../../clock/clock.ts";
import { errorMessage } from "../../errors.ts";
import type { Logger } from "../../log/logger.ts";
import type { Configuration } from "../../raft/types.ts";
import type { RpcArgs, RpcMethod, RpcReply } from "../../rpc/methods.ts";
import { checksOfNode, nodeTxn, servicesOfNode } from "../../state/catalog.ts";
import { TombstoneGc } from "../../state/tombstone_gc.ts";
import { serfCheckId } from "../catalog.ts";
import type { Consensus } from "../consensus.ts";
import { encodeCommand, MessageType } from "../fsm.ts";
import type { Fsm } from "../fsm.ts";
import { consulServiceId, memberAction } from "./catalog_reconcile.ts";
import type { CatalogNodeView, MemberAction } from "./catalog_reconcile.ts";
import type { LanPoolLike, MemberLike } from "./membership.ts";
import type { Autopilot } from "./autopilot.ts";
import { reconcileAction } from "./raft_peers.ts";
import type { SessionTimers } from "./session_ttl.ts";

/** Consul's reconcile_interval. */
export const defaultReconcileIntervalMs = 60_000;
/**
 * Member writes (Catalog.Register / Deregister) a reconcile keeps in flight.
 * One at a time, 1,000 members failing together cost 1,000 Raft round trips
 * and fsyncs in a row; all at once, a mass failure would queue thousands of
 * the leader's own writes ahead of everyone else's.
 */
export const defaultReconcileConcurrency = 32;
/** How often the leader looks at leadership and the tombstone index (cheap: two reads). */
export const defaultLeaderTickMs = 1_000;

/** The Raft node's membership operations (core/raft/driver.ts RaftNode fits). */
export interface RaftPeers {
  configuration(): Configuration;
  addVoter(id: string, address: string): Promise<unknown>;
  addNonvoter(id: string, address: string): Promise<unknown>;
  removeServer(id: string): Promise<unknown>;
}

/** What the reconcile needs from the server: its endpoints. `Server.handle` fits. */
export interface LeaderEndpoints {
  handle<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>>;
}

export interface LeaderOptions {
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
  /** Member writes in flight at once (default defaultReconcileConcurrency). */
  reconcileConcurrency?: number;
  tickMs?: number;
  tombstoneGc?: TombstoneGc;
  /** Session TTL timers of the server's session endpoints; armed while leading. */
  sessionTimers?: SessionTimers;
  /** The Raft node once it runs (servers; absent in -dev, whose only voter never changes). */
  raft?: () => RaftPeers | undefined;
  /** This server's Raft ID, never removed by its own reconcile. */
  selfId?: string;
  /** Autopilot (servers): new servers join as non-voters and it promotes and removes them. */
  autopilot?: Autopilot;
}

export class Leader {
  readonly #o: LeaderOptions;
  readonly #log: Logger;
  readonly gc: TombstoneGc;
  #leading = false;
  #timer: Timer | undefined;
  #nextFullMs = 0;
  #running: Promise<void> | undefined;
  /** A pass over every member is asked for. */
  #fullWanted = false;
  /** Members named by member events since the last pass. */
  #dirty = new Set<string>();
  #stopped = false;
  #unsubscribe: (() => void) | undefined;
  #lastTombstoneHint = 0;
  #peersRunning = false;
  /** Counters for tests and stats. */
  readonly stats = { reconciles: 0, registered: 0, deregistered: 0, errors: 0, reaps: 0, peerChanges: 0, examined: 0 };

  constructor(o: LeaderOptions) {
    this.#o = o;
    this.#log = o.logger;
    this.gc = o.tombstoneGc ?? new TombstoneGc();
  }

  get leading(): boolean {
    return this.#leading;
  }

  /** Follow member events and leadership. Call once. */
  start(): void {
    this.#unsubscribe = this.#o.lan.onMemberEvent((e) => {
      if (!this.#leading) return;
      for (const m of e.members) this.#dirty.add(m.name);
      void this.#work();
      void this.reconcilePeers();
    });
    this.leadershipChanged();
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#o.sessionTimers?.stop();
  }

  /** Re-read leadership (call from a Raft leadership callback; also polled every tick). */
  leadershipChanged(): void {
    if (this.#stopped) return;
    const leader = this.#o.consensus.isLeader();
    if (leader === this.#leading) return;
    this.#leading = leader;
    this.gc.reset();
    this.#lastTombstoneHint = 0;
    // Session TTLs: every TTL session armed afresh on a new leader, all timers dropped by an old one.
    this.#o.sessionTimers?.sync();
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
    void this.reconcilePeers();
  }

  /** One step of the Raft configuration toward the servers gossip sees (one change at a time, as Raft takes them). */
  async reconcilePeers(): Promise<void> {
    const raft = this.#o.raft?.();
    const autopilot = this.#o.autopilot;
    if ((!raft && !autopilot) || this.#peersRunning || this.#stopped || !this.#o.consensus.isLeader()) return;
    this.#peersRunning = true;
    try {
      if (autopilot && !autopilot.stored()) {
        // Consul's initializeAutopilot: the first leader stores its agent's autopilot {} (cas 0: only if none is stored).
        const out = await this.#o.consensus.apply(encodeCommand(MessageType.Autopilot, { config: { ...autopilot.initial }, cas: 0 }));
        if (out.result instanceof Error) throw out.result;
        return;
      }
      // -dev: autopilot without a Raft membership to change.
      if (!raft) return;
      const action = reconcileAction(this.#o.lan.members(), raft.configuration(), {
        datacenter: this.#o.datacenter,
        selfId: this.#o.selfId ?? "",
        nonvoters: autopilot !== undefined,
      }) ?? autopilot?.nextAction();
      if (!action) return;
      this.stats.peerChanges++;
      if (action.op === "addVoter") {
        this.#log.info("adding server to the Raft configuration", { server: action.name, id: action.id, address: action.address });
        await raft.addVoter(action.id, action.address);
      } else if (action.op === "addNonvoter") {
        this.#log.info("adding server to the Raft configuration as a non-voter", { server: action.name, id: action.id, address: action.address });
        await raft.addNonvoter(action.id, action.address);
      } else if (action.op === "promote") {
        this.#log.info("autopilot: promoting server to voter", { server: action.name, id: action.id });
        await raft.addVoter(action.id, action.address);
      } else if ("reason" in action) {
        this.#log.info("autopilot: removing dead server", { server: action.name, id: action.id, reason: action.reason });
        await raft.removeServer(action.id);
      } else {
        this.#log.info("removing server from the Raft configuration", { server: action.name, id: action.id });
        await raft.removeServer(action.id);
      }
    } catch (err) {
      this.#log.warn("cannot reconcile the Raft configuration; will retry", { error: errorMessage(err) });
    } finally {
      this.#peersRunning = false;
    }
  }

  /** Run a full reconcile now (or right after the one in progress). */
  reconcileSoon(): Promise<void> {
    this.#fullWanted = true;
    return this.#work();
  }

  /**
   * One worker for both kinds of pass, so a member is never written by two
   * at once: a full pass when asked (it covers the dirty members too), else
   * the members named by events since the last pass.
   */
  #work(): Promise<void> {
    if (this.#running) return this.#running;
    const run = async (): Promise<void> => {
      while (!this.#stopped && (this.#fullWanted || this.#dirty.size > 0)) {
        if (this.#fullWanted) {
          this.#fullWanted = false;
          this.#dirty.clear();
          await this.reconcile();
        } else {
          const names = [...this.#dirty];
          this.#dirty.clear();
          await this.#reconcileMembers(names);
        }
      }
    };
    this.#running = run().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Reconcile the named members only (member events): the action for each one's current state. */
  async #reconcileMembers(names: string[]): Promise<void> {
    if (!this.#o.consensus.isLeader()) return;
    const dc = this.#o.datacenter;
    const current = new Map<string, MemberLike>();
    for (const m of this.#o.lan.members()) current.set(m.name, m);
    const work: Array<[MemberAction, string]> = [];
    for (const name of names) {
      const m = current.get(name);
      this.stats.examined++;
      if (m) {
        if (m.tags?.dc !== undefined && m.tags.dc !== dc) continue;
        work.push([memberAction(m, this.#view(m.name), this.#o.nodeName), name]);
      } else if (name !== this.#o.nodeName && checksOfNode(this.#o.fsm.state, name).some((c) => c.checkId === serfCheckId)) {
        // Reaped: gone from gossip altogether (Consul reconcileReaped, for this one).
        work.push([{ op: "deregister", node: name }, name]);
      }
    }
    await this.#applyAll(work);
  }

  /** Apply actions with at most reconcileConcurrency in flight; stops starting new ones once leadership is lost. */
  async #applyAll(work: Array<[MemberAction, string]>): Promise<void> {
    const todo = work.filter(([a]) => a.op !== "none");
    let next = 0;
    const lanes = Math.max(1, Math.min(this.#o.reconcileConcurrency ?? defaultReconcileConcurrency, todo.length));
    await Promise.all(Array.from({ length: lanes }, async () => {
      while (next < todo.length && this.#o.consensus.isLeader() && !this.#stopped) {
        const [action, name] = todo[next++]!;
        await this.#apply(action, name);
      }
    }));
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
    const work: Array<[MemberAction, string]> = [];
    for (const m of members) {
      seen.add(m.name);
      this.stats.examined++;
      work.push([memberAction(m, this.#view(m.name), this.#o.nodeName), m.name]);
    }
    await this.#applyAll(work);
    // Reaped: a node with a serfHealth check that is no longer a member at all.
    const state = this.#o.fsm.state;
    const orphans: string[] = [];
    for (const n of state.tables.nodes.all()) {
      if (seen.has(n.node) || n.node === this.#o.nodeName) continue;
      if (checksOfNode(state, n.node).some((c) => c.checkId === serfCheckId)) orphans.push(n.node);
    }
    await this.#applyAll(orphans.map((node) => [{ op: "deregister", node }, node]));
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
    void this.reconcilePeers();
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
