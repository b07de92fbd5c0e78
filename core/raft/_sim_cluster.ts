// Deterministic simulation of a Raft cluster: real RaftCore + RaftNode
// drivers on a SimClock, a SimNetwork with faults, and in-memory stores that
// lose unsynced writes on crash. A seeded chaos schedule partitions, isolates,
// crashes, restarts and transfers leadership while a client writes and reads;
// invariants are checked as the run goes and at the end.
import { createLogger, CaptureSink } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import { createRaftNode, RaftNode } from "./driver.ts";
import { MemoryLogStore } from "./log_store_memory.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import { MemoryStableStore } from "./stable_store_memory.ts";
import { SimRaftTransport } from "./transport_sim.ts";
import type { Fsm, RaftMessage } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

export class SimFsm implements Fsm {
  /** Every applied command, in order: the state is the history. */
  state: [number, string][] = [];
  onApply: (index: number, data: string) => void = () => {};

  apply(index: number, data: Uint8Array): unknown {
    const s = dec.decode(data);
    const last = this.state.at(-1)?.[0] ?? 0;
    if (index <= last) throw new Error(`Fsm applied index ${index} after ${last}`);
    this.state.push([index, s]);
    this.onApply(index, s);
    return s.length;
  }

  snapshot(): Uint8Array {
    return enc.encode(JSON.stringify(this.state));
  }

  restore(data: Uint8Array): void {
    this.state = JSON.parse(dec.decode(data)) as [number, string][];
  }

  has(index: number, data: string): boolean {
    // State is sorted by index: binary search.
    let lo = 0;
    let hi = this.state.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const [i, d] = this.state[mid]!;
      if (i === index) return d === data;
      if (i < index) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }

  lastIndex(): number {
    return this.state.at(-1)?.[0] ?? 0;
  }
}

export interface SimServer {
  id: string;
  log: MemoryLogStore;
  stable: MemoryStableStore;
  snaps: MemorySnapshotStore;
  fsm: SimFsm;
  node: RaftNode | undefined;
  transport: SimRaftTransport | undefined;
  crashed: boolean;
}

export interface ClusterOptions {
  seed: number;
  servers: number;
  /** Servers beyond this many start outside the configuration (added later). Default: all. */
  initialVoters?: number;
  chaosMs?: number;
  snapshotThreshold?: number;
  trailingLogs?: number;
  electionTicks?: number;
  heartbeatTicks?: number;
}

export class SimCluster {
  readonly seed: number;
  readonly rng: Rng;
  readonly clock = new SimClock();
  readonly net: SimNetwork<Uint8Array | RaftMessage>;
  readonly servers: SimServer[] = [];
  readonly sink = new CaptureSink();
  readonly violations: string[] = [];
  /** term → leader id, sampled after every event. */
  readonly leaders = new Map<number, string>();
  /** index → command applied there, by anyone. */
  readonly appliedAt = new Map<number, string>();
  readonly acked: { index: number; data: string }[] = [];
  reads = { ok: 0, failed: 0 };
  writes = { sent: 0, acked: 0, failed: 0 };
  #o: ClusterOptions;
  #writeSeq = 0;
  #stormLimit = 300_000;
  #maxAckedIndex = 0;
  #maxAckedData = "";

  constructor(o: ClusterOptions) {
    this.#o = o;
    this.seed = o.seed;
    this.rng = new Rng(o.seed);
    this.net = new SimNetwork<Uint8Array | RaftMessage>(this.clock, this.rng.fork(), { delayMs: [1, 10] });
  }

  async start(): Promise<void> {
    const n = this.#o.servers;
    const voters = this.#o.initialVoters ?? n;
    for (let i = 1; i <= n; i++) {
      const id = `s${i}`;
      const syncRng = this.rng.fork();
      const syncDelay = (): Promise<void> =>
        new Promise((resolve) => this.clock.setTimer(syncRng.range(0, 3), resolve));
      this.servers.push({
        id,
        log: new MemoryLogStore({ syncDelay }),
        stable: new MemoryStableStore({ syncDelay }),
        snaps: new MemorySnapshotStore(),
        fsm: new SimFsm(),
        node: undefined,
        transport: undefined,
        crashed: false,
      });
    }
    const peers = this.servers.slice(0, voters).map((s) => ({ id: s.id, address: s.id }));
    for (const s of this.servers) await this.#boot(s, this.servers.indexOf(s) < voters ? peers : []);
  }

  async #boot(s: SimServer, peers: { id: string; address: string }[]): Promise<void> {
    s.fsm = new SimFsm();
    s.fsm.onApply = (index, data) => this.#onApply(s, index, data);
    s.transport = new SimRaftTransport(this.net, s.id, { encode: this.seed % 10 === 0 });
    const logger = createLogger({ sink: this.sink, level: "warn", name: s.id, now: () => this.clock.now() });
    s.node = await createRaftNode({
      id: s.id,
      address: s.id,
      peers,
      fsm: s.fsm,
      logStore: s.log,
      stableStore: s.stable,
      snapshotStore: s.snaps,
      transport: s.transport,
      clock: this.clock,
      rng: this.rng.fork(),
      logger,
      tickMs: 10,
      electionTicks: this.#o.electionTicks ?? 10,
      heartbeatTicks: this.#o.heartbeatTicks ?? 2,
      snapshotThreshold: this.#o.snapshotThreshold ?? 40,
      raft: { trailingLogs: this.#o.trailingLogs ?? 10, maxInflight: 8, maxEntriesPerMsg: 16, snapshotChunkBytes: 512 },
    });
    s.crashed = false;
  }

  #onApply(s: SimServer, index: number, data: string): void {
    const prev = this.appliedAt.get(index);
    if (prev === undefined) this.appliedAt.set(index, data);
    else if (prev !== data) this.#violate(`state machine safety: ${s.id} applied ${JSON.stringify(data)} at ${index}, another server applied ${JSON.stringify(prev)}`);
  }

  #violate(what: string): void {
    if (this.violations.length < 20) this.violations.push(`t=${this.clock.now()} ${what}`);
  }

  live(): SimServer[] {
    return this.servers.filter((s) => !s.crashed && s.node && !s.node.stopped);
  }

  leader(): SimServer | undefined {
    let best: SimServer | undefined;
    for (const s of this.live()) {
      if (s.node!.isLeader() && (!best || s.node!.core.term > best.node!.core.term)) best = s;
    }
    return best;
  }

  /** Election safety: at most one leader per term, ever. Also flags message storms. */
  sample(): void {
    if (this.net.stats.sent > this.#stormLimit) {
      this.#violate(`message storm: ${this.net.stats.sent} messages sent`);
      this.#stormLimit = Infinity;
    }
    for (const s of this.live()) {
      const c = s.node!.core;
      if (c.role !== "leader") continue;
      const seen = this.leaders.get(c.term);
      if (seen === undefined) this.leaders.set(c.term, s.id);
      else if (seen !== s.id) this.#violate(`election safety: ${seen} and ${s.id} both led term ${c.term}`);
    }
  }

  async crash(s: SimServer): Promise<void> {
    if (s.crashed || !s.node) return;
    void s.node.stop();
    s.log.crash();
    s.stable.crash();
    await s.transport?.close();
    s.crashed = true;
  }

  async restart(s: SimServer): Promise<void> {
    if (!s.crashed) return;
    const voters = this.#o.initialVoters ?? this.#o.servers;
    const idx = this.servers.indexOf(s);
    const peers = idx < voters ? this.servers.slice(0, voters).map((x) => ({ id: x.id, address: x.id })) : [];
    await this.#boot(s, peers);
  }

  write(): void {
    const l = this.leader();
    if (!l) return;
    const data = `w${++this.#writeSeq}`;
    this.writes.sent++;
    l.node!.apply(enc.encode(data)).then(
      ({ index }) => {
        this.writes.acked++;
        this.acked.push({ index, data });
        if (index > this.#maxAckedIndex) {
          this.#maxAckedIndex = index;
          this.#maxAckedData = data;
        }
      },
      () => {
        this.writes.failed++;
      },
    );
  }

  /** A `?consistent` read: it must see every write acknowledged before it began. */
  read(s: SimServer, allowLease: boolean): void {
    if (!s.node || s.crashed) return;
    const mustSee = this.#maxAckedIndex;
    const mustData = this.#maxAckedData;
    const node = s.node;
    const fsm = s.fsm;
    node.readBarrier({ allowLease }).then(
      () => {
        this.reads.ok++;
        if (mustSee > 0 && !fsm.has(mustSee, mustData)) {
          this.#violate(`stale read on ${s.id} (lease=${allowLease}): write ${mustData}@${mustSee} acknowledged before the read is not applied (applied ${fsm.lastIndex()})`);
        }
      },
      () => {
        this.reads.failed++;
      },
    );
  }

  /** Log matching over the in-memory logs of live servers: same (index, term) → same entry and same prefix. */
  checkLogs(): void {
    const live = this.live();
    for (let a = 0; a < live.length; a++) {
      for (let b = a + 1; b < live.length; b++) {
        const ca = live[a]!.node!.core;
        const cb = live[b]!.node!.core;
        const lo = Math.max(ca.compactedIndex, cb.compactedIndex) + 1;
        const hi = Math.min(ca.lastIndex, cb.lastIndex);
        // Find the highest index where terms agree; everything up to it must be identical.
        let top = 0;
        for (let i = hi; i >= lo; i--) {
          if (ca.termAt(i) === cb.termAt(i)) {
            top = i;
            break;
          }
        }
        if (top === 0) continue;
        const ea = ca.entriesFrom(lo, top + 1);
        const eb = cb.entriesFrom(lo, top + 1);
        for (let k = 0; k < ea.length; k++) {
          const x = ea[k]!;
          const y = eb[k]!;
          if (x.term !== y.term || x.type !== y.type || dec.decode(x.data) !== dec.decode(y.data)) {
            this.#violate(`log matching: ${live[a]!.id} and ${live[b]!.id} agree at ${top} but differ at ${x.index}`);
            return;
          }
        }
      }
    }
  }

  /** Leader completeness + no acknowledged write lost: every acked write is applied on every live server. */
  checkAcked(): void {
    for (const s of this.members()) {
      for (const w of this.acked) {
        if (!s.fsm.has(w.index, w.data)) {
          this.#violate(`acknowledged write ${w.data}@${w.index} missing on ${s.id} (applied up to ${s.fsm.lastIndex()})`);
          return;
        }
      }
    }
  }

  converged(): boolean {
    const l = this.leader();
    if (!l) return false;
    const c = l.node!.core;
    if (c.commitIndex !== c.lastIndex || c.termAt(c.commitIndex) !== c.term) return false;
    return this.members().every((s) => s.node!.appliedIndex() === c.commitIndex && s.node!.core.lastIndex === c.lastIndex);
  }

  /** Live servers in the leader's configuration (a removed server may stay behind forever). */
  members(): SimServer[] {
    const l = this.leader();
    if (!l) return this.live();
    const ids = new Set(l.node!.configuration().servers.map((s) => s.id));
    return this.live().filter((s) => ids.has(s.id));
  }

  /** Run `ms` of virtual time, sampling invariants after every event. */
  async run(ms: number): Promise<void> {
    await this.clock.runUntil(() => {
      this.sample();
      return this.violations.length > 0;
    }, { maxMs: ms }).catch(() => {});
  }

  async runUntilConverged(maxMs: number): Promise<boolean> {
    try {
      await this.clock.runUntil(() => {
        this.sample();
        return this.converged() || this.violations.length > 0;
      }, { maxMs });
      return this.violations.length === 0;
    } catch {
      return false;
    }
  }

  async stopAll(): Promise<void> {
    for (const s of this.servers) if (s.node && !s.crashed) void s.node.stop();
  }

  describe(): string {
    const lines = [`seed=${this.seed} writes=${JSON.stringify(this.writes)} reads=${JSON.stringify(this.reads)} net=${JSON.stringify(this.net.stats)}`];
    for (const s of this.servers) {
      const c = s.node?.core;
      lines.push(`  ${s.id}: ${s.crashed ? "crashed" : `${c?.role} term=${c?.term} commit=${c?.commitIndex} last=${c?.lastIndex} applied=${s.node?.appliedIndex()} compacted=${c?.compactedIndex}`}`);
    }
    return lines.join("\n");
  }
}

/**
 * One seeded scenario: a chaos phase with faults and a client, then heal,
 * restart everyone, converge, and check. Returns failure text or undefined.
 */
export async function runScenario(o: ClusterOptions & { membership?: boolean }): Promise<{ error?: string; cluster: SimCluster }> {
  // Vary compaction per seed: tiny thresholds force InstallSnapshot often.
  const p = new Rng(o.seed ^ 0x5eed5eed);
  o = {
    ...o,
    snapshotThreshold: o.snapshotThreshold ?? p.pick([5, 40, 40, 200]),
    trailingLogs: o.trailingLogs ?? p.pick([0, 10, 10, 50]),
    electionTicks: o.electionTicks ?? p.pick([5, 10, 10, 20]),
    heartbeatTicks: o.heartbeatTicks ?? p.pick([1, 2, 2, 3]),
  };
  const c = new SimCluster(o);
  await c.start();
  const r = c.rng;
  c.net.setDefaults({
    loss: r.chance(0.5) ? r.float() * 0.1 : 0,
    delayMs: [1, r.range(2, 20)],
    duplicate: r.chance(0.3) ? 0.05 : 0,
  });
  const chaosMs = o.chaosMs ?? 1_500;
  const end = c.clock.now() + chaosMs;
  let nextAdd = (o.initialVoters ?? o.servers);
  // Client: a write every ~8 ms, a read every ~40 ms.
  const client = (): void => {
    if (c.clock.now() >= end) return;
    c.write();
    if (r.chance(0.2)) {
      const s = r.chance(0.5) ? c.leader() : r.pick(c.servers);
      if (s) c.read(s, r.chance(0.5));
    }
    c.clock.setTimer(r.range(1, 16), client);
  };
  c.clock.setTimer(50, client);
  // Chaos: one fault every ~100–300 ms.
  const chaos = (): void => {
    if (c.clock.now() >= end) return;
    const ids = c.servers.map((s) => s.id);
    const roll = r.int(10);
    if (roll === 0) {
      const a = r.shuffle(ids.slice());
      const cut = r.range(1, ids.length - 1);
      c.net.partition(a.slice(0, cut), a.slice(cut));
    } else if (roll === 1) {
      const l = c.leader();
      if (l) c.net.isolate(l.id);
    } else if (roll === 2 || roll === 3) {
      c.net.heal();
    } else if (roll === 4) {
      const live = c.live();
      if (live.length > Math.floor(c.servers.length / 2) + 1) void c.crash(r.pick(live));
    } else if (roll === 5) {
      const dead = c.servers.filter((s) => s.crashed);
      if (dead.length > 0) void c.restart(r.pick(dead));
    } else if (roll === 6) {
      c.leader()?.node!.transferLeadership();
    } else if (roll === 7 && o.membership) {
      const l = c.leader();
      const nonvoters = l ? l.node!.configuration().servers.filter((x) => x.suffrage === "nonvoter") : [];
      if (l && nonvoters.length > 0 && r.chance(0.5)) {
        // Autopilot's promotion: the same server again, now as a voter.
        const s = r.pick(nonvoters);
        l.node!.addVoter(s.id, s.address).then(() => {}, () => {});
      } else if (l && nextAdd < c.servers.length) {
        // Half join as voters, half as non-voters (promoted later, as autopilot adds servers).
        const s = c.servers[nextAdd]!;
        const add = r.chance(0.5) ? l.node!.addNonvoter(s.id, s.id) : l.node!.addVoter(s.id, s.id);
        add.then(() => {}, () => {});
        nextAdd++;
      } else if (l && r.chance(0.3)) {
        const voters = l.node!.configuration().servers.filter((x) => x.suffrage === "voter");
        if (voters.length > 3) {
          const victim = r.pick(voters);
          l.node!.removeServer(victim.id).then(() => {}, () => {});
        }
      }
    } else if (roll === 9 && r.chance(0.3)) {
      // Power loss: every server dies at once; only synced writes survive.
      for (const s of c.live()) void c.crash(s);
      c.clock.setTimer(r.range(20, 300), () => {
        for (const s of c.servers) if (s.crashed) void c.restart(s);
      });
    } else if (roll === 8) {
      const a = r.pick(ids);
      const b = r.pick(ids);
      if (a !== b) c.net.cutOneWay(a, b);
    }
    c.checkLogs();
    c.clock.setTimer(r.range(100, 300), chaos);
  };
  c.clock.setTimer(r.range(100, 300), chaos);
  await c.run(chaosMs + 10);
  // Heal and converge.
  c.net.heal();
  c.net.setDefaults({ loss: 0, duplicate: 0 });
  for (const s of c.servers) if (s.crashed) await c.restart(s);
  const inConfig = (): boolean => {
    const l = c.leader();
    return !!l;
  };
  void inConfig;
  const ok = await c.runUntilConverged(20_000);
  c.checkLogs();
  if (ok) c.checkAcked();
  if (!process.env.SIM_KEEP) await c.stopAll();
  // Removed servers legitimately stop hearing from the leader; only require convergence of the configuration's members.
  let error: string | undefined;
  if (c.violations.length > 0) error = c.violations.join("\n");
  else if (!ok) error = "cluster did not converge within 20 s of virtual time after healing";
  if (error) error = `${error}\n${c.describe()}\nreplay: SIM_SEED=${o.seed}`;
  return { error, cluster: c };
}
