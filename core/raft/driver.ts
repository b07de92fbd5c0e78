// The runtime around RaftCore, and the only async file in core/raft. A timer
// from the injected Clock feeds ticks, the transport feeds messages, and one
// pump at a time drains Ready: persist (log append + HardState, awaited:
// fsync), then send, then apply committed entries to the Fsm, then advance.
// Proposals that arrive while a sync is running land in the next Ready, so
// one fsync covers many writes (group commit).
import type { Clock, Timer } from "../clock/clock.ts";
import { CorruptionError, FsmError, LeadershipLostError, NotLeaderError, errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { Rng } from "../sim/rng.ts";
import type { ConfChange, RaftConfig, RaftReady, Role, StepResult } from "./raft.ts";
import { RaftCore } from "./raft.ts";
import { concatBytes } from "../bytes.ts";
import { IndexQueue } from "./index_queue.ts";
import { PrefetchReceiver, PrefetchSender, type PrefetchSource } from "./prefetch.ts";
import type {
  Configuration,
  HardState,
  Fsm,
  LogEntry,
  LogStore,
  RaftMessage,
  RaftTransport,
  ServerId,
  SnapshotMeta,
  SnapshotRequest,
  SnapshotSink,
  SnapshotSource,
  SnapshotStore,
  StableStore,
} from "./types.ts";

export interface RaftNodeOptions {
  id: ServerId;
  address: string;
  /**
   * Bootstrap membership, used only when storage is empty: it is written as
   * a configuration entry at index 1, term 1 (give every first server the
   * same list). Ignored on restart. A server that will be added later by
   * `addVoter` starts with none.
   */
  peers?: { id: ServerId; address: string }[];
  fsm: Fsm;
  logStore: LogStore;
  stableStore: StableStore;
  snapshotStore: SnapshotStore;
  transport: RaftTransport;
  clock: Clock;
  rng: Rng;
  logger?: Logger;
  /** Base tick length; the real tick is tickMs * raftMultiplier. Default 100. */
  tickMs?: number;
  /** Default 10 (1 s election timeout at the defaults). */
  electionTicks?: number;
  /** Default 1. */
  heartbeatTicks?: number;
  /** Consul's `raft_multiplier`: scales every timing. Default 1. */
  raftMultiplier?: number;
  /**
   * A leader tells followers about a new commit index with its next append,
   * or after this many ms with an append of its own (hashicorp/raft's
   * CommitTimeout is 50 ms). Under load the next append comes first and the
   * extra message and its answer are saved. 0: at once, as etcd. Default 5.
   */
  commitNotifyMs?: number;
  /**
   * A leader does not wait for its own log write before it goes on: the
   * write runs while the next Ready is handled, and the leader's copy counts
   * toward a commit once it is durable, so an entry commits as soon as a
   * quorum has it durable, followers included (Raft thesis §10.2.1). With
   * three servers the two followers' writes often finish before the
   * leader's, which shared the disk with them. Default true; false waits for
   * every write (as followers always do).
   */
  asyncLeaderAppend?: boolean;
  /** Take a snapshot after this many applied entries. Default 16,384 (Consul). */
  snapshotThreshold?: number;
  /**
   * Consul's raft_snapshot_interval (hashicorp/raft SnapshotInterval, 30 s in
   * Consul): after a random wait between this and twice this, check whether
   * snapshotThreshold entries were applied since the last snapshot and take
   * one then; repeat. 0 (the default): check after every applied batch
   * (tests and simulations, which want snapshots at a known point).
   */
  snapshotIntervalMs?: number;
  /** Other RaftCore settings (trailingLogs, maxInflight, maxEntriesPerMsg, …). */
  raft?: Omit<RaftConfig, "id" | "electionTicks" | "heartbeatTicks" | "logger">;
}

/** What the server layer needs from consensus (core/server/consensus.ts describes the same shape). */
export interface Consensus {
  apply(command: Uint8Array, options?: { signal?: AbortSignal }): Promise<{ index: number; result: unknown }>;
  isLeader(): boolean;
  leaderAddr(): string;
  lastContactMs(): number;
  peers(): string[];
  readBarrier(options?: { signal?: AbortSignal }): Promise<void>;
}

export interface RaftNodeStats {
  readies: number;
  logSyncs: number;
  /** Writes of term/vote to the stable store (commit-only changes are not written). */
  hardStateSyncs: number;
  applied: number;
  snapshotsTaken: number;
  proposalsRejected: number;
  badMessages: number;
}

interface PendingApply {
  term: number;
  resolve: (v: { index: number; result: unknown }) => void;
  reject: (e: Error) => void;
  cleanup: () => void;
}

interface PendingRead {
  resolve: () => void;
  reject: (e: Error) => void;
  cleanup: () => void;
  index: number;
}

const MAX_INDEX = Number.MAX_SAFE_INTEGER;
/** The most a follower takes ahead of a restore's install (as the server's largest restore, 1 TiB). */
const maxPrefetchBytes = 2 ** 40;

export class RaftNode implements Consensus {
  readonly id: ServerId;
  readonly address: string;
  readonly core: RaftCore;
  readonly stats: RaftNodeStats = { readies: 0, logSyncs: 0, hardStateSyncs: 0, applied: 0, snapshotsTaken: 0, proposalsRejected: 0, badMessages: 0 };
  #o: RaftNodeOptions;
  #log: Logger;
  #tickMs: number;
  #timer: Timer | undefined;
  #commitTimer: Timer | undefined;
  #commitNotifyMs: number;
  #stopped = false;
  #pumping = false;
  #pumpDone: Promise<void> = Promise.resolve();
  #applied: number;
  #lastSnapshotIndex: number;
  #storeCompacted: number;
  #lastContact: number;
  /** When each peer was last heard from (any message), for autopilot's last contact. */
  #peerContact = new Map<ServerId, number>();
  #role: Role;
  #addresses = new Map<ServerId, string>();
  /** Proposals by log index (not a Map: see index_queue.ts). */
  #pending = new IndexQueue<PendingApply>();
  #reads = new Map<number, PendingRead>();
  #waitingApply: PendingRead[] = [];
  #readSeq = 0;
  #leaderListeners = new Set<(isLeader: boolean) => void>();
  readonly #haltListeners = new Set<(err: Error) => void>();
  #failure: Error | undefined;
  #snapshotTimer: Timer | undefined;
  /** The snapshot interval passed: check the threshold at the pump's next turn. */
  #snapshotDue = false;
  #snapshotRng: Rng | undefined;
  /** Term and vote as last written to the stable store. */
  #savedHard: HardState;
  /** The last of the leader's own log writes still running (asyncLeaderAppend). */
  #leaderAppends: Promise<void> = Promise.resolve();
  #backgroundWrites = 0;
  /** A snapshot being written in the background (one at a time). */
  #snapshotWrite: Promise<void> | undefined;
  /** The Fsm restoring from an installed snapshot (the pump goes on; applying waits for it). */
  #fsmRestore: Promise<void> | undefined;
  /** Entries committed while the Fsm restored, applied once it is done. */
  #deferred: LogEntry[] = [];
  /** A background snapshot let the core compact: drop those entries from the log store at the pump's next turn. */
  #compactDue = false;
  /** The snapshot the core knows, open for reading chunks to send. */
  #source: SnapshotSource | undefined;
  /** Per follower: its InstallSnapshot chunk read in progress (see #sendSnapshotChunk). */
  readonly #chunkReads = new Map<ServerId, { turn: Promise<void> }>();
  /** An InstallSnapshot being received (streamSnapshots). */
  #incoming: { index: number; term: number; sink: SnapshotSink } | undefined;
  /** A user restore holds the pump between its steps. */
  #paused = false;
  /** A user restore's bytes going to followers ahead of its install (leader). */
  #prefetchOut: PrefetchSender | undefined;
  /** Bytes sent ahead to us, for an install that names them (follower). */
  readonly #prefetchIn: PrefetchReceiver;

  /** Use createRaftNode. */
  constructor(o: RaftNodeOptions, core: RaftCore, applied: number, savedHard: HardState, source?: SnapshotSource) {
    this.#source = source;
    this.#o = o;
    this.id = o.id;
    this.address = o.address;
    this.core = core;
    this.#log = o.logger ?? nullLogger();
    this.#tickMs = Math.max(1, (o.tickMs ?? 100) * Math.max(1, o.raftMultiplier ?? 1));
    this.#commitNotifyMs = commitNotifyMs(o);
    this.#applied = applied;
    this.#savedHard = savedHard;
    this.#lastSnapshotIndex = applied;
    this.#storeCompacted = 0;
    this.#lastContact = o.clock.now();
    this.#role = core.role;
    for (const p of o.peers ?? []) this.#addresses.set(p.id, p.address);
    this.#addresses.set(o.id, o.address);
    if ((o.snapshotIntervalMs ?? 0) > 0) this.#snapshotRng = o.rng.fork();
    this.#prefetchIn = new PrefetchReceiver({
      self: o.id,
      selfAddress: o.address,
      store: o.snapshotStore,
      transport: o.transport,
      logger: this.#log,
      addressOf: (id) => this.#addresses.get(id),
      maxBytes: maxPrefetchBytes,
    });
  }

  /** Begin ticking and receiving. */
  start(): void {
    this.#o.transport.onMessage((msg) => this.#receive(msg));
    this.#armTimer();
    this.#armSnapshotTimer();
    this.#schedule();
  }

  /** Stop ticking, receiving and applying; pending calls fail. Stores and transport stay open (their owner closes them). */
  /**
   * hashicorp/raft ReloadConfig (Consul reloads raft_snapshot_threshold,
   * raft_snapshot_interval and raft_trailing_logs): the threshold applies at
   * the next check, the interval from the next wait on.
   */
  reloadSnapshotConfig(c: { snapshotThreshold: number; snapshotIntervalMs: number; trailingLogs: number }): void {
    this.#o = { ...this.#o, snapshotThreshold: c.snapshotThreshold, snapshotIntervalMs: c.snapshotIntervalMs };
    if (c.snapshotIntervalMs > 0 && !this.#snapshotRng) {
      this.#snapshotRng = this.#o.rng.fork();
      this.#armSnapshotTimer();
    }
    this.core.setTrailingLogs(c.trailingLogs);
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#timer?.cancel();
    this.#snapshotTimer?.cancel();
    this.#commitTimer?.cancel();
    this.#o.transport.onMessage(() => {});
    // Proposals in flight may still be committed by the next leader.
    this.#failAll(new LeadershipLostError());
    await this.#pumpDone.catch(() => {});
    await this.#releaseSnapshotFiles();
  }

  async #releaseSnapshotFiles(): Promise<void> {
    this.#prefetchOut?.stop();
    this.#prefetchOut = undefined;
    await this.#prefetchIn.close();
    const inc = this.#incoming;
    this.#incoming = undefined;
    await inc?.sink.cancel().catch(() => {});
    const src = this.#source;
    this.#source = undefined;
    await src?.close().catch(() => {});
  }

  /** The store snapshots are written to (a user restore writes its state there first, see restoreUserSnapshot). */
  get snapshotStore(): SnapshotStore {
    return this.#o.snapshotStore;
  }

  /** A user restore starts only on a running leader with no other restore or install under way. */
  #assertRestorable(): void {
    if (this.#stopped || !this.core.isLeader()) throw new NotLeaderError(this.leaderAddr() || undefined);
    if (this.#paused || this.#fsmRestore) throw new Error("Another snapshot restore or install is in progress");
  }

  /**
   * hashicorp/raft Restore: replace the whole state with an operator's
   * snapshot, through Raft's own snapshot installation rather than a log
   * entry, so its size is bounded by the disk, not by a message. `sink`
   * (from `snapshotStore.begin()`) already holds the state bytes, checked;
   * `stateIndex` is the index the state was saved at; `install` swaps the
   * Fsm's state for the one built from those bytes (synchronously; it was
   * built while the bytes arrived), given the snapshot's metadata. The
   * snapshot is stored at an index above everything in the log, the log is
   * emptied (writes not yet committed fail with "aborted by restore") and
   * followers receive it by InstallSnapshot. Resolves once it is installed
   * here; `replicated` resolves once a quorum holds it (the noop after it
   * committed), and rejects if leadership is lost first.
   */
  async restoreUserSnapshot(options: { sink: SnapshotSink; stateIndex: number; install: (meta: SnapshotMeta) => void; contentId?: string }): Promise<{ index: number; term: number; replicated: Promise<void> }> {
    this.#assertRestorable();
    // From here on InstallSnapshot carries the bytes (naming what was sent ahead).
    this.#prefetchOut?.stop();
    this.#prefetchOut = undefined;
    // The bytes to disk before Raft pauses: the pause sends no heartbeats,
    // and a 1 GiB fsync inside it outlasted the election timeout (the
    // followers elected another leader, the restore was lost).
    await options.sink.flush();
    // Again: leadership or another restore may have come and gone meanwhile.
    this.#assertRestorable();
    this.#paused = true;
    let noop: Promise<unknown>;
    let result: { index: number; term: number };
    try {
      await this.#pumpDone.catch(() => {});
      await this.#leaderAppends;
      if (this.#stopped) throw new NotLeaderError();
      const r = this.core.step({ kind: "restoreUser", stateIndex: options.stateIndex, sizeBytes: options.sink.written, contentId: options.contentId });
      if (!r.ok || r.index === undefined || r.term === undefined) {
        if (!r.ok && r.reason === "not leader") throw new NotLeaderError(this.leaderAddr() || undefined);
        throw new Error(`Cannot restore the snapshot: ${r.ok ? "no index" : r.reason}`);
      }
      result = { index: r.index, term: r.term };
      // Entries the log no longer holds will never be applied here.
      const aborted = new Error("Aborted by a snapshot restore");
      for (const [i, p] of this.#pending.entries()) {
        if (i > r.index) continue;
        this.#pending.delete(i);
        p.cleanup();
        p.reject(aborted);
      }
      noop = new Promise((resolve, reject) => this.#pending.set(r.index! + 1, { term: r.term!, resolve, reject, cleanup: () => {} }));
      noop.catch(() => {});
      try {
        const meta = await options.sink.finish(this.core.snapshotMeta!);
        await this.#o.logStore.deleteRange(0, MAX_INDEX);
        options.install(meta);
        this.#applied = meta.index;
        this.#lastSnapshotIndex = meta.index;
        this.#storeCompacted = meta.index;
        await this.#useSource(meta);
        this.stats.snapshotsTaken++;
        this.#log.info("user snapshot restored", { index: meta.index, term: meta.term, sizeBytes: meta.sizeBytes });
      } catch (err) {
        // The core already moved on: only a halt is safe.
        this.#fail(err);
        throw err;
      }
    } finally {
      this.#paused = false;
      this.#schedule();
    }
    this.#releaseReads();
    return { ...result, replicated: noop.then(() => {}) };
  }

  /**
   * Send a user restore's bytes to the followers while they are still being
   * written (core/raft/prefetch.ts), under `id`: pass the same id as
   * restoreUserSnapshot's `contentId`. Call `grew` after each write,
   * `complete` once the bytes checked out, `cancel` if the restore fails.
   * Undefined when this server is not a running leader.
   */
  sendAhead(id: string, source: PrefetchSource): { grew(): void; complete(total: number): void; cancel(): void } | undefined {
    if (this.#stopped || !this.core.isLeader() || this.#paused) return undefined;
    this.#prefetchOut?.stop();
    // Only to as many voters as a quorum needs besides us, those heard from
    // last first: the restore answers once a quorum holds it, and every
    // byte sent is a socket write on the leader, whose CPU the archive's
    // receive needs (the others get the snapshot by InstallSnapshot).
    const voters = this.core.configuration().servers.filter((s) => s.suffrage === "voter");
    const needed = this.core.peersForQuorum();
    const contact = (id: ServerId): number => this.#peerContact.get(id) ?? -Infinity;
    const peers = voters
      .filter((s) => s.id !== this.id)
      .sort((a, b) => contact(b.id) - contact(a.id) || (a.id < b.id ? -1 : 1))
      .slice(0, Math.max(0, needed))
      .map((s) => ({ id: s.id, address: this.#addressOf(s.id) ?? s.address }));
    const sender = new PrefetchSender(id, {
      self: this.id,
      selfAddress: this.address,
      term: this.core.term,
      peers,
      source,
      transport: this.#o.transport,
      clock: this.#o.clock,
      logger: this.#log,
      chunkBytes: this.#o.raft?.snapshotChunkBytes ?? 4 * 1024 * 1024,
      windowChunks: this.#o.raft?.snapshotWindowChunks ?? 4,
      resendMs: 2 * (this.#o.electionTicks ?? 10) * this.#tickMs,
    });
    this.#prefetchOut = sender;
    const live = (): boolean => this.#prefetchOut === sender && !this.#stopped;
    return {
      grew: () => { if (live()) sender.grew(); },
      complete: (total) => { if (live()) sender.complete(total); },
      cancel: () => {
        sender.stop();
        if (this.#prefetchOut === sender) this.#prefetchOut = undefined;
      },
    };
  }

  /** Open the stored snapshot `meta` for sending to followers (closing the one before). */
  async #useSource(meta: SnapshotMeta): Promise<void> {
    const next = await this.#o.snapshotStore.open({ index: meta.index, term: meta.term });
    if (!next) throw new Error(`Snapshot ${meta.index}/${meta.term} was just stored but cannot be opened`);
    const old = this.#source;
    this.#source = next;
    await old?.close().catch(() => {});
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  // -------------------------------------------------------------------------
  // Consensus

  apply(command: Uint8Array, options: { signal?: AbortSignal } = {}): Promise<{ index: number; result: unknown }> {
    if (this.#stopped) return Promise.reject(new NotLeaderError());
    if (options.signal?.aborted) return Promise.reject(options.signal.reason ?? new Error("Aborted"));
    const r = this.core.step({ kind: "propose", data: command });
    if (!r.ok || r.index === undefined) {
      this.stats.proposalsRejected++;
      // During a leadership transfer we are still leader but refuse writes:
      // name no leader, so callers retry instead of forwarding to us.
      return Promise.reject(new NotLeaderError(this.core.isLeader() ? undefined : this.leaderAddr() || undefined));
    }
    const index = r.index;
    const term = r.term!;
    this.#schedule();
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#pending.delete(index);
        reject(options.signal?.reason ?? new Error("Aborted"));
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.set(index, {
        term,
        resolve,
        reject,
        cleanup: () => options.signal?.removeEventListener("abort", onAbort),
      });
    });
  }

  isLeader(): boolean {
    return !this.#stopped && this.core.isLeader();
  }

  leaderAddr(): string {
    const l = this.core.leader;
    return l === "" ? "" : this.#addressOf(l) ?? "";
  }

  leaderId(): ServerId {
    return this.core.leader;
  }

  lastContactMs(): number {
    if (this.core.isLeader()) return 0;
    return Math.max(0, this.#o.clock.now() - this.#lastContact);
  }

  /** Addresses of the voters in the latest configuration. */
  /** Ms since `id` was last heard from (0 for this server); undefined: never since start. */
  peerLastContactMs(id: ServerId): number | undefined {
    if (id === this.id) return 0;
    const at = this.#peerContact.get(id);
    return at === undefined ? undefined : Math.max(0, this.#o.clock.now() - at);
  }

  peers(): string[] {
    return this.core.configuration().servers.filter((s) => s.suffrage === "voter").map((s) => s.address);
  }

  configuration(): Configuration {
    return this.core.configuration();
  }

  appliedIndex(): number {
    return this.#applied;
  }

  /** The leader still holds its lease (see RaftCore.hasLease): a `default`-consistency read may be served locally. */
  hasLease(): boolean {
    return this.isLeader() && this.core.hasLease();
  }

  /**
   * Linearizable read barrier (ReadIndex): resolves once this leader has
   * confirmed with a quorum that it still leads and has applied everything
   * committed before the call. With `allowLease`, a valid lease skips the round.
   */
  readBarrier(options: { signal?: AbortSignal; allowLease?: boolean } = {}): Promise<void> {
    if (this.#stopped || !this.core.isLeader()) return Promise.reject(new NotLeaderError(this.leaderAddr() || undefined));
    if (options.signal?.aborted) return Promise.reject(options.signal.reason ?? new Error("Aborted"));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#reads.delete(ctx);
        const i = this.#waitingApply.indexOf(read);
        if (i >= 0) this.#waitingApply.splice(i, 1);
        reject(options.signal?.reason ?? new Error("Aborted"));
      };
      const ctx = ++this.#readSeq;
      const read: PendingRead = {
        resolve,
        reject,
        index: 0,
        cleanup: () => options.signal?.removeEventListener("abort", onAbort),
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      if (options.allowLease && this.core.hasLease()) {
        read.index = this.core.commitIndex;
        this.#waitForApply(read);
        return;
      }
      this.#reads.set(ctx, read);
      this.core.step({ kind: "readIndex", ctx });
      this.#schedule();
    });
  }

  addVoter(id: ServerId, address: string): Promise<number> {
    this.#addresses.set(id, address);
    return this.#confChange({ op: "addVoter", id, address });
  }

  addNonvoter(id: ServerId, address: string): Promise<number> {
    this.#addresses.set(id, address);
    return this.#confChange({ op: "addNonvoter", id, address });
  }

  removeServer(id: ServerId): Promise<number> {
    return this.#confChange({ op: "removeServer", id });
  }

  /** Hand leadership to `to` (or the most up-to-date voter). Resolves when asked; watch isLeader for the outcome. */
  transferLeadership(to?: ServerId): StepResult {
    const r = this.core.step({ kind: "transferLeader", to });
    this.#schedule();
    return r;
  }

  /**
   * Start an election now instead of after the election timeout (etcd-io/raft
   * `Node.Campaign`). A server that is the only voter wins it at once.
   */
  campaign(): StepResult {
    if (this.#stopped) return { ok: false, reason: "stopped" };
    const r = this.core.step({ kind: "campaign" });
    this.#schedule();
    return r;
  }

  /**
   * The connection to the server at `address` ended (the transport saw it
   * close). If that server is our leader, campaign soon instead of waiting
   * out the election timeout: a killed leader is replaced in a few ticks.
   */
  peerUnreachable(address: string): void {
    if (this.#stopped) return;
    const leader = this.core.leader;
    if (leader === "" || leader === this.#o.id || this.#addressOf(leader) !== address) return;
    const r = this.core.step({ kind: "leaderUnreachable", leader });
    if (r.ok) this.#schedule();
  }

  /** Called once if the node halts on a storage or state machine failure (it applies nothing more). */
  onHalt(fn: (err: Error) => void): () => void {
    this.#haltListeners.add(fn);
    return () => this.#haltListeners.delete(fn);
  }

  /** Called with true when this server becomes leader and false when it stops being leader. */
  onLeadershipChange(fn: (isLeader: boolean) => void): () => void {
    this.#leaderListeners.add(fn);
    return () => this.#leaderListeners.delete(fn);
  }

  /** Resolves when every Ready queued so far has been processed and its entries are durable (tests). */
  async idle(): Promise<void> {
    await this.#pumpDone;
    await this.#leaderAppends;
    await this.#snapshotWrite;
    await this.#fsmRestore;
    await this.#pumpDone;
  }

  // -------------------------------------------------------------------------

  #confChange(change: ConfChange): Promise<number> {
    if (this.#stopped) return Promise.reject(new NotLeaderError());
    const r = this.core.step({ kind: "confChange", change });
    if (!r.ok) {
      if (r.reason === "not leader") return Promise.reject(new NotLeaderError(this.leaderAddr() || undefined));
      return Promise.reject(new Error(`Cannot change the configuration: ${r.reason}`));
    }
    this.#schedule();
    const index = r.index!;
    return new Promise((resolve, reject) => {
      this.#pending.set(index, {
        term: r.term!,
        resolve: () => resolve(index),
        reject,
        cleanup: () => {},
      });
    });
  }

  #receive(msg: RaftMessage): void {
    if (this.#stopped) return;
    if (msg.fromAddress && msg.fromAddress !== "" && !this.#addresses.has(msg.from)) {
      this.#addresses.set(msg.from, msg.fromAddress);
    }
    // A restore's bytes sent ahead are the drivers' business, not the core's.
    if (msg.type === "prefetch") return this.#prefetchIn.onRequest(msg, this.core.term);
    if (msg.type === "prefetchResp") return this.#prefetchOut?.onResponse(msg);
    if (msg.type === "snapshot" && msg.offset === 0 && msg.meta.contentId !== undefined) {
      const id = msg.meta.contentId;
      const held = this.#prefetchIn.held(id);
      if (held !== undefined) {
        msg = { ...msg, prefetched: held };
      } else {
        // Still being written: stop that, then handle the message with the bytes it holds.
        const taking = this.#prefetchIn.take(id);
        if (taking) {
          void taking.then(() => this.#receive(msg));
          return;
        }
      }
    }
    if (msg.type === "append" || msg.type === "heartbeat" || msg.type === "snapshot") {
      if (msg.term >= this.core.term) this.#lastContact = this.#o.clock.now();
    }
    this.#peerContact.set(msg.from, this.#o.clock.now());
    try {
      this.core.step({ kind: "message", msg });
    } catch (err) {
      // The core validates nothing twice: transports must hand over messages
      // from decodeRaftMessage. Never let one bad message kill the node.
      this.stats.badMessages++;
      this.#log.warn("dropped a raft message the core could not handle", { from: msg.from, type: msg.type, error: errorMessage(err) });
    }
    this.#schedule();
  }

  #armTimer(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimer(this.#tickMs, () => {
      if (this.#stopped) return;
      this.core.step({ kind: "tick" });
      this.#prefetchOut?.tick();
      this.#armTimer();
      this.#schedule();
    });
  }

  /** hashicorp/raft runSnapshots: randomTimeout(SnapshotInterval), then shouldSnapshot. */
  #armSnapshotTimer(): void {
    const every = this.#o.snapshotIntervalMs ?? 0;
    if (every <= 0 || this.#stopped || !this.#snapshotRng) return;
    this.#snapshotTimer = this.#o.clock.setTimer(every + this.#snapshotRng.int(every), () => {
      if (this.#stopped) return;
      this.#snapshotDue = true;
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#pumping || this.#stopped || this.#paused || !(this.core.hasReady() || this.#snapshotDue || this.#compactDue)) return;
    this.#pumping = true;
    this.#pumpDone = this.#pump().finally(() => {
      this.#pumping = false;
      // Work that arrived after the loop's last check must not wait for a tick.
      this.#schedule();
    });
  }

  async #pump(): Promise<void> {
    try {
      while (!this.#stopped && !this.#paused && (this.core.hasReady() || this.#snapshotDue || this.#compactDue)) {
        if (this.#compactDue) {
          this.#compactDue = false;
          await this.#compactLog();
        }
        // New entries wait while our previous write runs, so that under load
        // they go out (and to followers' disks) in one larger Ready, as when
        // every write was waited for. An idle leader's Ready that only
        // commits and applies (followers answered first) goes ahead.
        if (this.#backgroundWrites > 0 && this.core.hasUnstableEntries()) {
          await this.#leaderAppends;
          continue;
        }
        if (this.core.hasReady()) await this.#handle(this.core.ready());
        // Between Readies, like every snapshot (the Fsm is not being applied
        // to), and after at most one: a busy leader always has the next Ready.
        if (this.#snapshotDue && !this.#stopped) {
          this.#snapshotDue = false;
          await this.#snapshotIfDue();
          this.#armSnapshotTimer();
        }
      }
      if (!this.#stopped && this.#commitTimer === undefined && this.core.needsCommitNotify()) {
        this.#commitTimer = this.#o.clock.setTimer(this.#commitNotifyMs, () => {
          this.#commitTimer = undefined;
          if (this.#stopped) return;
          this.core.step({ kind: "notifyCommit" });
          this.#schedule();
        });
      }
    } catch (err) {
      this.#fail(err);
    }
  }

  async #handle(rd: RaftReady): Promise<void> {
    const o = this.#o;
    this.stats.readies++;
    // 0. A leader's own traffic goes out first, so followers write to their
    // disks while we write to ours (thesis §10.2.1): a write then costs one
    // fsync of latency instead of ours followed by theirs. The core counts
    // our copy toward a commit only once it is durable (advance, or the
    // `persisted` step of a background write).
    this.#send(rd, 0, rd.sendBeforePersist);
    // 1. Persist. A leader's own entries may be written in the background
    // (asyncLeaderAppend): only a Ready that acknowledges nothing (all its
    // messages are leader traffic) and changes no term, vote or snapshot.
    const background = rd.entries.length > 0 && o.asyncLeaderAppend !== false && rd.softState.role === "leader" &&
      !rd.snapshot && rd.hardState === undefined && rd.sendBeforePersist === rd.messages.length;
    if (background) {
      const entries = rd.entries;
      this.stats.logSyncs++;
      for (const e of entries) if (e.type === "config") this.#learnAddresses(e.data);
      // The core marks entries stable only in order: step each write after the one before.
      const written = o.logStore.append(entries);
      this.#backgroundWrites++;
      this.#leaderAppends = Promise.all([this.#leaderAppends, written]).then(() => {
        this.#backgroundWrites--;
        if (this.#stopped) return;
        this.core.step({ kind: "persisted", entries });
        this.#schedule();
      }, (err: unknown) => {
        this.#backgroundWrites--;
        this.#fail(err);
      });
    }
    if (rd.snapshotChunks) await this.#writeIncoming(rd.snapshotChunks, rd.snapshot !== undefined);
    if (rd.snapshot) {
      // One snapshot at a time: a newer one waits for the last one's restore.
      await this.#fsmRestore;
      const { meta, data } = rd.snapshot;
      if (data) {
        await o.snapshotStore.create(meta, data);
      } else {
        const inc = this.#incoming;
        if (!inc || inc.index !== meta.index || inc.term !== meta.term || inc.sink.written !== meta.sizeBytes) {
          throw new Error(`InstallSnapshot ${meta.index}/${meta.term} finished but its bytes were not all written`);
        }
        this.#incoming = undefined;
        await inc.sink.finish(meta);
      }
      await o.logStore.deleteRange(0, MAX_INDEX);
      this.#lastSnapshotIndex = meta.index;
      this.#storeCompacted = meta.index;
      for (const s of meta.configuration.servers) this.#addresses.set(s.id, s.address);
      if (data) {
        await o.fsm.restore(data);
        if (this.#stopped) return;
        this.#applied = meta.index;
      } else {
        await this.#useSource(meta);
        // A big state takes seconds to rebuild. The pump goes on meanwhile,
        // so heartbeats are answered and entries appended (the leader keeps
        // its quorum); only applying waits for the restore (below).
        // One callback does it all, so no Ready can slip between the restore's
        // end and the deferred entries being applied.
        this.#fsmRestore = restoreFsm(o.fsm, this.#source!).then(
          () => {
            this.#fsmRestore = undefined;
            if (this.#stopped) return;
            this.#applied = Math.max(this.#applied, meta.index);
            const deferred = this.#deferred;
            this.#deferred = [];
            try {
              this.#applyCommitted(deferred);
            } catch (err) {
              this.#fail(err);
              return;
            }
            this.#releaseReads();
            this.#schedule();
          },
          (err: unknown) => {
            this.#fsmRestore = undefined;
            this.#fail(err);
          },
        );
      }
    }
    if (this.#stopped) return;
    // Committed entries are applied while our write runs (etcd does the
    // same): they are durable on a quorum already, so answering them need
    // not wait for the entries this Ready adds. Under load nearly every Ready
    // has both, and each answer used to wait for one more fsync.
    const persisted = rd.entries.length > 0 && !background ? o.logStore.append(rd.entries) : undefined;
    persisted?.catch(() => {}); // awaited below; only so a throwing apply leaves no unhandled rejection
    // While the Fsm rebuilds from a snapshot, committed entries wait (in
    // order) and the Ready goes on: its acknowledgements and heartbeat
    // answers must not wait seconds for the restore.
    if (this.#fsmRestore || this.#deferred.length > 0) this.#deferred.push(...rd.committed);
    else this.#applyCommitted(rd.committed);
    if (persisted) {
      await persisted;
      this.stats.logSyncs++;
      for (const e of rd.entries) if (e.type === "config") this.#learnAddresses(e.data);
    }
    // Term and vote must be durable before any message goes out; the commit
    // index need not be (it is re-learned from the leader, and a stale value
    // is safe), so a Ready that only advances commit skips the atomic
    // write-fsync-rename of the stable store: that was most of a PUT's latency.
    if (rd.hardState && (rd.hardState.term !== this.#savedHard.term || rd.hardState.vote !== this.#savedHard.vote)) {
      await o.stableStore.save(rd.hardState);
      this.#savedHard = rd.hardState;
      this.stats.hardStateSyncs++;
    }
    if (this.#stopped) return;
    // 2. Send the rest.
    this.#send(rd, rd.sendBeforePersist, rd.messages.length);
    // 3. Reads.
    for (const rs of rd.readStates) {
      const read = this.#reads.get(rs.ctx);
      if (!read) continue;
      this.#reads.delete(rs.ctx);
      if (!rs.ok) {
        read.cleanup();
        read.reject(new NotLeaderError(this.leaderAddr() || undefined));
        continue;
      }
      read.index = rs.index;
      this.#waitForApply(read);
    }
    this.#releaseReads();
    this.#noteRole(rd.softState.role);
    this.core.advance(rd, { entriesDurable: !background });
    // 4. Housekeeping: snapshot (here, or on its own timer) and compaction.
    if ((o.snapshotIntervalMs ?? 0) <= 0) await this.#snapshotIfDue();
    else await this.#compactLog();
  }

  #applyCommitted(committed: LogEntry[]): void {
    for (const e of committed) {
      if (e.index <= this.#applied) continue;
      let result: unknown = undefined;
      if (e.type === "normal") {
        result = this.#o.fsm.apply(e.index, e.data);
        this.stats.applied++;
      }
      this.#applied = e.index;
      const p = this.#pending.get(e.index);
      if (p) {
        this.#pending.delete(e.index);
        p.cleanup();
        if (p.term === e.term) p.resolve({ index: e.index, result });
        else p.reject(new NotLeaderError(this.leaderAddr() || undefined));
      }
    }
  }

  /** Snapshot if snapshotThreshold entries were applied since the last one, then drop what the core compacted. */
  async #snapshotIfDue(): Promise<void> {
    const threshold = this.#o.snapshotThreshold ?? 16_384;
    if (this.#applied - this.#lastSnapshotIndex >= threshold) await this.#takeSnapshot();
    await this.#compactLog();
  }

  async #compactLog(): Promise<void> {
    const compacted = this.core.compactedIndex;
    if (compacted > this.#storeCompacted) {
      await this.#o.logStore.deleteRange(0, compacted);
      this.#storeCompacted = compacted;
    }
  }

  #send(rd: RaftReady, from: number, to: number): void {
    if (from >= to) return;
    for (let i = from; i < to; i++) {
      const m = rd.messages[i]!;
      const address = this.#addressOf(m.to);
      if (address === undefined) {
        this.#log.debug("no address for raft peer; dropping message", { to: m.to, type: m.type });
        continue;
      }
      if (m.type === "snapshot" && m.fillBytes !== undefined) {
        void this.#sendSnapshotChunk({ id: m.to, address }, m);
        continue;
      }
      this.#o.transport.send({ id: m.to, address }, { ...m, fromAddress: this.address });
    }
    this.#o.transport.flush?.();
  }

  /**
   * A streaming core's InstallSnapshot chunk: read its bytes from the stored
   * snapshot, then send. A follower's chunks are read one after another, so
   * they leave in order. When the transport can, each chunk is read straight
   * into its encoded frame (no copy); otherwise into a buffer of its own,
   * handed to `send`.
   */
  #sendSnapshotChunk(target: { id: ServerId; address: string }, m: SnapshotRequest): Promise<void> {
    let slot = this.#chunkReads.get(target.id);
    if (!slot) this.#chunkReads.set(target.id, (slot = { turn: Promise.resolve() }));
    const run = slot.turn.then(() => this.#readAndSendChunk(target, m));
    slot.turn = run;
    return run;
  }

  async #readAndSendChunk(target: { id: ServerId; address: string }, m: SnapshotRequest): Promise<void> {
    const src = this.#source;
    if (!src || src.meta.index !== m.meta.index || src.meta.term !== m.meta.term) {
      this.#log.warn("snapshot to send is not open; dropping chunk", { to: m.to, index: m.meta.index });
      return;
    }
    const { fillBytes, ...rest } = m;
    const want = Math.max(0, Math.min(fillBytes ?? 0, src.meta.sizeBytes - m.offset));
    const msg: SnapshotRequest = { ...rest, fromAddress: this.address };
    const prepared = this.#o.transport.prepareSnapshotChunk?.(target, msg, want);
    let chunk: Uint8Array;
    try {
      chunk = await src.read(m.offset, want, prepared?.chunk);
    } catch (err) {
      this.#log.warn("cannot read snapshot chunk", { index: m.meta.index, offset: m.offset, error: errorMessage(err) });
      return;
    }
    if (this.#stopped) return;
    if (chunk.length !== want) {
      this.#log.warn("snapshot file is shorter than its size; dropping chunk", { index: m.meta.index, offset: m.offset, wanted: want, read: chunk.length });
      return;
    }
    if (prepared) prepared.send();
    else this.#o.transport.send(target, { ...msg, chunk });
    this.#o.transport.flush?.();
  }

  /** A follower's accepted InstallSnapshot chunks go to the incoming snapshot file before they are acknowledged. */
  async #writeIncoming(chunks: NonNullable<RaftReady["snapshotChunks"]>, installing: boolean): Promise<void> {
    for (const c of chunks) {
      let inc = this.#incoming;
      if (c.prefetched !== undefined) {
        // The core took the bytes sent ahead as this snapshot's first ones: that file is the incoming snapshot.
        await inc?.sink.cancel();
        this.#incoming = undefined;
        const sink = this.#prefetchIn.adopt(c.meta.contentId ?? "", c.prefetched);
        this.#incoming = { index: c.meta.index, term: c.meta.term, sink };
        continue;
      }
      if (c.offset === 0 || !inc || inc.index !== c.meta.index || inc.term !== c.meta.term) {
        await inc?.sink.cancel();
        inc = this.#incoming = { index: c.meta.index, term: c.meta.term, sink: this.#o.snapshotStore.begin() };
      }
      if (inc.sink.written !== c.offset) throw new Error(`InstallSnapshot chunk at ${c.offset} does not follow the ${inc.sink.written} bytes written`);
      await inc.sink.write(c.chunk);
    }
    const last = chunks[chunks.length - 1]!;
    if (last.done && !installing) {
      // The core did not need it (it already held that entry).
      const inc = this.#incoming;
      this.#incoming = undefined;
      await inc?.sink.cancel();
    }
  }

  async #takeSnapshot(): Promise<void> {
    if (this.#snapshotWrite || this.#fsmRestore) return;
    const index = this.#applied;
    const term = this.core.termAt(index);
    if (term === undefined) return;
    const fsm = this.#o.fsm;
    if (fsm.snapshotStream) {
      // The state is captured now, at `index` (cheap for the state store:
      // its rows are frozen), and written in the background while the log
      // goes on: writing a big state must not hold back heartbeats.
      const chunks = fsm.snapshotStream();
      const configuration = this.core.configurationAt(index);
      const previous = this.#lastSnapshotIndex;
      this.#lastSnapshotIndex = index;
      this.#snapshotWrite = this.#writeSnapshot(index, term, configuration, chunks)
        .catch((err: unknown) => {
          this.#lastSnapshotIndex = previous;
          this.#log.error("snapshot failed; will retry", { index, error: errorMessage(err) });
        })
        .finally(() => {
          this.#snapshotWrite = undefined;
          this.#schedule();
        });
      return;
    }
    const chunks = [await fsm.snapshot()];
    await this.#writeSnapshot(index, term, this.core.configurationAt(index), chunks);
  }

  /** Write a captured state as the snapshot at `index`, then tell the core (which may then compact the log). */
  async #writeSnapshot(index: number, term: number, configuration: Configuration, chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<void> {
    const sink = this.#o.snapshotStore.begin();
    let meta: SnapshotMeta;
    try {
      for await (const c of chunks) await sink.write(c);
      if (this.#stopped) {
        await sink.cancel();
        return;
      }
      meta = await sink.finish({ index, term, configuration, sizeBytes: sink.written });
    } catch (err) {
      await sink.cancel().catch(() => {});
      throw err;
    }
    if (this.#stopped) return;
    const r = this.core.step({ kind: "snapshotDone", meta });
    this.#lastSnapshotIndex = index;
    if (r.ok) {
      await this.#useSource(meta);
      this.#compactDue = true;
      this.stats.snapshotsTaken++;
      this.#log.info("snapshot taken", { index, term, sizeBytes: meta.sizeBytes });
    } else {
      this.#log.warn("snapshot not used", { index, reason: r.reason });
    }
  }

  #waitForApply(read: PendingRead): void {
    this.#waitingApply.push(read);
    this.#releaseReads();
  }

  #releaseReads(): void {
    if (this.#waitingApply.length === 0) return;
    const still: PendingRead[] = [];
    for (const r of this.#waitingApply) {
      if (r.index <= this.#applied) {
        r.cleanup();
        r.resolve();
      } else {
        still.push(r);
      }
    }
    this.#waitingApply = still;
  }

  #noteRole(role: Role): void {
    const was = this.#role === "leader";
    this.#role = role;
    const is = role === "leader";
    if (was === is) return;
    if (!is) {
      // A restore's bytes sent ahead are of no use without the install only a leader does.
      this.#prefetchOut?.stop();
      this.#prefetchOut = undefined;
      // Leadership lost: proposals may or may not commit; tell callers we cannot know.
      const err = new LeadershipLostError(this.leaderAddr() || undefined);
      for (const [i, p] of this.#pending.entries()) {
        this.#pending.delete(i);
        p.cleanup();
        p.reject(err);
      }
    }
    this.#log.info(is ? "raft: leadership gained" : "raft: leadership lost", { term: this.core.term });
    for (const fn of this.#leaderListeners) {
      try {
        fn(is);
      } catch (err) {
        this.#log.error("leadership listener failed", { error: errorMessage(err) });
      }
    }
  }

  #learnAddresses(data: Uint8Array): void {
    void data;
    for (const s of this.core.configuration().servers) this.#addresses.set(s.id, s.address);
  }

  #addressOf(id: ServerId): string | undefined {
    const s = this.core.configuration().servers.find((x) => x.id === id);
    return s?.address ?? this.#addresses.get(id);
  }

  #fail(err: unknown): void {
    if (this.#stopped) return;
    this.#failure = err instanceof Error ? err : new Error(String(err));
    this.#log.error("raft node halted: storage or state machine failed", { error: errorMessage(err) });
    this.#stopped = true;
    this.#timer?.cancel();
    this.#snapshotTimer?.cancel();
    this.#commitTimer?.cancel();
    // A storage failure: proposals already sent to followers may be committed
    // by the next leader, so their outcome is unknown. An FSM failure halts
    // every server at the same entry: that is the answer.
    const failure = this.#failure;
    this.#failAll(failure, failure instanceof FsmError ? failure : new LeadershipLostError(undefined, { cause: failure }));
    for (const fn of this.#haltListeners) {
      try {
        fn(failure);
      } catch (err) {
        this.#log.error("halt listener failed", { error: errorMessage(err) });
      }
    }
  }

  #failAll(err: Error, proposalErr: Error = err): void {
    for (const p of this.#pending.values()) {
      p.cleanup();
      p.reject(proposalErr);
    }
    this.#pending.clear();
    for (const r of this.#reads.values()) {
      r.cleanup();
      r.reject(err);
    }
    this.#reads.clear();
    for (const r of this.#waitingApply) {
      r.cleanup();
      r.reject(err);
    }
    this.#waitingApply = [];
  }

  /** Why the node halted, if it did. */
  get failure(): Error | undefined {
    return this.#failure;
  }
}

function commitNotifyMs(o: RaftNodeOptions): number {
  return Math.max(0, o.commitNotifyMs ?? 5);
}

/** Restore the Fsm from a stored snapshot: streamed when it can, else as one buffer. */
async function restoreFsm(fsm: Fsm, src: SnapshotSource): Promise<void> {
  if (fsm.restoreStream) {
    await fsm.restoreStream(src);
    return;
  }
  const chunks: Uint8Array[] = [];
  for await (const c of src.stream()) chunks.push(c);
  await fsm.restore(concatBytes(chunks));
}

/** Load state from the stores, restore the Fsm from the latest snapshot, and start the node. */
export async function createRaftNode(o: RaftNodeOptions): Promise<RaftNode> {
  const source = await o.snapshotStore.open();
  const snap = source ? { meta: source.meta } : undefined;
  if (source) await restoreFsm(o.fsm, source);
  const hardState = await o.stableStore.load();
  const first = await o.logStore.firstIndex();
  const last = await o.logStore.lastIndex();
  const snapIndex = snap?.meta.index ?? 0;
  // A damaged newest snapshot makes the store fall back to an older one; if
  // the log was compacted past it, the entries between exist nowhere, and
  // starting would silently serve old state. Stop and say so.
  if (first > 0 && first > snapIndex + 1) {
    throw new CorruptionError(
      `Raft log starts at index ${first}, but the newest readable snapshot ends at ${snapIndex}: entries ${snapIndex + 1} to ${first - 1} are missing (a damaged snapshot was skipped; see the warning naming it)`,
    );
  }
  let entries = first > 0 && last > snapIndex ? await o.logStore.getEntries(Math.max(first, snapIndex + 1), last + 1) : [];
  if (snap && first > 0 && first <= snapIndex && snapIndex <= last) {
    // A crash between storing a leader's snapshot and dropping the old log
    // leaves a tail from another history: keep it only if it continues the snapshot.
    const [atSnap] = await o.logStore.getEntries(snapIndex, snapIndex + 1);
    if (atSnap && atSnap.term !== snap.meta.term) {
      entries = [];
      await o.logStore.deleteRange(0, Number.MAX_SAFE_INTEGER);
    }
  }
  const logger = o.logger ?? nullLogger();
  const core = new RaftCore(
    {
      ...o.raft,
      streamSnapshots: true,
      // A few chunks in flight; a resend only after two election timeouts without an answer.
      snapshotWindowChunks: o.raft?.snapshotWindowChunks ?? 4,
      snapshotResendTicks: o.raft?.snapshotResendTicks ?? 2 * (o.electionTicks ?? 10),
      lazyCommit: commitNotifyMs(o) > 0,
      id: o.id,
      electionTicks: o.electionTicks ?? 10,
      heartbeatTicks: o.heartbeatTicks ?? 1,
      logger: logger.named("core"),
    },
    {
      hardState,
      snapshot: snap,
      entries,
      bootstrap: o.peers && o.peers.length > 0
        ? { servers: o.peers.map((p) => ({ id: p.id, address: p.address, suffrage: "voter" as const })) }
        : undefined,
    },
    o.rng,
  );
  const node = new RaftNode(o, core, snap?.meta.index ?? 0, hardState ?? { term: 0, vote: "", commit: 0 }, source);
  node.start();
  return node;
}
