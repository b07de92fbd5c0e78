// A whole LAN pool of real Serf + memberlist cores on the simulated network
// (SimClock, SimNetwork with loss), for measuring how gossip scales
// (issue #24): the time a join, a failure and a leave take to reach every
// member, false failures under packet loss, and the bytes each member sends
// per second. Deterministic: one seed replays a run exactly. Used by
// scripts/bench/gossip-sim.ts (the table across pool sizes) and
// sim_pool_test.ts (a small pool, with bounds that can fail).
//
// The cost of a run is the cores' own: every member keeps every other
// member (n² state), so memory, not time, bounds the pool size. What the sim
// adds is kept O(1) per message: a member's view of the pool is counted from
// its member events, not by asking all n members about all n members.

import { createLogger } from "../log/mod.ts";
import type { LogSink } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { GossipDriver, identityCodec } from "./driver.ts";
import type { GossipCodec, GossipTransport } from "./driver.ts";
import { consulSerfTimings, lanProfile } from "./profiles.ts";
import type { GossipProfile, SerfTimings } from "./profiles.ts";
import { SerfCore } from "./serf.ts";
import type { SerfEvent, SerfInput, SerfTypes, Tags } from "./serf.ts";
import { pushPullScaleMs } from "./swim.ts";
import type { SwimMessage } from "./swim.ts";
import { simTransport } from "./sim_transport.ts";
import type { SimEnvelope } from "./sim_transport.ts";
import { serfWireCodec } from "./wire/codec.ts";

type M = SwimMessage<SerfTypes>;

export interface PoolSimOptions {
  /** Members in the pool (the joiner measured later is one more). */
  n: number;
  seed: number;
  /** UDP packet loss, 0..1 (TCP is reliable, as in the other sims). */
  loss: number;
  /** One-way delay range, virtual ms. */
  delayMs?: [number, number];
  profile?: GossipProfile;
  timings?: SerfTimings;
  /**
   * Virtual seconds of steady gossip over which bytes and false failures are
   * counted. Default: one push/pull interval as scaled for n, so that every
   * member does exactly one push/pull in the window whatever its phase
   * (the members' push/pulls are not spread evenly: a shorter window over- or
   * under-counts them).
   */
  steadySeconds?: number;
  /** Virtual ms allowed for each phase before it counts as not reached. */
  phaseLimitMs?: number;
  /** Called with a line of progress (bootstrap is long at 10,000 members). */
  progress?: (line: string) => void;
}

export interface PoolSimResult {
  n: number;
  seed: number;
  loss: number;
  /** Virtual ms from the start of the join storm to every member seeing every member. */
  bootstrapMs: number;
  /** Virtual ms from a new member's join to every member listing it alive. */
  joinMs: number;
  /** Virtual ms from a process crash to the first member declaring it failed. */
  detectMs: number;
  /** Virtual ms from a process crash to every other member listing it failed. */
  failMs: number;
  /** Virtual ms from a graceful leave to every other member listing it left. */
  leaveMs: number;
  /** "failed" member events about members that were alive, over the steady window (all members). */
  falseFailures: number;
  /** Suspicions raised about live members over the window (refuted before a timeout unless a false failure). */
  suspicions: number;
  /** Length of the steady window, virtual seconds. */
  steadySeconds: number;
  /** Wire bytes (uncompressed, as on cairn's LAN pool) each member sent per second, UDP + TCP, steady state. */
  bytesPerNodeSec: number;
  /** Of bytesPerNodeSec, what went over TCP (push/pull state exchanges, n members' state each). */
  streamBytesPerNodeSec: number;
  /** Datagrams each member sent per second, steady state. */
  packetsPerNodeSec: number;
  /** Wall-clock ms the run took, and the JS heap at its end (MiB). */
  wallMs: number;
  heapMiB: number;
}

/** Consul-like tags (the sizes decide how many alives fit a packet). */
function consulTags(i: number): Tags {
  return {
    role: "node", dc: "dc1", segment: "", id: `0123abcd-4567-89ef-0123-${String(i).padStart(12, "0")}`,
    vsn: "2", vsn_min: "2", vsn_max: "3", build: "0.1.0:0123abcd",
  };
}

interface PoolMember {
  name: string;
  addr: string;
  serf: SerfCore;
  driver: GossipDriver<SerfTypes, SerfInput, SerfEvent, unknown>;
  /** Members this one lists alive (itself included), counted from its member events. */
  aliveKnown: number;
}

/** What a watched name's events have reached: how many members emitted each event type for it. */
interface Watch {
  name: string;
  type: "join" | "failed" | "leave";
  seen: Set<string>;
  firstAt: number;
}

export class PoolSim {
  readonly clock = new SimClock();
  readonly rng: Rng;
  readonly udp: SimNetwork<SimEnvelope<unknown>>;
  readonly tcp: SimNetwork<SimEnvelope<unknown>>;
  readonly members: PoolMember[] = [];
  readonly #byName = new Map<string, PoolMember>();
  readonly #o: Required<Omit<PoolSimOptions, "progress">> & Pick<PoolSimOptions, "progress">;
  readonly #measure: (msg: M) => number;
  #watches: Watch[] = [];
  /** Counting window for traffic and false failures. */
  #counting = false;
  bytes = 0;
  streamBytes = 0;
  readonly byKind = new Map<string, number>();
  packets = 0;
  falseFailures = 0;
  suspicions = 0;
  readonly #down = new Set<string>();
  /** Counts suspicions raised by failed probes; every other record is dropped. */
  readonly #sink: LogSink = {
    write: (r) => {
      if (r.message.startsWith("suspect node, probe failed")) this.#suspected++;
    },
  };
  #suspected = 0;

  constructor(o: PoolSimOptions) {
    this.#o = {
      delayMs: [1, 10], profile: lanProfile, timings: consulSerfTimings, phaseLimitMs: 300_000, ...o,
      steadySeconds: o.steadySeconds ?? pushPullScaleMs((o.profile ?? lanProfile).pushPullIntervalMs, o.n) / 1000,
    };
    this.rng = new Rng(o.seed);
    this.udp = new SimNetwork<SimEnvelope<unknown>>(this.clock, this.rng.fork(), { delayMs: this.#o.delayMs, loss: o.loss });
    this.tcp = new SimNetwork<SimEnvelope<unknown>>(this.clock, this.rng.fork(), { delayMs: this.#o.delayMs });
    this.#measure = serfWireCodec({ compress: false }).measure;
  }

  addrOf(i: number): string {
    return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:7946`;
  }

  /** Start member i (not yet joined). */
  start(i: number): PoolMember {
    const name = `n${i}`;
    const addr = this.addrOf(i);
    const logger = createLogger({ sink: this.#sink, level: "info", name, now: () => this.clock.now() });
    const serf = new SerfCore({
      name, addr, tags: consulTags(i), profile: this.#o.profile, timings: this.#o.timings,
      rng: this.rng.fork(), logger, now: this.clock.now(), measure: this.#measure,
    });
    const m: PoolMember = { name, addr, serf, aliveKnown: 0, driver: undefined! };
    m.driver = new GossipDriver<SerfTypes, SerfInput, SerfEvent, unknown>({
      core: serf,
      clock: this.clock,
      transport: this.#counted(simTransport<unknown>(this.clock, this.udp, this.tcp, addr)),
      codec: identityCodec<SerfTypes>() as GossipCodec<SerfTypes, unknown>,
      logger,
      onEvent: (e) => this.#onEvent(m, e),
    });
    this.members.push(m);
    this.#byName.set(name, m);
    m.driver.start();
    return m;
  }

  #counted(t: GossipTransport<unknown>): GossipTransport<unknown> {
    return {
      localAddr: t.localAddr,
      sendPacket: (to, p) => {
        if (this.#counting) {
          this.packets++;
          const b = this.#measure(p as M);
          this.bytes += b;
          const k = kindOf(p as M);
          this.byKind.set(k, (this.byKind.get(k) ?? 0) + b);
        }
        t.sendPacket(to, p);
      },
      sendStream: (to, p, opts, onResult) => {
        if (this.#counting) {
          const b = this.#measure(p as M);
          this.bytes += b;
          this.streamBytes += b;
        }
        t.sendStream(to, p, opts, onResult);
      },
      listen: (h) => t.listen(h),
      close: () => t.close(),
    };
  }

  #onEvent(m: PoolMember, e: SerfEvent): void {
    // A member that has left shuts down, as an agent does after `leave`.
    if (e.kind === "leaveDone") this.clock.setTimer(0, () => m.driver.stop());
    if (e.kind !== "member") return;
    for (const x of e.members) {
      if (e.type === "join") m.aliveKnown++;
      else if (e.type === "failed" || e.type === "leave") m.aliveKnown--;
      if (e.type === "failed" && this.#counting && !this.#down.has(x.name)) this.falseFailures++;
      for (const w of this.#watches) {
        if (w.name === x.name && w.type === e.type && !w.seen.has(m.name)) {
          if (w.seen.size === 0) w.firstAt = this.clock.now();
          w.seen.add(m.name);
        }
      }
    }
  }

  live(): PoolMember[] {
    return this.members.filter((m) => m.driver.isRunning);
  }

  /** Every live member lists every live member alive (by the event counts; O(n)). */
  converged(): boolean {
    const live = this.live();
    return live.every((m) => m.aliveKnown === live.length);
  }

  /** Advance in steps of stepMs until pred holds; the virtual ms taken, or NaN past the limit. */
  runUntil(pred: () => boolean, stepMs = 20, limitMs = this.#o.phaseLimitMs): number {
    const t0 = this.clock.now();
    while (!pred()) {
      if (this.clock.now() - t0 >= limitMs) return Number.NaN;
      this.clock.advance(stepMs);
    }
    return this.clock.now() - t0;
  }

  #watch(name: string, type: Watch["type"]): Watch {
    const w: Watch = { name, type, seen: new Set(), firstAt: Number.NaN };
    this.#watches.push(w);
    return w;
  }

  /** Bootstrap, steady window, then a join, a crash and a leave, one after the other. */
  run(): PoolSimResult {
    const wall0 = performance.now();
    const { n } = this.#o;
    const say = this.#o.progress ?? (() => {});
    for (let i = 0; i < n; i++) this.start(i);
    this.clock.advance(1_000);
    // Each member joins a random earlier one, in waves of 500 a second (a fleet
    // brought up over a few seconds), so no single member takes n joins at once.
    const t0 = this.clock.now();
    for (let i = 1; i < n; i++) {
      const target = this.rng.int(i);
      const member = this.members[i]!;
      this.clock.setTimer(Math.floor(i / 500) * 1_000, () => member.driver.input({ kind: "join", addrs: [this.addrOf(target)] }));
    }
    const bootstrapMs = this.runUntil(() => this.converged(), 100, Math.max(this.#o.phaseLimitMs, n * 100));
    // Steady state starts once the bootstrap's broadcasts have all been sent
    // their retransmit limit (n alives, each ~4·log10(n) times).
    const drainMs = this.runUntil(() => this.members.every((m) => m.serf.swim.queuedBroadcasts === 0), 1_000, Math.max(this.#o.phaseLimitMs, n * 200));
    say(`n=${n}: bootstrap ${bootstrapMs} virtual ms, queues drained ${drainMs} ms later, wall ${((performance.now() - wall0) / 1000).toFixed(1)} s`);
    this.clock.advance(5_000);

    // Steady window: traffic and false failures (every member alive, UDP losing packets).
    const suspect0 = this.#suspicionCount();
    this.#counting = true;
    this.clock.advance(this.#o.steadySeconds * 1_000);
    this.#counting = false;
    const suspicions = this.#suspicionCount() - suspect0;
    const bytesPerNodeSec = this.bytes / n / this.#o.steadySeconds;
    const streamBytesPerNodeSec = this.streamBytes / n / this.#o.steadySeconds;
    const packetsPerNodeSec = this.packets / n / this.#o.steadySeconds;
    say(`n=${n}: steady window done, wall ${((performance.now() - wall0) / 1000).toFixed(1)} s`);

    // A join: one new member joins a random one; until every member lists it.
    const wj = this.#watch(`n${n}`, "join");
    const joiner = this.start(n);
    joiner.driver.input({ kind: "join", addrs: [this.addrOf(this.rng.int(n))] });
    const joinMs = this.runUntil(() => wj.seen.size === this.live().length);
    this.clock.advance(5_000);

    // A crash (the process is killed; its host refuses the TCP fallback).
    const victim = this.members[1 + this.rng.int(n - 1)]!;
    const wf = this.#watch(victim.name, "failed");
    const tf = this.clock.now();
    this.#down.add(victim.name);
    this.tcp.refuseWhenDetached(victim.addr, true);
    victim.driver.stop();
    const failMs = this.runUntil(() => wf.seen.size === this.live().length);
    const detectMs = wf.firstAt - tf;
    this.clock.advance(5_000);

    // A graceful leave.
    let leaver = victim;
    while (leaver === victim) leaver = this.members[1 + this.rng.int(n - 1)]!;
    const wl = this.#watch(leaver.name, "leave");
    this.#down.add(leaver.name);
    leaver.driver.input({ kind: "leave" });
    const others = this.live().length - 1;
    const leaveMs = this.runUntil(() => wl.seen.size >= others);
    say(`n=${n}: done, wall ${((performance.now() - wall0) / 1000).toFixed(1)} s`);

    return {
      n, seed: this.#o.seed, loss: this.#o.loss, bootstrapMs, joinMs, detectMs, failMs, leaveMs,
      falseFailures: this.falseFailures, suspicions, steadySeconds: this.#o.steadySeconds, bytesPerNodeSec, streamBytesPerNodeSec, packetsPerNodeSec,
      wallMs: performance.now() - wall0, heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
    };
  }

  #suspicionCount(): number {
    return this.#suspected;
  }
}

function kindOf(m: M): string {
  if (m.type === "compound") return m.parts.map(kindOf).join("+");
  if (m.type === "user") return `user:${m.msg.type}`;
  return m.type;
}
