// The Serf layer (serf 0.9.4: serf.go, delegate.go, event.go, query.go,
// coalesce*.go), pure, composed over SwimCore: Lamport clocks, join/leave
// intents, member statuses alive/leaving/left/failed, reaping, user events
// with dedupe and coalescing, queries with acks/responses/filters/relays,
// and Vivaldi coordinates in acks. See docs/gossip-wire.md §8.
//
// Messages are decoded values (wire/messages.ts bodies, with "ip:port"
// strings for addresses and decoded query filters); driver.ts adapts them.

import type { Logger } from "../log/mod.ts";
import type { Rng } from "../sim/rng.ts";
import { BroadcastQueue, retransmitLimit } from "./broadcast_queue.ts";
import { VivaldiClient } from "./coordinate.ts";
import type { Coordinate } from "./coordinate.ts";
import type { GossipProfile, SerfTimings } from "./profiles.ts";
import { serfTimings } from "./profiles.ts";
import { estimateSize, pushPullScaleMs, SwimCore } from "./swim.ts";
import type { GossipTypes, SwimEvent, SwimInput, SwimMember, SwimMessage, SwimSend } from "./swim.ts";
import type {
  MessageJoin,
  MessageLeave,
  MessagePushPull,
  MessageQueryResponse,
  MessageUserEvent,
  QueryFilter,
  UserEventCollection,
} from "./wire/messages.ts";

export type Tags = Readonly<Record<string, string>>;

/** `messageQuery` with the querier as "ip:port", decoded filters and the timeout in ms. */
export interface SerfQuery {
  lTime: number;
  id: number;
  addr: string;
  sourceNode: string;
  filters: QueryFilter[];
  flags: number;
  relayFactor: number;
  timeoutMs: number;
  name: string;
  payload: Uint8Array | null;
}

export type SerfMsg =
  | { type: "join"; body: MessageJoin }
  | { type: "leave"; body: MessageLeave }
  | { type: "userEvent"; body: MessageUserEvent }
  | { type: "query"; body: SerfQuery }
  | { type: "queryResponse"; body: MessageQueryResponse }
  /** Relay: forward `inner` to destAddr as a user message. */
  | { type: "relay"; destAddr: string; destName: string; inner: MessageQueryResponse };

export interface SerfTypes extends GossipTypes {
  user: SerfMsg;
  state: MessagePushPull;
  meta: Tags;
  ack: Coordinate;
}

export type SerfStatus = "alive" | "leaving" | "left" | "failed";

export interface SerfMember {
  readonly name: string;
  readonly addr: string;
  readonly tags: Tags;
  readonly status: SerfStatus;
  readonly statusLTime: number;
  readonly vsn: readonly number[];
}

export type MemberEventType = "join" | "leave" | "failed" | "update" | "reap";

export type SerfEvent =
  | { kind: "member"; type: MemberEventType; members: SerfMember[] }
  | { kind: "user"; lTime: number; name: string; payload: Uint8Array; coalesce: boolean }
  /** A query for the application (internal `_serf_*` ones are flagged); answer with a `respond` input. */
  | { kind: "query"; lTime: number; id: number; name: string; payload: Uint8Array | null; sourceNode: string; deadlineMs: number; internal: boolean }
  | { kind: "queryStarted"; token: number | undefined; lTime: number; id: number; deadlineMs: number }
  | { kind: "queryAck"; lTime: number; id: number; from: string }
  | { kind: "queryResponse"; lTime: number; id: number; from: string; payload: Uint8Array | null }
  | { kind: "queryDone"; lTime: number; id: number; acks: number; responses: number }
  | { kind: "joinDone"; contacted: number; errors: string[] }
  | { kind: "leaveDone" }
  | { kind: "conflict"; name: string; existingAddr: string; otherAddr: string }
  /** A request from the application that could not be carried out. */
  | { kind: "error"; input: string; message: string };

export interface QueryParams {
  name: string;
  payload: Uint8Array | null;
  filters?: QueryFilter[];
  requestAck?: boolean;
  relayFactor?: number;
  timeoutMs?: number;
  /** Echoed in the queryStarted event. */
  token?: number;
}

export type SerfInput =
  | Exclude<SwimInput<SerfTypes>, { kind: "join" | "leave" | "setMeta" }>
  | { kind: "join"; now: number; addrs: readonly string[]; ignoreOld?: boolean }
  | { kind: "leave"; now: number }
  | { kind: "setTags"; now: number; tags: Tags }
  | { kind: "userEvent"; now: number; name: string; payload: Uint8Array; coalesce: boolean }
  | ({ kind: "query"; now: number } & QueryParams)
  | { kind: "respond"; now: number; lTime: number; id: number; payload: Uint8Array | null }
  | { kind: "forceLeave"; now: number; node: string; prune?: boolean };

export interface SerfReady {
  sends: SwimSend<SerfTypes>[];
  events: SerfEvent[];
}

export interface SerfConfig {
  name: string;
  addr: string;
  tags?: Tags;
  /** memberlist Vsn; Serf agent [1,5,2,2,5,5], Consul [1,5,2,2,5,4]. */
  vsn?: readonly number[];
  profile: GossipProfile;
  timings?: SerfTimings;
  rng: Rng;
  logger: Logger;
  now: number;
  /** Wall-clock minus `now` (ms), for memberlist's probe rounds (SwimConfig.wallOffsetMs). */
  wallOffsetMs?: number;
  disableCoordinates?: boolean;
  /** Consul-style veto of alive messages / join push-pulls by tags (reason text, or undefined to accept). */
  vetoMember?: (member: { name: string; addr: string; tags: Tags; vsn: readonly number[] }) => string | undefined;
  /**
   * Clocks from a local snapshot (serf/local.snapshot) after a restart: they
   * are witnessed, and events/queries up to them are not delivered again.
   */
  restoreClocks?: SerfClocks;
  /**
   * Serf's ReconnectTimeoutOverride: how long this failed member is kept
   * before it is reaped (Consul reads the member's `rc_tm` tag). Undefined:
   * `timings.reconnectTimeoutMs` for every member.
   */
  reconnectTimeoutFor?: (member: SerfMember, defaultMs: number) => number;
  /** Encoded size of a message; pass the wire codec's `measure` for exact packing. */
  measure?: (msg: SwimMessage<SerfTypes>) => number;
}

/** The three Lamport clocks, as saved in a snapshot. */
export interface SerfClocks {
  lTime: number;
  eventLTime: number;
  queryLTime: number;
}

/** Serf's LamportClock: first used value is 1. */
export class LamportClock {
  #t = 0;
  get time(): number {
    return this.#t;
  }
  increment(): number {
    return ++this.#t;
  }
  witness(v: number): void {
    if (v < this.#t) return;
    this.#t = v + 1;
  }
}

interface MemberState {
  name: string;
  addr: string;
  tags: Tags;
  vsn: readonly number[];
  status: SerfStatus;
  statusLTime: number;
  leaveTimeMs: number;
}

interface Intent {
  type: "join" | "leave";
  lTime: number;
  atMs: number;
}

/** Evidence of a member memberlist has not (re)announced to us: a missed alive broadcast. */
interface Missing {
  /** Who showed it to us ("ip:port"): the gossiper of its join intent, or the member itself. */
  from: string;
  atMs: number;
  /** Repair push/pulls it has caused. */
  repairs: number;
}

/** Repair push/pulls one missing member may cause (the witness, then a random member). */
const maxRepairsPerMember = 2;
/** Members with pending evidence tracked at once (names come from peers). */
const maxMissing = 1024;

interface OpenQuery {
  id: number;
  deadlineMs: number;
  acks: Set<string>;
  responses: Set<string>;
}

interface ReceivedQuery {
  query: SerfQuery;
  deadlineMs: number;
  responded: boolean;
}

type LeavePhase =
  | { phase: "intent"; broadcastId: number | undefined; deadlineMs: number }
  | { phase: "memberlist" }
  | { phase: "propagate"; untilMs: number };

const queryFlagAck = 1;
const queryFlagNoBroadcast = 2;
const responseFlagAck = 1;

export class SerfCore {
  readonly name: string;
  readonly swim: SwimCore<SerfTypes>;
  #cfg: SerfConfig;
  #t: SerfTimings;
  #rng: Rng;
  #log: Logger;
  #now: number;
  #tags: Tags;

  readonly clock = new LamportClock();
  readonly eventClock = new LamportClock();
  readonly queryClock = new LamportClock();
  #eventMinTime = 0;
  #queryMinTime = 0;
  #joinIgnoreOld = false;

  #members = new Map<string, MemberState>();
  #intents = new Map<string, Intent>();
  #missing = new Map<string, Missing>();
  #eventBuffer: (UserEventCollection | null)[];
  #queryBuffer: ({ lTime: number; ids: number[] } | null)[];
  #intentQueue = new BroadcastQueue<SerfMsg>();
  #queryQueue = new BroadcastQueue<SerfMsg>();
  #eventQueue = new BroadcastQueue<SerfMsg>();
  #openQueries = new Map<number, OpenQuery>();
  #received = new Map<string, ReceivedQuery>();
  #prunes: { name: string; atMs: number }[] = [];
  #leave: LeavePhase | undefined;
  #leaving = false;
  #vivaldi: VivaldiClient | undefined;
  #coords = new Map<string, Coordinate>();

  #nextReapMs: number;
  #nextReconnectMs: number;
  #nextQueueCheckMs: number;
  #nextRepairMs = 0;
  /**
   * After a join: the node we joined through, to pull its state once more at atMs (it has
   * heard every join around ours by then, some of which its reply could not carry).
   */
  #joinPull: { to: string; atMs: number } | undefined;
  #joinAddrs: readonly string[] = [];

  #memberCoalesce = new Map<string, { type: MemberEventType; member: SerfMember }>();
  #memberLastFlushed = new Map<string, MemberEventType>();
  #memberCoalesceFirst = 0;
  #memberCoalesceLast = 0;
  #userCoalesce = new Map<string, { lTime: number; events: SerfEvent[] }>();
  #userCoalesceFirst = 0;
  #userCoalesceLast = 0;

  #sends: SwimSend<SerfTypes>[] = [];
  #events: SerfEvent[] = [];

  constructor(config: SerfConfig) {
    this.#cfg = config;
    this.name = config.name;
    this.#t = config.timings ?? serfTimings;
    this.#rng = config.rng;
    this.#log = config.logger;
    this.#now = config.now;
    this.#tags = config.tags ?? {};
    this.#eventBuffer = new Array(this.#t.eventBuffer).fill(null);
    this.#queryBuffer = new Array(this.#t.queryBuffer).fill(null);
    this.clock.increment();
    this.eventClock.increment();
    this.queryClock.increment();
    const r = config.restoreClocks;
    if (r) {
      this.clock.witness(r.lTime);
      this.eventClock.witness(r.eventLTime);
      this.queryClock.witness(r.queryLTime);
      this.#eventMinTime = r.eventLTime + 1;
      this.#queryMinTime = r.queryLTime + 1;
    }
    if (!config.disableCoordinates) this.#vivaldi = new VivaldiClient(config.rng.fork());
    this.#nextReapMs = config.now + this.#t.reapIntervalMs;
    this.#nextReconnectMs = config.now + this.#t.reconnectIntervalMs;
    this.#nextQueueCheckMs = config.now + this.#t.queueCheckIntervalMs;
    this.swim = new SwimCore<SerfTypes>({
      name: config.name,
      addr: config.addr,
      meta: this.#tags,
      vsn: config.vsn,
      profile: config.profile,
      rng: config.rng.fork(),
      logger: config.logger.named("memberlist"),
      now: config.now,
      wallOffsetMs: config.wallOffsetMs,
      measure: config.measure ?? estimateSize,
    });
    this.swim.setDelegate({
      getBroadcasts: (overhead, limit) => this.#getBroadcasts(overhead, limit),
      userSize: (m) => this.#size(m),
      localState: (_join, pull) => this.#localState(pull),
      ackPayload: () => this.#vivaldi?.coordinate,
      vetoAlive: config.vetoMember
        ? (a) => config.vetoMember!({ name: a.node, addr: a.addr, tags: a.meta, vsn: a.vsn })
        : undefined,
      vetoMerge: config.vetoMember
        ? (nodes) => {
          for (const n of nodes) {
            const r = config.vetoMember!({ name: n.name, addr: n.addr, tags: n.meta, vsn: n.vsn });
            if (r) return `Member "${n.name}" rejected: ${r}`;
          }
          return undefined;
        }
        : undefined,
    });
    this.#drainSwim();
  }

  /** Size of a Serf message as carried in a memberlist user message. */
  #size(msg: SerfMsg): number {
    return this.#cfg.measure ? this.#cfg.measure({ type: "user", msg }) : estimateSize(msg);
  }

  // ---------------------------------------------------------------------------
  // Queries about state

  members(): SerfMember[] {
    return [...this.#members.values()].map(memberView);
  }

  /** Status of one member without building a view (cheap, for hot checks). */
  memberStatus(name: string): SerfStatus | undefined {
    return this.#members.get(name)?.status;
  }

  /** Tags of one member without building a view (cheap, for hot checks). */
  memberTags(name: string): Tags | undefined {
    return this.#members.get(name)?.tags;
  }

  /** The name of the first member pred holds for, without building views (cheap, for hot checks). */
  findMember(pred: (name: string, tags: Tags, status: SerfStatus) => boolean): string | undefined {
    for (const m of this.#members.values()) if (pred(m.name, m.tags, m.status)) return m.name;
    return undefined;
  }

  member(name: string): SerfMember | undefined {
    const m = this.#members.get(name);
    return m ? memberView(m) : undefined;
  }

  /** Current clocks, for the agent's snapshot. */
  clocks(): SerfClocks {
    return { lTime: this.clock.time, eventLTime: this.eventClock.time, queryLTime: this.queryClock.time };
  }

  get tags(): Tags {
    return this.#tags;
  }

  /** Our Vivaldi coordinate, if coordinates are enabled. */
  coordinate(): Coordinate | undefined {
    return this.#vivaldi?.coordinate;
  }

  /** The last coordinate seen for another node. */
  coordinateOf(name: string): Coordinate | undefined {
    return this.#coords.get(name);
  }

  /** Serf DefaultQueryTimeout: GossipInterval * QueryTimeoutMult * ceil(log10(N+1)). */
  defaultQueryTimeoutMs(): number {
    const n = this.swim.numAlive;
    return this.#cfg.profile.gossipIntervalMs * this.#t.queryTimeoutMult * Math.ceil(Math.log10(n + 1));
  }

  nextDeadline(): number {
    let t = Math.min(this.swim.nextDeadline(), this.#nextReapMs, this.#nextReconnectMs, this.#nextQueueCheckMs, this.#nextRepairAt());
    for (const q of this.#openQueries.values()) t = Math.min(t, q.deadlineMs);
    for (const p of this.#prunes) t = Math.min(t, p.atMs);
    if (this.#memberCoalesce.size > 0) t = Math.min(t, this.#memberFlushAt());
    if (this.#userCoalesce.size > 0) t = Math.min(t, this.#userFlushAt());
    const l = this.#leave;
    if (l?.phase === "intent") t = Math.min(t, l.deadlineMs);
    if (l?.phase === "propagate") t = Math.min(t, l.untilMs);
    return t;
  }

  hasReady(): boolean {
    return this.#sends.length > 0 || this.#events.length > 0;
  }

  ready(): SerfReady {
    const out = { sends: this.#sends, events: this.#events };
    this.#sends = [];
    this.#events = [];
    return out;
  }

  // ---------------------------------------------------------------------------
  // Inputs

  step(input: SerfInput): void {
    this.#now = Math.max(this.#now, input.now);
    const now = this.#now;
    switch (input.kind) {
      case "tick":
        this.swim.step(input);
        this.#drainSwim();
        this.#tick();
        break;
      case "packet":
      case "stream":
      case "streamError":
        this.swim.step(input);
        break;
      case "join":
        this.#joinIgnoreOld = !!input.ignoreOld;
        this.#joinAddrs = input.addrs;
        this.swim.step({ kind: "join", now, addrs: input.addrs, tag: "user" });
        break;
      case "leave":
        this.#startLeave();
        break;
      case "setTags": {
        const metaBytes = this.#cfg.measure
          ? this.#cfg.measure({ type: "alive", node: "", addr: this.swim.addr, incarnation: 0, meta: input.tags, vsn: [] }) -
            this.#cfg.measure({ type: "alive", node: "", addr: this.swim.addr, incarnation: 0, meta: {}, vsn: [] }) + 2
          : estimateSize(input.tags);
        if (metaBytes > this.#cfg.profile.metaMaxSize) {
          this.#events.push({
            kind: "error",
            input: "setTags",
            message: `Encoded tags exceed the ${this.#cfg.profile.metaMaxSize} byte limit: ${metaBytes} bytes`,
          });
          break;
        }
        this.#tags = { ...input.tags };
        this.swim.step({ kind: "setMeta", now, meta: this.#tags });
        break;
      }
      case "userEvent":
        this.#userEvent(input.name, input.payload, input.coalesce);
        break;
      case "query":
        this.#query(input);
        break;
      case "respond":
        this.#respond(input.lTime, input.id, input.payload);
        break;
      case "forceLeave":
        this.#forceLeave(input.node, !!input.prune);
        break;
    }
    this.#drainSwim();
    this.#checkLeave();
    this.#drainSwim();
  }

  #drainSwim(): void {
    if (!this.swim.hasReady()) return;
    const rd = this.swim.ready();
    this.#sends.push(...rd.sends);
    for (const e of rd.events) this.#onSwimEvent(e);
  }

  #onSwimEvent(e: SwimEvent<SerfTypes>): void {
    switch (e.kind) {
      case "join":
        this.#handleNodeJoin(e.member);
        return;
      case "leave":
        this.#handleNodeLeave(e.member);
        return;
      case "update":
        this.#handleNodeUpdate(e.member);
        return;
      case "user":
        this.#handleMessage(e.from, e.msg);
        return;
      case "remoteState":
        this.#mergeRemoteState(e.state, e.join);
        return;
      case "pingComplete":
        this.#pingComplete(e.node, e.rttMs, e.payload);
        return;
      case "joinDone":
        if (e.tag !== "user") return;
        if (e.contacted > 0) this.#broadcastJoin(this.clock.time);
        if (e.contacted > 0 && this.#t.repairGraceMs > 0 && this.#joinAddrs.length > 0) {
          this.#joinPull = { to: this.#joinAddrs[0]!, atMs: this.#now + pushPullScaleMs(this.#t.repairIntervalMs, this.#members.size) };
        }
        this.#joinIgnoreOld = false;
        this.#events.push({ kind: "joinDone", contacted: e.contacted, errors: e.errors });
        return;
      case "leaveDone":
        if (this.#leave?.phase === "memberlist") {
          this.#leave = { phase: "propagate", untilMs: this.#now + this.#t.leavePropagateDelayMs };
        }
        return;
      case "conflict":
        this.#events.push({ kind: "conflict", name: e.existing.name, existingAddr: e.existing.addr, otherAddr: e.other.addr });
        return;
      case "unknownPeer":
        this.#noteMissing(e.node, e.addr);
        return;
    }
  }

  // ---------------------------------------------------------------------------
  // Periodic work

  #tick(): void {
    const now = this.#now;
    for (const [lTime, q] of [...this.#openQueries]) {
      if (now < q.deadlineMs) continue;
      this.#openQueries.delete(lTime);
      this.#events.push({ kind: "queryDone", lTime, id: q.id, acks: q.acks.size, responses: q.responses.size });
    }
    for (const [key, r] of [...this.#received]) if (now >= r.deadlineMs) this.#received.delete(key);
    if (this.#prunes.length > 0) {
      const due = this.#prunes.filter((p) => p.atMs <= now);
      this.#prunes = this.#prunes.filter((p) => p.atMs > now);
      for (const p of due) this.#eraseNode(p.name);
    }
    if (now >= this.#nextReapMs) {
      this.#nextReapMs = now + this.#t.reapIntervalMs;
      this.#reap();
    }
    if (now >= this.#nextReconnectMs) {
      this.#nextReconnectMs = now + this.#t.reconnectIntervalMs;
      this.#reconnect();
    }
    if (now >= this.#nextQueueCheckMs) {
      this.#nextQueueCheckMs = now + this.#t.queueCheckIntervalMs;
      const max = this.#t.minQueueDepth > 0
        ? Math.max(this.#t.minQueueDepth, 2 * this.#members.size)
        : this.#t.maxQueueDepth;
      for (const q of [this.#intentQueue, this.#queryQueue, this.#eventQueue]) {
        const dropped = q.prune(max);
        if (dropped > 0) this.#log.warn("pruned broadcast queue", { dropped, max });
      }
    }
    if (this.#memberCoalesce.size > 0 && now >= this.#memberFlushAt()) this.#flushMembers();
    if (this.#userCoalesce.size > 0 && now >= this.#userFlushAt()) this.#flushUser();
    this.#repair();
  }

  // ---------------------------------------------------------------------------
  // Anti-entropy repair (cairn; Serf waits for the next periodic push/pull)

  /**
   * Evidence that a member exists (or is back) which memberlist has not
   * told us about: a gossiped join intent, or a ping from the member
   * itself. If it still holds `repairGraceMs` later, we missed the member's
   * alive broadcast: each is sent a bounded number of times, so a node can
   * miss every copy, and memberlist only repairs that at the next periodic
   * push/pull (30-60 s).
   */
  #noteMissing(name: string, from: string): void {
    if (this.#t.repairGraceMs <= 0 || name === this.name || from === this.swim.addr) return;
    // A member we gave up on (e.g. one our veto refuses) keeps its entry until it ages out.
    if (this.#missing.has(name) || this.#missing.size >= maxMissing) return;
    this.#missing.set(name, { from, atMs: this.#now, repairs: 0 });
  }

  /**
   * Pull the state from the witness (which knew the member), or failing
   * that from a random member: one push/pull at a time, at most one per
   * `repairIntervalMs` scaled with the cluster size like push/pull.
   */
  #repair(): void {
    for (const [name, miss] of this.#missing) {
      const m = this.#members.get(name);
      if ((m && m.status !== "failed") || this.#now - miss.atMs > this.#t.recentIntentTimeoutMs) this.#missing.delete(name);
    }
    const at = this.#nextRepairAt();
    if (at === Infinity || this.#now < at) return;
    const jp = this.#joinPull;
    if (jp && this.#now >= jp.atMs) {
      this.#joinPull = undefined;
      this.#log.debug("after our join: push/pull with the join target again", { with: jp.to });
      this.#startRepair(jp.to);
      return;
    }
    for (const [name, miss] of this.#missing) {
      if (miss.repairs >= maxRepairsPerMember || this.#now < miss.atMs + this.#t.repairGraceMs) continue;
      const to = miss.repairs === 0 ? miss.from : this.#randomAliveAddr();
      miss.repairs++;
      if (to === undefined) continue;
      this.#log.debug("missed the alive broadcast of a member: push/pull to repair", { node: name, with: to });
      this.#startRepair(to);
      return;
    }
  }

  #startRepair(to: string): void {
    this.#nextRepairMs = this.#now + pushPullScaleMs(this.#t.repairIntervalMs, this.#members.size);
    this.swim.step({ kind: "pushPull", now: this.#now, to });
  }

  /** When #repair could next act (Infinity: nothing to repair, or off). */
  #nextRepairAt(): number {
    if ((this.#missing.size === 0 && !this.#joinPull) || this.#leaving || this.swim.isRepairing) return Infinity;
    let due = Infinity;
    const jp = this.#joinPull;
    if (jp) due = Math.min(due, jp.atMs);
    for (const miss of this.#missing.values()) {
      if (miss.repairs < maxRepairsPerMember) due = Math.min(due, miss.atMs + this.#t.repairGraceMs);
    }
    return due === Infinity ? due : Math.max(due, this.#nextRepairMs);
  }

  #randomAliveAddr(): string | undefined {
    const alive = [...this.#members.values()].filter((m) => m.status === "alive" && m.name !== this.name);
    return alive.length > 0 ? this.#rng.pick(alive).addr : undefined;
  }

  #reap(): void {
    const now = this.#now;
    for (const m of [...this.#members.values()]) {
      if (m.name === this.name) continue;
      const age = now - m.leaveTimeMs;
      if (m.status === "failed" && age > this.#reconnectTimeoutMs(m)) this.#eraseNode(m.name);
      else if (m.status === "left" && age > this.#t.tombstoneTimeoutMs) this.#eraseNode(m.name);
    }
    for (const [name, intent] of [...this.#intents]) {
      if (now - intent.atMs > this.#t.recentIntentTimeoutMs) this.#intents.delete(name);
    }
  }

  #reconnectTimeoutMs(m: MemberState): number {
    const base = this.#t.reconnectTimeoutMs;
    return this.#cfg.reconnectTimeoutFor ? this.#cfg.reconnectTimeoutFor(memberView(m), base) : base;
  }

  #reconnect(): void {
    if (this.#leaving) return;
    const failed = [...this.#members.values()].filter((m) => m.status === "failed");
    if (failed.length === 0) return;
    const left = [...this.#members.values()].filter((m) => m.status === "left").length;
    const alive = this.#members.size - failed.length - left;
    const prob = alive > 0 ? failed.length / alive : 1;
    if (this.#rng.float() > prob) return;
    const m = this.#rng.pick(failed);
    this.#log.info("attempting reconnect", { node: m.name, addr: m.addr });
    this.swim.step({ kind: "join", now: this.#now, addrs: [m.addr], tag: "reconnect" });
  }

  #eraseNode(name: string): void {
    const m = this.#members.get(name);
    if (!m || name === this.name) return;
    this.#members.delete(name);
    this.#coords.delete(name);
    this.#vivaldi?.forgetNode(name);
    this.#memberEvent("reap", m);
  }

  // ---------------------------------------------------------------------------
  // Member transitions from memberlist (handleNodeJoin / Leave / Update)

  #handleNodeJoin(n: SwimMember<Tags>): void {
    let m = this.#members.get(n.name);
    if (!m) {
      m = { name: n.name, addr: n.addr, tags: n.meta, vsn: n.vsn, status: "alive", statusLTime: 0, leaveTimeMs: 0 };
      const intent = this.#intents.get(n.name);
      if (intent?.type === "join") m.statusLTime = intent.lTime;
      if (intent?.type === "leave") {
        m.status = "leaving";
        m.statusLTime = intent.lTime;
      }
      if (intent) this.#intents.delete(n.name);
      this.#members.set(n.name, m);
    } else {
      m.status = "alive";
      m.leaveTimeMs = 0;
      m.addr = n.addr;
      m.tags = n.meta;
      m.vsn = n.vsn;
    }
    this.#memberEvent("join", m);
  }

  #handleNodeLeave(n: SwimMember<Tags>): void {
    const m = this.#members.get(n.name);
    if (!m) return;
    if (m.status === "leaving") m.status = "left";
    else if (m.status === "alive") m.status = "failed";
    else return;
    m.leaveTimeMs = this.#now;
    this.#coords.delete(m.name);
    this.#vivaldi?.forgetNode(m.name);
    this.#memberEvent(m.status === "left" ? "leave" : "failed", m);
  }

  #handleNodeUpdate(n: SwimMember<Tags>): void {
    const m = this.#members.get(n.name);
    if (!m) return;
    m.addr = n.addr;
    m.tags = n.meta;
    m.vsn = n.vsn;
    this.#memberEvent("update", m);
  }

  #memberEvent(type: MemberEventType, m: MemberState): void {
    const view = memberView(m);
    if (this.#t.coalesceMs <= 0) {
      this.#events.push({ kind: "member", type, members: [view] });
      return;
    }
    if (this.#memberCoalesce.size === 0) this.#memberCoalesceFirst = this.#now;
    this.#memberCoalesceLast = this.#now;
    this.#memberCoalesce.set(m.name, { type, member: view });
  }

  #memberFlushAt(): number {
    return Math.min(this.#memberCoalesceFirst + this.#t.coalesceMs, this.#memberCoalesceLast + this.#t.quiescentMs);
  }

  #flushMembers(): void {
    const byType = new Map<MemberEventType, SerfMember[]>();
    for (const { type, member } of this.#memberCoalesce.values()) {
      // Serf's coalescer: skip an event equal to the last one sent for this member (updates always go).
      if (type !== "update" && this.#memberLastFlushed.get(member.name) === type) continue;
      this.#memberLastFlushed.set(member.name, type);
      const list = byType.get(type) ?? [];
      list.push(member);
      byType.set(type, list);
    }
    this.#memberCoalesce.clear();
    for (const [type, members] of byType) this.#events.push({ kind: "member", type, members });
  }

  // ---------------------------------------------------------------------------
  // Serf messages

  #handleMessage(from: string, msg: SerfMsg): void {
    switch (msg.type) {
      case "join":
        if (this.#handleJoinIntent(msg.body, from)) this.#intentQueue.push(msg, { sizeBytes: this.#size(msg) });
        return;
      case "leave":
        if (this.#handleLeaveIntent(msg.body)) this.#intentQueue.push(msg, { sizeBytes: this.#size(msg) });
        return;
      case "userEvent":
        if (this.#handleUserEvent(msg.body)) this.#eventQueue.push(msg, { sizeBytes: this.#size(msg) });
        return;
      case "query":
        if (this.#handleQuery(msg.body)) this.#queryQueue.push(msg, { sizeBytes: this.#size(msg) });
        return;
      case "queryResponse":
        this.#handleQueryResponse(msg.body);
        return;
      case "relay":
        this.#sends.push({ to: msg.destAddr, msg: { type: "user", msg: { type: "queryResponse", body: msg.inner } } });
        return;
      default:
        this.#log.warn("unknown serf message dropped", { from });
    }
  }

  #upsertIntent(name: string, type: "join" | "leave", lTime: number): boolean {
    const cur = this.#intents.get(name);
    if (cur && lTime <= cur.lTime) return false;
    this.#intents.set(name, { type, lTime, atMs: this.#now });
    return true;
  }

  /** `from`: the gossiper of this intent (unset when it came in a push/pull). */
  #handleJoinIntent(j: MessageJoin, from?: string): boolean {
    this.clock.witness(j.lTime);
    const m = this.#members.get(j.node);
    if (!m) {
      if (from !== undefined) this.#noteMissing(j.node, from);
      return this.#upsertIntent(j.node, "join", j.lTime);
    }
    if (j.lTime <= m.statusLTime) return false;
    // A newer join of a member we hold failed: its alive (a restart) may be what we missed.
    if (m.status === "failed" && from !== undefined) this.#noteMissing(j.node, from);
    m.statusLTime = j.lTime;
    if (m.status === "leaving") m.status = "alive";
    return true;
  }

  #handleLeaveIntent(l: MessageLeave): boolean {
    this.clock.witness(l.lTime);
    const m = this.#members.get(l.node);
    if (!m) return this.#upsertIntent(l.node, "leave", l.lTime);
    if (l.lTime <= m.statusLTime) return false;
    if (l.node === this.name && !this.#leaving) {
      // Someone says we are leaving: refute with a fresh join intent.
      this.#log.warn("refuting a leave intent about us", { lTime: l.lTime });
      this.#broadcastJoin(this.clock.time);
      return false;
    }
    switch (m.status) {
      case "alive":
        m.status = "leaving";
        m.statusLTime = l.lTime;
        if (l.prune) this.#handlePrune(m);
        return true;
      case "failed":
        m.status = "left";
        m.statusLTime = l.lTime;
        this.#memberEvent("leave", m);
        if (l.prune) this.#handlePrune(m);
        return true;
      case "leaving":
      case "left":
        if (l.prune) this.#handlePrune(m);
        return true;
    }
  }

  #handlePrune(m: MemberState): void {
    if (m.status === "leaving") {
      this.#prunes.push({ name: m.name, atMs: this.#now + this.#t.broadcastTimeoutMs + this.#t.leavePropagateDelayMs });
    } else {
      this.#eraseNode(m.name);
    }
  }

  #broadcastJoin(lTime: number): void {
    const msg: SerfMsg = { type: "join", body: { lTime, node: this.name } };
    this.clock.witness(lTime);
    this.#handleJoinIntent(msg.body);
    this.#intentQueue.push(msg, { sizeBytes: this.#size(msg) });
  }

  // ---------------------------------------------------------------------------
  // Push/pull state (serf delegate LocalState / MergeRemoteState)

  /** Serf's push/pull state; `pull`: our own status and the clocks only (a repair's pull). */
  #localState(pull = false): MessagePushPull {
    const statusLTimes = new Map<string, number>();
    const leftMembers: string[] = [];
    for (const m of this.#members.values()) {
      if (pull && m.name !== this.name) continue;
      statusLTimes.set(m.name, m.statusLTime);
      if (m.status === "left") leftMembers.push(m.name);
    }
    return {
      lTime: this.clock.time,
      statusLTimes,
      leftMembers,
      eventLTime: this.eventClock.time,
      events: pull ? [] : [...this.#eventBuffer],
      queryLTime: this.queryClock.time,
    };
  }

  #mergeRemoteState(pp: MessagePushPull, join: boolean): void {
    if (pp.lTime > 0) this.clock.witness(pp.lTime - 1);
    if (pp.eventLTime > 0) this.eventClock.witness(pp.eventLTime - 1);
    if (pp.queryLTime > 0) this.queryClock.witness(pp.queryLTime - 1);
    const left = new Set(pp.leftMembers);
    for (const name of pp.leftMembers) {
      this.#handleLeaveIntent({ lTime: (pp.statusLTimes.get(name) ?? 0) + 1, node: name, prune: false });
    }
    for (const [name, lTime] of pp.statusLTimes) {
      if (left.has(name)) continue;
      this.#handleJoinIntent({ lTime, node: name });
    }
    if (join && this.#joinIgnoreOld && pp.eventLTime > this.#eventMinTime) this.#eventMinTime = pp.eventLTime;
    for (const slot of pp.events) {
      if (!slot) continue;
      for (const e of slot.events) {
        this.#handleUserEvent({ lTime: slot.lTime, name: e.name, payload: e.payload, cc: false });
      }
    }
  }

  // ---------------------------------------------------------------------------
  // Broadcast queues (intents, then queries, then events)

  #getBroadcasts(overheadBytes: number, limitBytes: number): SerfMsg[] {
    const transmitLimit = retransmitLimit(this.#cfg.profile.retransmitMult, this.#members.size);
    const out: SerfMsg[] = [];
    let free = limitBytes;
    for (const q of [this.#intentQueue, this.#queryQueue, this.#eventQueue]) {
      if (free <= overheadBytes) break;
      const got = q.takeSized({ overheadBytes, limitBytes: free, transmitLimit });
      free -= got.bytes;
      out.push(...got.msgs);
    }
    return out;
  }

  // ---------------------------------------------------------------------------
  // User events

  #userEvent(name: string, payload: Uint8Array, coalesce: boolean): void {
    if (name.length + payload.length > this.#t.userEventSizeLimit) {
      this.#events.push({
        kind: "error",
        input: "userEvent",
        message: `User event exceeds configured limit of ${this.#t.userEventSizeLimit} bytes before encoding`,
      });
      return;
    }
    const body: MessageUserEvent = { lTime: this.eventClock.time, name, payload, cc: coalesce };
    this.eventClock.increment();
    this.#handleUserEvent(body);
    const msg: SerfMsg = { type: "userEvent", body };
    this.#eventQueue.push(msg, { sizeBytes: this.#size(msg) });
  }

  #handleUserEvent(e: MessageUserEvent): boolean {
    this.eventClock.witness(e.lTime);
    if (e.lTime < this.#eventMinTime) return false;
    const size = this.#eventBuffer.length;
    const cur = this.eventClock.time;
    if (cur > size && e.lTime < cur - size) return false;
    const idx = e.lTime % size;
    let seen = this.#eventBuffer[idx];
    if (seen && seen.lTime === e.lTime) {
      if (seen.events.some((p) => p.name === e.name && bytesEqual(p.payload, e.payload))) return false;
    } else {
      seen = { lTime: e.lTime, events: [] };
      this.#eventBuffer[idx] = seen;
    }
    seen.events.push({ name: e.name, payload: e.payload });
    this.#deliverUserEvent({ kind: "user", lTime: e.lTime, name: e.name, payload: e.payload, coalesce: e.cc });
    return true;
  }

  #deliverUserEvent(ev: Extract<SerfEvent, { kind: "user" }>): void {
    if (this.#t.userCoalesceMs <= 0 || !ev.coalesce) {
      this.#events.push(ev);
      return;
    }
    // Coalesce: per name, keep only the events with the highest LTime.
    if (this.#userCoalesce.size === 0) this.#userCoalesceFirst = this.#now;
    this.#userCoalesceLast = this.#now;
    const cur = this.#userCoalesce.get(ev.name);
    if (!cur || ev.lTime > cur.lTime) this.#userCoalesce.set(ev.name, { lTime: ev.lTime, events: [ev] });
    else if (ev.lTime === cur.lTime) cur.events.push(ev);
  }

  #userFlushAt(): number {
    return Math.min(this.#userCoalesceFirst + this.#t.userCoalesceMs, this.#userCoalesceLast + this.#t.userQuiescentMs);
  }

  #flushUser(): void {
    for (const { events } of this.#userCoalesce.values()) this.#events.push(...events);
    this.#userCoalesce.clear();
  }

  // ---------------------------------------------------------------------------
  // Queries

  #query(p: QueryParams): void {
    const timeoutMs = p.timeoutMs && p.timeoutMs > 0 ? p.timeoutMs : this.defaultQueryTimeoutMs();
    let flags = 0;
    if (p.requestAck) flags |= queryFlagAck;
    const q: SerfQuery = {
      lTime: this.queryClock.time,
      id: this.#rng.uint32() & 0x7fffffff,
      addr: this.swim.addr,
      sourceNode: this.name,
      filters: p.filters ?? [],
      flags,
      relayFactor: p.relayFactor ?? 0,
      timeoutMs,
      name: p.name,
      payload: p.payload,
    };
    const msg: SerfMsg = { type: "query", body: q };
    const size = this.#size(msg);
    if (size > this.#t.querySizeLimit) {
      this.#events.push({ kind: "error", input: "query", message: `Query exceeds limit of ${this.#t.querySizeLimit} bytes` });
      return;
    }
    const deadlineMs = this.#now + timeoutMs;
    this.#openQueries.set(q.lTime, { id: q.id, deadlineMs, acks: new Set(), responses: new Set() });
    this.#events.push({ kind: "queryStarted", token: p.token, lTime: q.lTime, id: q.id, deadlineMs });
    this.#handleQuery(q);
    this.#queryQueue.push(msg, { sizeBytes: size });
  }

  #handleQuery(q: SerfQuery): boolean {
    this.queryClock.witness(q.lTime);
    if (q.lTime < this.#queryMinTime) return false;
    const size = this.#queryBuffer.length;
    const cur = this.queryClock.time;
    if (cur > size && q.lTime < cur - size) return false;
    const idx = q.lTime % size;
    let seen = this.#queryBuffer[idx];
    if (seen && seen.lTime === q.lTime) {
      if (seen.ids.includes(q.id)) return false;
    } else {
      seen = { lTime: q.lTime, ids: [] };
      this.#queryBuffer[idx] = seen;
    }
    seen.ids.push(q.id);
    const rebroadcast = (q.flags & queryFlagNoBroadcast) === 0;
    if (!this.#shouldProcess(q.filters)) return rebroadcast;
    if (q.flags & queryFlagAck) {
      const ack: MessageQueryResponse = { lTime: q.lTime, id: q.id, from: this.name, flags: responseFlagAck, payload: null };
      this.#sendResponse(q, ack);
    }
    const deadlineMs = this.#now + q.timeoutMs;
    this.#received.set(`${q.lTime}/${q.id}`, { query: q, deadlineMs, responded: false });
    this.#events.push({
      kind: "query",
      lTime: q.lTime,
      id: q.id,
      name: q.name,
      payload: q.payload,
      sourceNode: q.sourceNode,
      deadlineMs,
      internal: q.name.startsWith("_serf_"),
    });
    return rebroadcast;
  }

  #shouldProcess(filters: readonly QueryFilter[]): boolean {
    for (const f of filters) {
      if (f.type === "node") {
        if (!f.nodes.includes(this.name)) return false;
      } else {
        let re: RegExp;
        try {
          re = new RegExp(f.filter.expr);
        } catch {
          this.#log.warn("bad tag filter expression", { expr: f.filter.expr });
          return false;
        }
        if (!re.test(this.#tags[f.filter.tag] ?? "")) return false;
      }
    }
    return true;
  }

  #respond(lTime: number, id: number, payload: Uint8Array | null): void {
    const key = `${lTime}/${id}`;
    const r = this.#received.get(key);
    if (!r || this.#now >= r.deadlineMs) {
      this.#events.push({ kind: "error", input: "respond", message: `Response is past the deadline or unknown: query ${key}` });
      return;
    }
    if (r.responded) {
      this.#events.push({ kind: "error", input: "respond", message: `Response already sent: query ${key}` });
      return;
    }
    const resp: MessageQueryResponse = { lTime, id, from: this.name, flags: 0, payload };
    if (estimateSize(resp) > this.#t.queryResponseSizeLimit) {
      this.#events.push({ kind: "error", input: "respond", message: `Response exceeds limit of ${this.#t.queryResponseSizeLimit} bytes` });
      return;
    }
    r.responded = true;
    this.#sendResponse(r.query, resp);
  }

  #sendResponse(q: SerfQuery, resp: MessageQueryResponse): void {
    this.#sends.push({ to: q.addr, msg: { type: "user", msg: { type: "queryResponse", body: resp } } });
    // Relay copies through random alive members speaking memberlist >= 5.
    const r = q.relayFactor;
    if (r <= 0 || this.#members.size < r + 1) return;
    const candidates = [...this.#members.values()].filter(
      (m) => m.status === "alive" && (m.vsn[1] ?? 0) >= 5 && m.name !== this.name,
    );
    this.#rng.shuffle(candidates);
    for (const m of candidates.slice(0, r)) {
      this.#sends.push({
        to: m.addr,
        msg: { type: "user", msg: { type: "relay", destAddr: q.addr, destName: q.sourceNode, inner: resp } },
      });
    }
  }

  #handleQueryResponse(resp: MessageQueryResponse): void {
    const q = this.#openQueries.get(resp.lTime);
    if (!q || q.id !== resp.id || this.#now >= q.deadlineMs) return;
    if (resp.flags & responseFlagAck) {
      if (q.acks.has(resp.from)) return;
      q.acks.add(resp.from);
      this.#events.push({ kind: "queryAck", lTime: resp.lTime, id: resp.id, from: resp.from });
    } else {
      if (q.responses.has(resp.from)) return;
      q.responses.add(resp.from);
      this.#events.push({ kind: "queryResponse", lTime: resp.lTime, id: resp.id, from: resp.from, payload: resp.payload });
    }
  }

  // ---------------------------------------------------------------------------
  // Leave and force-leave

  #startLeave(): void {
    if (this.#leaving) return;
    this.#leaving = true;
    const body: MessageLeave = { lTime: this.clock.time, node: this.name, prune: false };
    this.clock.increment();
    this.#handleLeaveIntent(body);
    const anyAlive = [...this.#members.values()].some((m) => m.name !== this.name && m.status === "alive");
    let broadcastId: number | undefined;
    if (anyAlive) {
      const msg: SerfMsg = { type: "leave", body };
      broadcastId = this.#intentQueue.push(msg, { sizeBytes: this.#size(msg) });
    }
    this.#leave = { phase: "intent", broadcastId, deadlineMs: this.#now + this.#t.broadcastTimeoutMs };
  }

  #checkLeave(): void {
    const l = this.#leave;
    if (!l) return;
    if (l.phase === "intent") {
      const sent = l.broadcastId === undefined || !this.#intentQueue.has(l.broadcastId);
      if (!sent && this.#now < l.deadlineMs) return;
      if (!sent) this.#log.warn("timeout while waiting for graceful leave");
      this.#leave = { phase: "memberlist" };
      this.swim.step({ kind: "leave", now: this.#now, timeoutMs: this.#t.broadcastTimeoutMs });
      this.#drainSwim();
      return;
    }
    if (l.phase === "propagate" && this.#now >= l.untilMs) {
      this.#leave = undefined;
      this.#events.push({ kind: "leaveDone" });
    }
  }

  #forceLeave(node: string, prune: boolean): void {
    const anyAlive = [...this.#members.values()].some((m) => m.name !== this.name && m.status === "alive");
    const body: MessageLeave = { lTime: this.clock.time, node, prune };
    this.clock.increment();
    this.#handleLeaveIntent(body);
    if (anyAlive) {
      const msg: SerfMsg = { type: "leave", body };
      this.#intentQueue.push(msg, { sizeBytes: this.#size(msg) });
    }
  }

  // ---------------------------------------------------------------------------
  // Coordinates

  #pingComplete(node: string, rttMs: number, payload: Coordinate | undefined): void {
    if (!this.#vivaldi || !payload) return;
    const r = this.#vivaldi.update(node, payload, rttMs);
    if (typeof r === "string") {
      this.#log.warn("rejected coordinate", { node, error: r });
      return;
    }
    this.#coords.set(node, payload);
  }
}

function memberView(m: MemberState): SerfMember {
  return Object.freeze({ name: m.name, addr: m.addr, tags: m.tags, status: m.status, statusLTime: m.statusLTime, vsn: m.vsn });
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
