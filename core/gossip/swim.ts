// The memberlist SWIM + Lifeguard protocol core, pure (docs/ARCHITECTURE.md, Invariants):
// `step(input)` takes ticks, packets, streams, join/leave/meta requests with
// the current time; `ready()` hands back what to send and what happened.
// No timers, sockets or clocks in here: deadlines are state checked on tick,
// randomness comes from the injected Rng. Behaviour follows memberlist 0.2.2
// (state.go, suspicion.go, awareness.go, queue.go), see docs/gossip-wire.md §6.
//
// Addresses are "ip:port" strings. Message payloads that belong to the layer
// above (user messages, push/pull user state, node metadata, ack payloads)
// are type parameters, so the Serf layer works on decoded values and the
// wire codec is only met in driver.ts.

import type { Logger } from "../log/mod.ts";
import type { Rng } from "../sim/rng.ts";
import { Awareness } from "./awareness.ts";
import { BroadcastQueue, retransmitLimit } from "./broadcast_queue.ts";
import type { GossipProfile } from "./profiles.ts";
import { expectedConfirmations, Suspicion, suspicionTimeoutMs } from "./suspicion.ts";

/** The payload types the layer above puts into memberlist messages. */
export interface GossipTypes {
  user: unknown;
  state: unknown;
  meta: unknown;
  ack: unknown;
}

/** Plain bytes everywhere: memberlist used without Serf. */
export interface BytesGossipTypes extends GossipTypes {
  user: Uint8Array;
  state: Uint8Array;
  meta: Uint8Array;
  ack: Uint8Array;
}

export type NodeStateName = "alive" | "suspect" | "dead" | "left";

export interface PingMsg {
  type: "ping";
  seqNo: number;
  /** Node the sender believes it probes; "" = anyone. */
  node: string;
  sourceAddr?: string;
  sourceNode?: string;
}
export interface IndirectPingMsg {
  type: "indirectPing";
  seqNo: number;
  node: string;
  /** Target "ip:port". */
  target: string;
  nack: boolean;
  sourceAddr?: string;
  sourceNode?: string;
}
export interface AckMsg<A> {
  type: "ack";
  seqNo: number;
  payload?: A;
}
export interface NackMsg {
  type: "nack";
  seqNo: number;
}
export interface AliveMsg<Meta> {
  type: "alive";
  node: string;
  addr: string;
  incarnation: number;
  meta: Meta;
  vsn: readonly number[];
}
export interface SuspectMsg {
  type: "suspect";
  node: string;
  incarnation: number;
  from: string;
}
export interface DeadMsg {
  type: "dead";
  node: string;
  incarnation: number;
  from: string;
}
export interface UserMsg<U> {
  type: "user";
  msg: U;
}
export interface PushNodeState<Meta> {
  name: string;
  addr: string;
  incarnation: number;
  meta: Meta;
  state: NodeStateName;
  vsn: readonly number[];
}
export interface PushPullMsg<Meta, S> {
  type: "pushPull";
  join: boolean;
  nodes: PushNodeState<Meta>[];
  userState?: S;
}
export interface ErrMsg {
  type: "err";
  error: string;
}
export interface CompoundMsg<T extends GossipTypes> {
  type: "compound";
  parts: SwimMessage<T>[];
}

export type SwimMessage<T extends GossipTypes> =
  | PingMsg
  | IndirectPingMsg
  | AckMsg<T["ack"]>
  | NackMsg
  | AliveMsg<T["meta"]>
  | SuspectMsg
  | DeadMsg
  | UserMsg<T["user"]>
  | PushPullMsg<T["meta"], T["state"]>
  | ErrMsg
  | CompoundMsg<T>;

export type SwimInput<T extends GossipTypes> =
  | { kind: "tick"; now: number }
  | { kind: "packet"; now: number; from: string; msg: SwimMessage<T> }
  /**
   * A message read from a TCP stream. `streamId` is set on an incoming
   * stream (a reply may be sent with `replyTo`); `requestId` is set when it
   * is the reply to a stream this core opened.
   */
  | { kind: "stream"; now: number; from: string; msg: SwimMessage<T>; streamId?: number; requestId?: number }
  /**
   * A stream this core opened failed (connect, timeout, decode). `refused`:
   * the peer's host answered the connect with a reset (nothing listens on
   * that port), which the TCP fallback ping takes as the probe's answer.
   */
  | { kind: "streamError"; now: number; requestId: number; error: string; refused?: boolean }
  /** Join through these addresses; `tag` is echoed in the joinDone event. */
  | { kind: "join"; now: number; addrs: readonly string[]; tag?: string }
  | { kind: "leave"; now: number; timeoutMs: number }
  | { kind: "setMeta"; now: number; meta: T["meta"] }
  /**
   * One extra push/pull (state exchange) with `to`, outside the periodic
   * schedule: anti-entropy when the layer above sees evidence of a missed
   * broadcast. Ignored while another such exchange is in flight.
   */
  | { kind: "pushPull"; now: number; to: string };

/**
 * One thing to send. Without `reliable` it is a UDP packet. With `reliable`
 * it goes over TCP: `requestId` set = open a stream, send, read one reply
 * (fed back as a `stream` input with that requestId, or `streamError`);
 * `replyTo` set = the reply on the incoming stream with that streamId.
 */
export interface SwimSend<T extends GossipTypes> {
  to: string;
  msg: SwimMessage<T>;
  reliable?: boolean;
  requestId?: number;
  replyTo?: number;
}

export interface SwimMember<Meta> {
  readonly name: string;
  readonly addr: string;
  readonly meta: Meta;
  readonly vsn: readonly number[];
  readonly incarnation: number;
  readonly state: NodeStateName;
  readonly stateChangeMs: number;
}

export type SwimEvent<T extends GossipTypes> =
  | { kind: "join"; member: SwimMember<T["meta"]> }
  /** The member became dead (failed) or left (graceful). */
  | { kind: "leave"; member: SwimMember<T["meta"]> }
  | { kind: "update"; member: SwimMember<T["meta"]> }
  | { kind: "user"; from: string; msg: T["user"] }
  | { kind: "remoteState"; from: string; join: boolean; state: T["state"] }
  | { kind: "pingComplete"; node: string; rttMs: number; payload: T["ack"] | undefined }
  | { kind: "joinDone"; contacted: number; errors: string[]; tag?: string }
  | { kind: "leaveDone" }
  /** Another address claims a known member's name. */
  | { kind: "conflict"; existing: SwimMember<T["meta"]>; other: AliveMsg<T["meta"]> }
  /** A node we have no state for probed us: we may have missed its alive broadcast. */
  | { kind: "unknownPeer"; node: string; addr: string };

export interface SwimReady<T extends GossipTypes> {
  sends: SwimSend<T>[];
  events: SwimEvent<T>[];
}

/** Synchronous hooks into the layer above (Serf). */
export interface SwimDelegate<T extends GossipTypes> {
  /** User messages to piggyback, each costing `overheadBytes` + its size, within `limitBytes`. */
  getBroadcasts(overheadBytes: number, limitBytes: number): T["user"][];
  /** Size estimate of a user message (for packing). */
  userSize(msg: T["user"]): number;
  /** The state for a push/pull; `pull`: only what a pull needs to carry (see #repairPushPull). */
  localState(join: boolean, pull: boolean): T["state"];
  ackPayload(): T["ack"] | undefined;
  /** Consul's alive delegate: a reason to ignore this alive (e.g. another dc), or undefined. */
  vetoAlive?(alive: AliveMsg<T["meta"]>): string | undefined;
  /** Consul's merge delegate: a reason to reject a whole join push/pull, or undefined. */
  vetoMerge?(nodes: readonly PushNodeState<T["meta"]>[]): string | undefined;
}

export interface SwimConfig<T extends GossipTypes> {
  name: string;
  /** Advertise "ip:port". */
  addr: string;
  meta: T["meta"];
  vsn?: readonly number[];
  profile: GossipProfile;
  rng: Rng;
  logger: Logger;
  now: number;
  /**
   * Wall-clock minus `now` (ms): members line their probe rounds up on the
   * wall clock (see #nextProbeTarget). 0 in a simulation's shared clock.
   */
  wallOffsetMs?: number;
  delegate?: SwimDelegate<T>;
  /** Size estimate of a message (bytes); default is a structural estimate. */
  measure?: (msg: SwimMessage<T>) => number;
  metaEquals?: (a: T["meta"], b: T["meta"]) => boolean;
}

export const defaultSwimVsn: readonly number[] = [1, 5, 2, 2, 5, 5];

interface NodeState<Meta> {
  name: string;
  addr: string;
  meta: Meta;
  vsn: readonly number[];
  incarnation: number;
  state: NodeStateName;
  stateChangeMs: number;
}

interface ProbeState {
  seqNo: number;
  target: string;
  sentMs: number;
  ackDeadlineMs: number;
  endMs: number;
  indirectSent: boolean;
  expectedNacks: number;
  nacks: number;
  acked: boolean;
  /** The TCP fallback ping's stream, once sent. */
  fallbackRequestId?: number;
}

interface RelayHandler {
  requester: string;
  requesterSeq: number;
  wantNack: boolean;
  deadlineMs: number;
}

interface PendingJoin {
  tag: string | undefined;
  remaining: Set<number>;
  contacted: number;
  errors: string[];
}

const compoundOverhead = 2;
const partOverhead = 2;
const userMsgOverhead = 1;

export class SwimCore<T extends GossipTypes = BytesGossipTypes> {
  readonly name: string;
  readonly addr: string;
  #cfg: SwimConfig<T>;
  #p: GossipProfile;
  #rng: Rng;
  #log: Logger;
  #delegate?: SwimDelegate<T>;
  #measure: (msg: SwimMessage<T>) => number;
  #metaEquals: (a: T["meta"], b: T["meta"]) => boolean;
  #vsn: readonly number[];

  #nodes: NodeState<T["meta"]>[] = [];
  #byName = new Map<string, NodeState<T["meta"]>>();
  #suspicions = new Map<string, Suspicion>();
  #awareness: Awareness;
  #queue = new BroadcastQueue<SwimMessage<T>>();
  #incarnation = 0;
  #seqNo = 0;
  #requestId = 0;
  /** Probe rounds: the offset used last, in the period it was used, and probes since the last reap. */
  #probeOffset = 0;
  #probePeriod = Number.NaN;
  #probesSinceReap = 0;
  #probe: ProbeState | undefined;
  #relays = new Map<number, RelayHandler>();
  #joins: PendingJoin[] = [];
  #streamKinds = new Map<number, "join" | "pushPull" | "ping">();
  #repairRequest: number | undefined;
  #leaving = false;
  #leave: { broadcastId: number; deadlineMs: number } | undefined;
  #now: number;

  /** The probe ticker's next tick: a fixed period, as memberlist's time.Ticker. */
  #nextProbeMs: number;
  /** A tick came while a probe ran: probe as soon as it ends (Go's ticker buffers one tick). */
  #probeTickPending = false;
  /** When the pending probe tick was due (ticks missed meanwhile collapse into the latest). */
  #probeTickMs = 0;
  #nextGossipMs: number;
  #nextPushPullMs: number;
  /** A member was just declared dead or left: gossip at the end of this step (see #deadNode). */
  #gossipNow = false;
  #lastEagerGossipMs = -Infinity;

  #sends: SwimSend<T>[] = [];
  #events: SwimEvent<T>[] = [];

  constructor(config: SwimConfig<T>) {
    this.#cfg = config;
    this.name = config.name;
    this.addr = config.addr;
    this.#p = config.profile;
    this.#rng = config.rng;
    this.#log = config.logger;
    this.#delegate = config.delegate;
    this.#measure = config.measure ?? estimateSize;
    this.#metaEquals = config.metaEquals ?? structuralEquals;
    this.#vsn = config.vsn ?? defaultSwimVsn;
    this.#awareness = new Awareness(this.#p.awarenessMaxMultiplier);
    this.#now = config.now;
    // Tickers start after a random delay within one interval (memberlist schedule()).
    this.#nextProbeMs = config.now + this.#rng.int(this.#p.probeIntervalMs);
    this.#nextGossipMs = config.now + this.#rng.int(this.#p.gossipIntervalMs);
    this.#nextPushPullMs = config.now + this.#rng.int(this.#p.pushPullIntervalMs);
    // setAlive: announce ourselves with incarnation 1.
    this.#aliveNode({
      type: "alive",
      node: config.name,
      addr: config.addr,
      incarnation: this.#nextIncarnation(),
      meta: config.meta,
      vsn: this.#vsn,
    }, true);
  }

  /** Set a delegate after construction (the Serf layer composes itself this way). */
  setDelegate(delegate: SwimDelegate<T>): void {
    this.#delegate = delegate;
  }

  get awarenessScore(): number {
    return this.#awareness.score;
  }

  get incarnation(): number {
    return this.#incarnation;
  }

  get isLeaving(): boolean {
    return this.#leaving;
  }

  /** memberlist estNumNodes: entries in the node list, dead ones included. */
  get numNodes(): number {
    return this.#nodes.length;
  }

  get numAlive(): number {
    let n = 0;
    for (const s of this.#nodes) if (s.state === "alive" || s.state === "suspect") n++;
    return n;
  }

  /** Broadcasts waiting in the queue (memberlist NumQueued). */
  get queuedBroadcasts(): number {
    return this.#queue.length;
  }

  member(name: string): SwimMember<T["meta"]> | undefined {
    const s = this.#byName.get(name);
    return s ? snapshot(s) : undefined;
  }

  members(): SwimMember<T["meta"]>[] {
    return this.#nodes.map(snapshot);
  }

  /** The earliest time at which a tick has work to do. */
  nextDeadline(): number {
    let t = Math.min(this.#nextGossipMs, this.#nextPushPullMs, this.#nextProbeMs);
    if (!this.#probe && this.#probeTickPending) t = Math.min(t, this.#now);
    if (this.#probe && !this.#probe.acked) {
      t = Math.min(t, this.#probe.indirectSent ? this.#probe.endMs : this.#probe.ackDeadlineMs);
    }
    for (const r of this.#relays.values()) t = Math.min(t, r.deadlineMs);
    for (const s of this.#suspicions.values()) t = Math.min(t, s.deadlineMs);
    if (this.#leave) t = Math.min(t, this.#leave.deadlineMs);
    return t;
  }

  step(input: SwimInput<T>): void {
    this.#now = Math.max(this.#now, input.now);
    switch (input.kind) {
      case "tick":
        this.#tick();
        break;
      case "packet":
        this.#handlePacket(input.from, input.msg);
        break;
      case "stream":
        this.#handleStream(input.from, input.msg, input.streamId, input.requestId);
        break;
      case "streamError":
        this.#streamFailed(input.requestId, input.error, !!input.refused);
        break;
      case "join":
        this.#join(input.addrs, input.tag);
        break;
      case "leave":
        this.#startLeave(input.timeoutMs);
        break;
      case "setMeta":
        this.#setMeta(input.meta);
        break;
      case "pushPull":
        this.#repairPushPull(input.to);
        break;
    }
    this.#checkLeave();
    if (this.#gossipNow) {
      this.#gossipNow = false;
      // At most four extra rounds a gossip interval, should many members die at once.
      if (this.#now - this.#lastEagerGossipMs >= this.#p.gossipIntervalMs / 4) {
        this.#lastEagerGossipMs = this.#now;
        this.#gossip();
      }
    }
  }

  hasReady(): boolean {
    return this.#sends.length > 0 || this.#events.length > 0;
  }

  ready(): SwimReady<T> {
    const out = { sends: this.#sends, events: this.#events };
    this.#sends = [];
    this.#events = [];
    return out;
  }

  // ---------------------------------------------------------------------------
  // Timers

  #tick(): void {
    const now = this.#now;
    // Suspicion deadlines.
    for (const [name, s] of [...this.#suspicions]) {
      if (!s.isExpired(now)) continue;
      this.#suspicions.delete(name);
      const st = this.#byName.get(name);
      if (st && st.state === "suspect" && st.stateChangeMs === s.startMs) {
        this.#log.info("marking node as failed, suspect timeout reached", {
          node: name,
          confirmations: s.confirmations,
        });
        this.#deadNode({ type: "dead", node: name, incarnation: st.incarnation, from: this.name });
      }
    }
    // Indirect probes we serve: nack on timeout.
    for (const [seq, r] of [...this.#relays]) {
      if (now < r.deadlineMs) continue;
      this.#relays.delete(seq);
      if (r.wantNack) this.#sendPacket(r.requester, { type: "nack", seqNo: r.requesterSeq });
    }
    // Our own probe.
    const p = this.#probe;
    if (p && !p.acked) {
      if (!p.indirectSent && now >= p.ackDeadlineMs) this.#indirectProbe(p);
      if (p.indirectSent && now >= p.endMs) this.#probeFailed(p);
    }
    // memberlist's probe ticker keeps its period whatever the probes do;
    // the awareness score only stretches how long a failing probe waits
    // (probeNode's deadline), and a tick that comes meanwhile starts the
    // next probe as soon as that one ends. Successful probes stay at one
    // per interval, so a node that penalized itself (e.g. nacks that came
    // too late for a probe of a dead node) does not probe less for it.
    if (now >= this.#nextProbeMs) {
      this.#nextProbeMs = nextTick(this.#nextProbeMs, this.#p.probeIntervalMs, now);
      this.#probeTickPending = true;
      this.#probeTickMs = this.#nextProbeMs - this.#p.probeIntervalMs;
    }
    if (!this.#probe && this.#probeTickPending) {
      this.#probeTickPending = false;
      this.#startProbe(this.#awareness.scaleTimeout(this.#p.probeIntervalMs));
    }
    if (now >= this.#nextGossipMs) {
      this.#nextGossipMs = nextTick(this.#nextGossipMs, this.#p.gossipIntervalMs, now);
      this.#gossip();
    }
    if (now >= this.#nextPushPullMs) {
      this.#nextPushPullMs = now + pushPullScaleMs(this.#p.pushPullIntervalMs, this.numNodes);
      this.#periodicPushPull();
    }
  }

  // ---------------------------------------------------------------------------
  // Probing (memberlist probe / probeNode)

  #startProbe(intervalMs: number): void {
    const target = this.#nextProbeTarget(this.#probeTickMs);
    if (!target) return;
    const seqNo = this.#nextSeqNo();
    const now = this.#now;
    const ping: PingMsg = { type: "ping", seqNo, node: target.name, sourceAddr: this.addr, sourceNode: this.name };
    if (target.state === "alive") {
      this.#sendPacket(target.addr, ping);
    } else {
      // Suspect: ping plus the suspicion, so the target can refute at once.
      const suspect: SuspectMsg = { type: "suspect", node: target.name, incarnation: target.incarnation, from: this.name };
      this.#sends.push({ to: target.addr, msg: { type: "compound", parts: [ping, suspect] } });
    }
    this.#probe = {
      seqNo,
      target: target.name,
      sentMs: now,
      ackDeadlineMs: now + this.#p.probeTimeoutMs,
      endMs: now + Math.max(intervalMs, this.#p.probeTimeoutMs),
      indirectSent: false,
      expectedNacks: 0,
      nacks: 0,
      acked: false,
    };
  }

  /**
   * Round robin over the live members, as memberlist, but in one order for
   * all (by name, which #nodes keeps) and in step with the wall clock: in
   * probe period s the member at place p of the n live ones (us included)
   * probes place p + 1 + (s mod (n - 1)). While members agree on who is
   * alive, each member is probed by exactly one other per period, one after
   * the other. memberlist shuffles every member's list on its own instead,
   * so how long a member waits for its next probe is an exponential draw,
   * 1 s on average at any size and several seconds now and then; here it is
   * about half a period, and at most two. A crash is noticed that much
   * sooner. Nothing changes on the wire, and each member still probes each
   * other once per n - 1 periods. When our probes fall behind the periods
   * (a probe that ran long under Lifeguard's awareness: ticks collapse), the
   * round just goes on to the next member, so it still reaches them all.
   */
  #nextProbeTarget(tickMs: number): NodeState<T["meta"]> | undefined {
    // memberlist reaps on each wrap of its list: about once per round here.
    if (this.#probesSinceReap++ >= this.numAlive) {
      this.#probesSinceReap = 0;
      this.#reapDead();
    }
    const live = this.#nodes.filter((x) => x.name === this.name || x.state === "alive" || x.state === "suspect");
    const n = live.length;
    const self = live.findIndex((x) => x.name === this.name);
    if (n < 2 || self < 0) return undefined;
    const period = Math.floor((tickMs + (this.#cfg.wallOffsetMs ?? 0)) / this.#p.probeIntervalMs);
    const inStep = Number.isNaN(this.#probePeriod) || period === this.#probePeriod + 1;
    this.#probeOffset = inStep ? ((period % (n - 1)) + n - 1) % (n - 1) : (this.#probeOffset + 1) % (n - 1);
    this.#probePeriod = period;
    return live[(self + 1 + this.#probeOffset) % n];
  }

  /** Forget nodes dead for longer than GossipToTheDeadTime (memberlist resetNodes). */
  #reapDead(): void {
    const cutoff = this.#now - this.#p.gossipToTheDeadMs;
    const keep: NodeState<T["meta"]>[] = [];
    for (const s of this.#nodes) {
      if ((s.state === "dead" || s.state === "left") && s.stateChangeMs < cutoff && s.name !== this.name) {
        this.#byName.delete(s.name);
        this.#suspicions.delete(s.name);
      } else {
        keep.push(s);
      }
    }
    this.#nodes = keep;
  }

  #indirectProbe(p: ProbeState): void {
    p.indirectSent = true;
    const target = this.#byName.get(p.target);
    if (!target) return;
    const peers = this.#kRandomNodes(this.#p.indirectChecks, (s) =>
      s.name !== this.name && s.name !== p.target && s.state === "alive"
    );
    for (const peer of peers) {
      const nack = (peer.vsn[1] ?? 0) >= 4;
      if (nack) p.expectedNacks++;
      this.#sendPacket(peer.addr, {
        type: "indirectPing",
        seqNo: p.seqNo,
        node: target.name,
        target: target.addr,
        nack,
        sourceAddr: this.addr,
        sourceNode: this.name,
      });
    }
    // TCP fallback ping, in parallel with the indirect probes.
    if (!this.#p.disableTcpPings && (target.vsn[1] ?? 0) >= 3) {
      const requestId = this.#nextRequestId();
      this.#streamKinds.set(requestId, "ping");
      p.fallbackRequestId = requestId;
      this.#sends.push({
        to: target.addr,
        msg: { type: "ping", seqNo: p.seqNo, node: target.name, sourceAddr: this.addr, sourceNode: this.name },
        reliable: true,
        requestId,
      });
    }
  }

  /**
   * The probe ends without an ack. `refused`: the TCP fallback's connect was
   * reset, so the probe ends before the indirect probes' wait (memberlist
   * waits out the probe interval whatever the fallback says). A reset comes
   * from the target's host when nothing listens on the port: the agent is
   * gone (crashed, killed, restarting), not merely slow or cut off, which
   * time out instead. The direct UDP ping has gone unanswered by then too.
   * It only makes the node suspect, which it can still refute; and it says
   * nothing against our own health, so no Lifeguard penalty for the nacks
   * not yet due.
   */
  #probeFailed(p: ProbeState, refused = false): void {
    this.#probe = undefined;
    if (!refused) this.#awareness.applyDelta(p.expectedNacks > 0 ? Math.max(0, p.expectedNacks - p.nacks) : 1);
    const target = this.#byName.get(p.target);
    if (!target) return;
    this.#log.info("suspect node, probe failed", {
      node: p.target,
      probeMs: Math.round(this.#now - p.sentMs),
      awareness: this.#awareness.score,
      ...(refused ? { tcp: "connection refused" } : {}),
    });
    this.#suspectNode({ type: "suspect", node: target.name, incarnation: target.incarnation, from: this.name });
  }

  #handleAck(msg: AckMsg<T["ack"]>, viaStream: boolean): void {
    const p = this.#probe;
    if (p && p.seqNo === msg.seqNo && !p.acked) {
      p.acked = true;
      this.#probe = undefined;
      this.#awareness.applyDelta(-1);
      if (!viaStream && msg.payload !== undefined) {
        this.#events.push({ kind: "pingComplete", node: p.target, rttMs: this.#now - p.sentMs, payload: msg.payload });
      }
      return;
    }
    const r = this.#relays.get(msg.seqNo);
    if (r) {
      this.#relays.delete(msg.seqNo);
      this.#sendPacket(r.requester, { type: "ack", seqNo: r.requesterSeq });
    }
  }

  // ---------------------------------------------------------------------------
  // Packets and streams

  #handlePacket(from: string, msg: SwimMessage<T>): void {
    switch (msg.type) {
      case "compound":
        // memberlist handles nested compounds recursively; decoded values are finite.
        for (const part of msg.parts) this.#handlePacket(from, part);
        return;
      case "ping": {
        if (msg.node !== "" && msg.node !== this.name) {
          this.#log.warn("got ping for unexpected node", { node: msg.node, from });
          return;
        }
        if (msg.sourceNode && msg.sourceAddr && !this.#byName.has(msg.sourceNode)) {
          this.#events.push({ kind: "unknownPeer", node: msg.sourceNode, addr: msg.sourceAddr });
        }
        const ack: AckMsg<T["ack"]> = { type: "ack", seqNo: msg.seqNo };
        const payload = this.#delegate?.ackPayload();
        if (payload !== undefined) ack.payload = payload;
        this.#sendPacket(msg.sourceAddr ?? from, ack);
        return;
      }
      case "indirectPing": {
        const seqNo = this.#nextSeqNo();
        this.#relays.set(seqNo, {
          requester: msg.sourceAddr ?? from,
          requesterSeq: msg.seqNo,
          wantNack: msg.nack,
          deadlineMs: this.#now + this.#p.probeTimeoutMs,
        });
        this.#sendPacket(msg.target, { type: "ping", seqNo, node: msg.node, sourceAddr: this.addr, sourceNode: this.name });
        return;
      }
      case "ack":
        this.#handleAck(msg, false);
        return;
      case "nack":
        if (this.#probe && this.#probe.seqNo === msg.seqNo) this.#probe.nacks++;
        return;
      case "alive":
        this.#aliveNode(msg, false);
        return;
      case "suspect":
        this.#suspectNode(msg);
        return;
      case "dead":
        this.#deadNode(msg);
        return;
      case "user":
        this.#events.push({ kind: "user", from, msg: msg.msg });
        return;
      case "pushPull":
      case "err":
        this.#log.warn("stream message received as packet, dropped", { type: msg.type, from });
        return;
    }
  }

  #handleStream(from: string, msg: SwimMessage<T>, streamId: number | undefined, requestId: number | undefined): void {
    if (requestId !== undefined) {
      const kind = this.#streamKinds.get(requestId);
      if (!kind) return;
      this.#streamKinds.delete(requestId);
      if (msg.type === "err") {
        this.#streamDone(requestId, kind, `Remote error: ${msg.error}`);
        return;
      }
      if (kind === "ping") {
        if (msg.type === "ack") this.#handleAck(msg, true);
        return;
      }
      if (msg.type !== "pushPull") {
        this.#streamDone(requestId, kind, `Unexpected reply "${msg.type}" to push/pull`);
        return;
      }
      // A node that knew no one else learns everything in its join reply from the one member
      // that sent it, and can only pass it on to members that member already told: merging it
      // quietly spares the pool a copy of every alive from every joiner (memberlist queues
      // them all). In a 50-node join storm that was much of the gossip before convergence,
      // and the queued copies delayed the alives that were news (scripts/bench/gossip.ts;
      // docs/performance.md).
      const quiet = kind === "join" && this.numAlive <= 1;
      this.#streamDone(requestId, kind, this.#mergeRemote(from, msg, quiet));
      return;
    }
    switch (msg.type) {
      case "ping":
        if (msg.node !== "" && msg.node !== this.name) return;
        if (streamId !== undefined) this.#sends.push({ to: from, msg: { type: "ack", seqNo: msg.seqNo }, reliable: true, replyTo: streamId });
        return;
      case "pushPull":
        if (streamId !== undefined) {
          this.#sends.push({ to: from, msg: this.#localPushPull(msg.join), reliable: true, replyTo: streamId });
        }
        {
          const err = this.#mergeRemote(from, msg);
          if (err) this.#log.warn("rejected remote state", { from, error: err });
        }
        return;
      case "user":
        this.#events.push({ kind: "user", from, msg: msg.msg });
        return;
      default:
        this.#log.warn("unexpected stream message, dropped", { type: msg.type, from });
    }
  }

  #streamFailed(requestId: number, error: string, refused: boolean): void {
    const kind = this.#streamKinds.get(requestId);
    if (!kind) return;
    this.#streamKinds.delete(requestId);
    const p = this.#probe;
    if (refused && kind === "ping" && p && !p.acked && p.fallbackRequestId === requestId) this.#probeFailed(p, true);
    this.#streamDone(requestId, kind, error);
  }

  #streamDone(requestId: number, kind: "join" | "pushPull" | "ping", error: string | undefined): void {
    if (requestId === this.#repairRequest) this.#repairRequest = undefined;
    if (kind === "pushPull" && error) this.#log.warn("push/pull failed", { error });
    if (kind !== "join") return;
    for (const j of this.#joins) {
      if (!j.remaining.delete(requestId)) continue;
      if (error) j.errors.push(error);
      else j.contacted++;
      if (j.remaining.size === 0) {
        this.#joins = this.#joins.filter((x) => x !== j);
        this.#events.push({ kind: "joinDone", contacted: j.contacted, errors: j.errors, tag: j.tag });
      }
    }
  }

  // ---------------------------------------------------------------------------
  // Push/pull and join

  #localPushPull(join: boolean, pull = false): PushPullMsg<T["meta"], T["state"]> {
    const msg: PushPullMsg<T["meta"], T["state"]> = {
      type: "pushPull",
      join,
      nodes: (pull ? this.#nodes.filter((s) => s.name === this.name) : this.#nodes).map((s) => ({
        name: s.name,
        addr: s.addr,
        incarnation: s.incarnation,
        meta: s.meta,
        state: s.state,
        vsn: s.vsn,
      })),
    };
    if (this.#delegate) msg.userState = this.#delegate.localState(join, pull);
    return msg;
  }

  /**
   * Merge a push/pull; returns an error text if the whole state was rejected.
   * `quiet`: members it makes alive are not broadcast (see #handleStream).
   */
  #mergeRemote(from: string, msg: PushPullMsg<T["meta"], T["state"]>, quiet = false): string | undefined {
    const versionError = verifyProtocol(msg.nodes, this.#nodes);
    if (versionError) return versionError;
    if (msg.join && this.#delegate?.vetoMerge) {
      const veto = this.#delegate.vetoMerge(msg.nodes);
      if (veto) return veto;
    }
    for (const n of msg.nodes) {
      switch (n.state) {
        case "alive":
          this.#aliveNode({ type: "alive", node: n.name, addr: n.addr, incarnation: n.incarnation, meta: n.meta, vsn: n.vsn }, false, quiet);
          break;
        case "left":
          this.#deadNode({ type: "dead", node: n.name, incarnation: n.incarnation, from: n.name });
          break;
        default:
          // A remote "dead" only makes us suspect (we probe it ourselves).
          this.#suspectNode({ type: "suspect", node: n.name, incarnation: n.incarnation, from: this.name });
      }
    }
    if (msg.userState !== undefined) {
      this.#events.push({ kind: "remoteState", from, join: msg.join, state: msg.userState });
    }
    return undefined;
  }

  #join(addrs: readonly string[], tag: string | undefined): void {
    const pending: PendingJoin = { tag, remaining: new Set(), contacted: 0, errors: [] };
    for (const addr of addrs) {
      if (addr === this.addr) {
        pending.errors.push(`Cannot join "${addr}": that is our own address`);
        continue;
      }
      const requestId = this.#nextRequestId();
      this.#streamKinds.set(requestId, "join");
      pending.remaining.add(requestId);
      this.#sends.push({ to: addr, msg: this.#localPushPull(true), reliable: true, requestId });
    }
    if (pending.remaining.size === 0) {
      this.#events.push({ kind: "joinDone", contacted: 0, errors: pending.errors, tag });
      return;
    }
    this.#joins.push(pending);
  }

  /** Whether an extra push/pull asked for with a `pushPull` input is still running. */
  get isRepairing(): boolean {
    return this.#repairRequest !== undefined;
  }

  #repairPushPull(to: string): void {
    if (this.#repairRequest !== undefined || this.#leaving || to === this.addr) return;
    const requestId = this.#nextRequestId();
    this.#streamKinds.set(requestId, "pushPull");
    this.#repairRequest = requestId;
    // A repair is there to pull: it sends only our own entry (and the layer above only its own
    // part), still a well-formed push/pull. In a join storm most repairs go to the join target,
    // which knows everyone already and had to read our whole list for nothing each time.
    this.#sends.push({ to, msg: this.#localPushPull(false, true), reliable: true, requestId });
  }

  #periodicPushPull(): void {
    const peers = this.#kRandomNodes(1, (s) => s.name !== this.name && s.state === "alive");
    const peer = peers[0];
    if (!peer) return;
    const requestId = this.#nextRequestId();
    this.#streamKinds.set(requestId, "pushPull");
    this.#sends.push({ to: peer.addr, msg: this.#localPushPull(false), reliable: true, requestId });
  }

  // ---------------------------------------------------------------------------
  // Gossip and piggybacking

  #gossip(): void {
    const cutoff = this.#now - this.#p.gossipToTheDeadMs;
    const peers = this.#kRandomNodes(this.#p.gossipNodes, (s) => {
      if (s.name === this.name) return false;
      if (s.state === "alive" || s.state === "suspect") return true;
      // Recently dead nodes still get gossip (they may refute); left ones don't.
      return s.state === "dead" && s.stateChangeMs >= cutoff;
    });
    for (const peer of peers) {
      const msgs = this.#takeBroadcasts(compoundOverhead, this.#p.udpBufferSize - compoundOverhead);
      if (msgs.length === 0) return;
      const msg: SwimMessage<T> = msgs.length === 1 ? msgs[0]! : { type: "compound", parts: msgs };
      this.#sends.push({ to: peer.addr, msg });
    }
  }

  /** Send through the piggybacking path: add pending broadcasts that fit. */
  #sendPacket(to: string, msg: SwimMessage<T>): void {
    const avail = this.#p.udpBufferSize - this.#measure(msg) - compoundOverhead;
    const extra = this.#takeBroadcasts(partOverhead, avail);
    if (extra.length === 0) {
      this.#sends.push({ to, msg });
      return;
    }
    this.#sends.push({ to, msg: { type: "compound", parts: [msg, ...extra] } });
  }

  #takeBroadcasts(overheadBytes: number, limitBytes: number): SwimMessage<T>[] {
    const limit = retransmitLimit(this.#p.retransmitMult, this.numNodes);
    const { msgs: own, bytes: used } = this.#queue.takeSized({ overheadBytes, limitBytes, transmitLimit: limit });
    if (!this.#delegate) return own;
    const rest = limitBytes - used;
    if (rest <= overheadBytes + userMsgOverhead) return own;
    const user = this.#delegate.getBroadcasts(overheadBytes + userMsgOverhead, rest);
    if (user.length === 0) return own;
    return [...own, ...user.map((u): SwimMessage<T> => ({ type: "user", msg: u }))];
  }

  #broadcast(node: string, msg: SwimMessage<T>): number {
    return this.#queue.push(msg, { key: node, sizeBytes: this.#measure(msg) });
  }

  // ---------------------------------------------------------------------------
  // State transitions (memberlist aliveNode / suspectNode / deadNode / refute)

  #aliveNode(a: AliveMsg<T["meta"]>, bootstrap: boolean, quiet = false): void {
    const isLocal = a.node === this.name;
    if (this.#leaving && isLocal) return;
    if (a.vsn.length >= 3 && (a.vsn[0] === 0 || a.vsn[1] === 0 || a.vsn[0]! > a.vsn[1]!)) {
      this.#log.warn("ignoring alive with invalid protocol versions", { node: a.node, vsn: [...a.vsn] });
      return;
    }
    // An alive no newer than what we hold for the same address changes nothing (the check below
    // drops it too): skip the delegate's veto, which memberlist asks first. In a join storm most
    // alives a node receives are such repeats (every node resends each one retransmitLimit times).
    const known = isLocal ? undefined : this.#byName.get(a.node);
    if (known && known.addr === a.addr && a.incarnation <= known.incarnation) return;
    if (!bootstrap && !isLocal && this.#delegate?.vetoAlive) {
      const veto = this.#delegate.vetoAlive(a);
      if (veto) {
        this.#log.warn("ignoring alive message", { node: a.node, reason: veto });
        return;
      }
    }
    let state = this.#byName.get(a.node);
    let updatesNode = false;
    if (!state) {
      state = {
        name: a.node,
        addr: a.addr,
        meta: a.meta,
        vsn: a.vsn,
        incarnation: 0,
        state: "dead",
        stateChangeMs: this.#now,
      };
      this.#byName.set(a.node, state);
      // The list stays in name order (the probe rounds' order, see #nextProbeTarget).
      let lo = 0;
      let hi = this.#nodes.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#nodes[mid]!.name < a.node) lo = mid + 1;
        else hi = mid;
      }
      this.#nodes.splice(lo, 0, state);
    } else if (state.addr !== a.addr) {
      const canReclaim = this.#p.deadNodeReclaimMs > 0 && state.state === "dead" &&
        this.#now - state.stateChangeMs > this.#p.deadNodeReclaimMs;
      if (state.state === "left" || canReclaim) {
        updatesNode = true;
      } else {
        this.#log.error("conflicting address for node", { node: a.node, known: state.addr, other: a.addr });
        this.#events.push({ kind: "conflict", existing: snapshot(state), other: a });
        return;
      }
    }
    if (a.incarnation <= state.incarnation && !isLocal && !updatesNode) return;
    if (a.incarnation < state.incarnation && isLocal) return;
    this.#suspicions.delete(a.node);
    const oldState = state.state;
    const oldMeta = state.meta;
    if (!bootstrap && isLocal) {
      if (
        a.incarnation === state.incarnation && this.#metaEquals(a.meta, state.meta) &&
        sameVsn(a.vsn, this.#vsn)
      ) return;
      this.#refute(state, a.incarnation);
      this.#log.warn("refuting an alive message about us", { incarnation: a.incarnation });
    } else {
      if (!quiet) this.#broadcast(a.node, a);
      state.vsn = a.vsn;
      state.incarnation = a.incarnation;
      state.meta = a.meta;
      state.addr = a.addr;
      if (state.state !== "alive") {
        state.state = "alive";
        state.stateChangeMs = this.#now;
      }
    }
    if (oldState === "dead" || oldState === "left") {
      this.#events.push({ kind: "join", member: snapshot(state) });
    } else if (!this.#metaEquals(oldMeta, state.meta)) {
      this.#events.push({ kind: "update", member: snapshot(state) });
    }
  }

  #suspectNode(s: SuspectMsg): void {
    const state = this.#byName.get(s.node);
    if (!state) return;
    if (s.incarnation < state.incarnation) return;
    const timer = this.#suspicions.get(s.node);
    if (timer) {
      if (timer.confirm(s.from)) this.#broadcast(s.node, s);
      return;
    }
    if (state.state !== "alive") return;
    if (state.name === this.name) {
      this.#refute(state, s.incarnation);
      this.#log.warn("refuting a suspect message", { from: s.from });
      return;
    }
    this.#broadcast(s.node, s);
    state.incarnation = s.incarnation;
    state.state = "suspect";
    state.stateChangeMs = this.#now;
    const n = this.numNodes;
    const minMs = suspicionTimeoutMs(n, this.#p);
    this.#suspicions.set(s.node, new Suspicion({
      from: s.from,
      k: expectedConfirmations(this.#p.suspicionMult, n),
      minMs,
      maxMs: this.#p.suspicionMaxTimeoutMult * minMs,
      startMs: this.#now,
    }));
  }

  #deadNode(d: DeadMsg): void {
    const state = this.#byName.get(d.node);
    if (!state) return;
    if (d.incarnation < state.incarnation) return;
    this.#suspicions.delete(d.node);
    if (state.state === "dead" || state.state === "left") return;
    if (state.name === this.name) {
      if (!this.#leaving) {
        this.#refute(state, d.incarnation);
        this.#log.warn("refuting a dead message", { from: d.from });
        return;
      }
      const id = this.#broadcast(d.node, d);
      if (this.#leave) this.#leave.broadcastId = id;
    } else {
      this.#broadcast(d.node, d);
      // Pass the news on now rather than at the next gossip tick (memberlist waits for it): a
      // death reaches everyone in a few network round trips instead of a few gossip intervals.
      // Deaths are rare, and the message goes out no more often than the transmit limit allows.
      this.#gossipNow = true;
    }
    state.incarnation = d.incarnation;
    state.state = d.node === d.from ? "left" : "dead";
    state.stateChangeMs = this.#now;
    this.#events.push({ kind: "leave", member: snapshot(state) });
  }

  #refute(me: NodeState<T["meta"]>, accusedInc: number): void {
    let inc = this.#nextIncarnation();
    if (accusedInc >= inc) {
      this.#incarnation = accusedInc + 1;
      inc = this.#incarnation;
    }
    me.incarnation = inc;
    this.#awareness.applyDelta(1);
    this.#broadcast(me.name, {
      type: "alive",
      node: me.name,
      addr: me.addr,
      incarnation: inc,
      meta: me.meta,
      vsn: this.#vsn,
    });
  }

  #setMeta(meta: T["meta"]): void {
    const me = this.#byName.get(this.name);
    if (!me) return;
    this.#aliveNode({
      type: "alive",
      node: this.name,
      addr: this.addr,
      incarnation: this.#nextIncarnation(),
      meta,
      vsn: this.#vsn,
    }, true);
  }

  // ---------------------------------------------------------------------------
  // Leave

  #startLeave(timeoutMs: number): void {
    if (this.#leaving) return;
    this.#leaving = true;
    const me = this.#byName.get(this.name);
    if (!me) return;
    this.#leave = { broadcastId: 0, deadlineMs: this.#now + timeoutMs };
    this.#deadNode({ type: "dead", node: this.name, incarnation: me.incarnation, from: this.name });
    const anyAlive = this.#nodes.some((s) => s.name !== this.name && s.state !== "dead" && s.state !== "left");
    if (!anyAlive) {
      this.#leave = undefined;
      this.#events.push({ kind: "leaveDone" });
    }
  }

  #checkLeave(): void {
    const l = this.#leave;
    if (!l) return;
    if (!this.#queue.has(l.broadcastId) || this.#now >= l.deadlineMs) {
      if (this.#queue.has(l.broadcastId)) this.#log.warn("timeout waiting for leave broadcast");
      this.#leave = undefined;
      this.#events.push({ kind: "leaveDone" });
    }
  }

  // ---------------------------------------------------------------------------
  // Helpers

  #kRandomNodes(k: number, accept: (s: NodeState<T["meta"]>) => boolean): NodeState<T["meta"]>[] {
    // memberlist kRandomNodes: up to 3n random draws, no duplicates.
    const n = this.#nodes.length;
    const out: NodeState<T["meta"]>[] = [];
    for (let i = 0; i < 3 * n && out.length < k; i++) {
      const s = this.#nodes[this.#rng.int(n)]!;
      if (!accept(s) || out.includes(s)) continue;
      out.push(s);
    }
    return out;
  }

  #nextSeqNo(): number {
    this.#seqNo = (this.#seqNo + 1) >>> 0;
    return this.#seqNo;
  }

  #nextIncarnation(): number {
    this.#incarnation = (this.#incarnation + 1) >>> 0;
    return this.#incarnation;
  }

  #nextRequestId(): number {
    return ++this.#requestId;
  }
}

/**
 * memberlist verifyProtocol: the protocol and delegate ranges common to every
 * alive node on both sides must contain every node's current versions.
 * Returns the error text (the join fails) or undefined.
 */
export function verifyProtocol(
  remote: readonly { name: string; state: NodeStateName; vsn: readonly number[] }[],
  local: readonly { name: string; state: NodeStateName; vsn: readonly number[] }[],
): string | undefined {
  let maxPMin = 0, minPMax = 255, maxDMin = 0, minDMax = 255;
  const widen = (v: readonly number[]) => {
    maxPMin = Math.max(maxPMin, v[0] ?? 0);
    minPMax = Math.min(minPMax, v[1] ?? 0);
    maxDMin = Math.max(maxDMin, v[3] ?? 0);
    minDMax = Math.min(minDMax, v[4] ?? 0);
  };
  for (const n of remote) if (n.state === "alive" && n.vsn.length > 0) widen(n.vsn);
  for (const n of local) if (n.state === "alive" && n.vsn.length > 0) widen(n.vsn);
  for (const n of [...remote, ...local]) {
    const pCur = n.vsn[2] ?? 0;
    const dCur = n.vsn[5] ?? 0;
    if (pCur < maxPMin || pCur > minPMax) {
      return `Node "${n.name}" protocol version (${pCur}) is incompatible: [${maxPMin}, ${minPMax}]`;
    }
    if (dCur < maxDMin || dCur > minDMax) {
      return `Node "${n.name}" delegate protocol version (${dCur}) is incompatible: [${maxDMin}, ${minDMax}]`;
    }
  }
  return undefined;
}

/** A ticker's next tick after `now`: late ticks are dropped, the phase is kept (Go's time.Ticker). */
export function nextTick(dueMs: number, periodMs: number, now: number): number {
  return dueMs + periodMs * (Math.floor((now - dueMs) / periodMs) + 1);
}

/** memberlist pushPullScale: x1 up to 32 nodes, then +1 per doubling. */
export function pushPullScaleMs(intervalMs: number, n: number): number {
  const threshold = 32;
  if (n <= threshold) return intervalMs;
  const multiplier = Math.ceil(Math.log2(n) - Math.log2(threshold)) + 1;
  return intervalMs * multiplier;
}

function snapshot<Meta>(s: NodeState<Meta>): SwimMember<Meta> {
  return Object.freeze({
    name: s.name,
    addr: s.addr,
    meta: s.meta,
    vsn: s.vsn,
    incarnation: s.incarnation,
    state: s.state,
    stateChangeMs: s.stateChangeMs,
  });
}

function sameVsn(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Deep equality for plain data (bytes, arrays, records, Maps, primitives). */
export function structuralEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    return a.length === b.length && a.every((v, i) => v === b[i]);
  }
  if (a instanceof Map && b instanceof Map) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !structuralEquals(v, b.get(k))) return false;
    return true;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => structuralEquals(v, b[i]));
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a as object);
    const kb = Object.keys(b as object);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => structuralEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return false;
}

/** A rough encoded-size estimate (msgpack-like) for packing without a codec. */
export function estimateSize(v: unknown): number {
  if (typeof v === "object" && v !== null && "type" in v) {
    // Fast paths for the per-probe messages.
    const m = v as SwimMessage<GossipTypes>;
    switch (m.type) {
      case "ping":
      case "indirectPing":
        return 60 + m.node.length + (m.sourceNode?.length ?? 0);
      case "ack":
        return m.payload === undefined ? 20 : 150;
      case "nack":
        return 15;
    }
  }
  if (v === null || v === undefined || typeof v === "boolean") return 1;
  if (typeof v === "number") return 5;
  if (typeof v === "string") return v.length + 2;
  if (v instanceof Uint8Array) return v.length + 2;
  if (v instanceof Map) {
    let n = 3;
    for (const [k, x] of v) n += estimateSize(k) + estimateSize(x);
    return n;
  }
  if (Array.isArray(v)) {
    let n = 3;
    for (const x of v) n += estimateSize(x);
    return n;
  }
  if (typeof v === "object") {
    let n = 3;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (k === "type") continue;
      n += k.length + 1 + estimateSize(x);
    }
    return n;
  }
  return 1;
}
