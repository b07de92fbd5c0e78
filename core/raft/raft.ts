// The Raft protocol core, pure (etcd-io/raft `raft.go` + `rawnode.go` shape):
// inputs go in through `step`, effects come out of `ready()`, the driver
// reports back with `advance(rd)`. No I/O, no time (ticks are inputs), no
// randomness but the injected Rng. Bad peer input is counted, logged and
// dropped; nothing here throws on it.
//
// Implemented: pre-vote and check-quorum elections, pipelined replication
// with flow control and fast back-off, leader lease and ReadIndex reads,
// log compaction and chunked InstallSnapshot, single-server membership
// changes (effective on append), leadership transfer (TimeoutNow).
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import type { Rng } from "../sim/rng.ts";
import { concatBytes } from "../bytes.ts";
import { decodeConfiguration, encodeConfiguration } from "./codec.ts";
import { RaftLog } from "./log.ts";
import { Progress } from "./progress.ts";
import { committedIndex, hasQuorum, majority, voteResult } from "./quorum.ts";
import { maxRestoreIndex } from "./types.ts";
import type {
  AppendRequest,
  AppendResponse,
  Configuration,
  HardState,
  HeartbeatRequest,
  HeartbeatResponse,
  LogEntry,
  RaftMessage,
  ServerEntry,
  ServerId,
  SnapshotMeta,
  SnapshotRequest,
  SnapshotResponse,
  VoteRequest,
  VoteResponse,
} from "./types.ts";

export type Role = "follower" | "preCandidate" | "candidate" | "leader";

export interface RaftConfig {
  id: ServerId;
  /** Followers campaign after a random timeout in [electionTicks, 2*electionTicks). Default 10. */
  electionTicks?: number;
  /** Leader heartbeat interval. Default 1. */
  heartbeatTicks?: number;
  /** Run a pre-vote round before incrementing the term. Default true. */
  preVote?: boolean;
  /** Leaders step down without a quorum each election timeout; followers in contact with a leader refuse votes. Default true. */
  checkQuorum?: boolean;
  /** Most entries per AppendEntries. Default 512. */
  maxEntriesPerMsg?: number;
  /** Soft byte limit of entry data per AppendEntries (at least one entry is sent). Default 1 MiB. */
  maxBytesPerMsg?: number;
  /** Unacknowledged appends per follower in replicate state. Default 64. */
  maxInflight?: number;
  /** Bytes per InstallSnapshot chunk. Default 256 KiB. */
  snapshotChunkBytes?: number;
  /**
   * Snapshots of any size: the core holds no snapshot bytes. A leader's
   * InstallSnapshot messages carry an empty chunk and `fillBytes` (the
   * driver reads them from its snapshot store); a follower hands each chunk
   * it accepts to the driver in `Ready.snapshotChunks` instead of keeping
   * it, and its `Ready.snapshot` has no data. Default false (the data rides
   * in the core, as the interaction tests show it).
   */
  streamSnapshots?: boolean;
  /**
   * InstallSnapshot chunks in flight per follower (the follower takes them
   * in order; TCP keeps them in order). Default 1: one chunk, then wait.
   */
  snapshotWindowChunks?: number;
  /**
   * Heartbeats resend a snapshot chunk only after this many ticks without
   * an answer from the follower, and then only the first one it has not
   * acknowledged (the window refills as answers come). Default 0: the
   * first unacknowledged chunk with every heartbeat (fine for small chunks;
   * with MiB chunks on a busy follower that floods it with copies).
   */
  snapshotResendTicks?: number;
  /** Entries kept behind a snapshot for slow followers. Default 10,240 (Consul). */
  trailingLogs?: number;
  /**
   * Do not broadcast an append only to announce a new commit index (etcd
   * does, at once): followers learn it from the next append or heartbeat, or
   * when the driver steps `notifyCommit` (after a short delay, as
   * hashicorp/raft's CommitTimeout). Under a steady stream of writes this
   * saves a message and an answer per follower per write. Default false.
   */
  lazyCommit?: boolean;
  logger?: Logger;
}

/** What the driver loaded from storage at start. */
export interface RaftRestore {
  hardState?: HardState;
  snapshot?: { meta: SnapshotMeta; data?: Uint8Array };
  /** Stored entries; those at or below the snapshot index are ignored. */
  entries?: LogEntry[];
  /**
   * First start only (no snapshot, empty log): written as a configuration
   * entry at index 1, term 1. Give every first server the same list; ignored
   * once anything is stored.
   */
  bootstrap?: Configuration;
}

export type ConfChange =
  | { op: "addVoter"; id: ServerId; address: string }
  | { op: "addNonvoter"; id: ServerId; address: string }
  | { op: "removeServer"; id: ServerId };

export type RaftInput =
  | { kind: "tick" }
  | { kind: "message"; msg: RaftMessage }
  | { kind: "propose"; data: Uint8Array }
  | { kind: "readIndex"; ctx: number }
  | { kind: "transferLeader"; to?: ServerId }
  | { kind: "confChange"; change: ConfChange }
  | { kind: "snapshotDone"; meta: SnapshotMeta; data?: Uint8Array }
  /**
   * hashicorp/raft Restore on the leader: an operator's snapshot of
   * `sizeBytes` (its state last changed at `stateIndex`) replaces the state.
   * It becomes this server's snapshot at an index above everything in the
   * log and above `stateIndex`, in the current term; the log is emptied
   * (uncommitted entries are dropped), every follower is sent the snapshot,
   * and a noop entry right after it commits once a quorum installed it.
   * Answers the snapshot's index and term; the driver has the Fsm restored
   * and the snapshot stored under them before it handles another Ready.
   */
  | { kind: "restoreUser"; stateIndex: number; sizeBytes: number; contentId?: string }
  | { kind: "campaign" }
  /**
   * The transport saw the connection to `leader` end (its process died or
   * closed it): do not wait out the whole election timeout. A hint only:
   * the pre-vote still needs a majority that lost the leader too.
   */
  | { kind: "leaderUnreachable"; leader: ServerId }
  /** lazyCommit: tell followers the commit index now (see needsCommitNotify). */
  | { kind: "notifyCommit" }
  /**
   * A leader's entries from a Ready that was advanced with
   * `entriesDurable: false` are now on stable storage (see advance).
   */
  | { kind: "persisted"; entries: readonly LogEntry[] };

export type StepResult = { ok: true; index?: number; term?: number } | { ok: false; reason: string };

/** Answer to a readIndex request: once `index` is applied, a read reflects every write acknowledged before the request. */
export interface ReadState {
  ctx: number;
  index: number;
  /** false: leadership was lost or never held; retry on the leader. */
  ok: boolean;
}

export interface SoftState {
  role: Role;
  leader: ServerId;
  term: number;
}

export interface RaftReady {
  softState: SoftState;
  /** Persist (with entries, before sending messages) when present. */
  hardState?: HardState;
  /** A snapshot from the leader: persist it, drop the whole log, restore the Fsm, before anything else. */
  snapshot?: { meta: SnapshotMeta; data?: Uint8Array };
  /**
   * streamSnapshots: InstallSnapshot chunks this follower accepted, in
   * order; write them to the incoming snapshot (a chunk at offset 0 starts
   * a new one) before sending messages. When the last (`done`) one is not
   * followed by `snapshot` in the same Ready, the transfer was not needed:
   * throw it away. A chunk with `prefetched` carries no bytes: it starts the
   * incoming snapshot from the file the driver already holds (the first
   * `prefetched` bytes of it, sent ahead under meta.contentId).
   */
  snapshotChunks?: { meta: SnapshotMeta; offset: number; chunk: Uint8Array; done: boolean; prefetched?: number }[];
  /** Append, replacing any stored suffix from entries[0].index. */
  entries: LogEntry[];
  mustSync: boolean;
  /** Send only after hardState, snapshot and entries are durable, except the first `sendBeforePersist`. */
  messages: RaftMessage[];
  /**
   * The first this many `messages` may go out before (or while) this Ready
   * is persisted: a leader's own traffic (append, heartbeat, snapshot,
   * timeoutNow) in a term whose term and vote are already durable. A leader
   * may write its log in parallel with replicating it (Raft thesis §10.2.1):
   * it counts itself toward a commit only once its copy is durable (advance),
   * and a crash that loses its unsynced tail loses no acknowledged write.
   * Messages that acknowledge anything (votes, appendResp, snapshotResp)
   * stay behind persistence. A driver may ignore this and send all after.
   */
  sendBeforePersist: number;
  /** Apply in order (`normal` entries go to the Fsm). */
  committed: LogEntry[];
  readStates: ReadState[];
}

export interface RaftStats {
  droppedMessages: number;
  elections: number;
  snapshotsSent: number;
  snapshotsInstalled: number;
}

interface PendingRead {
  ctx: number;
  index: number;
  round: number;
}

interface Incoming {
  from: ServerId;
  meta: SnapshotMeta;
  chunks: Uint8Array[];
  received: number;
}

/** Messages only a leader sends; none of them acknowledges anything the sender must have persisted. */
function isLeaderTraffic(m: RaftMessage): boolean {
  return m.type === "append" || m.type === "heartbeat" || m.type === "snapshot" || m.type === "timeoutNow";
}

export class RaftCore {
  readonly id: ServerId;
  readonly stats: RaftStats = { droppedMessages: 0, elections: 0, snapshotsSent: 0, snapshotsInstalled: 0 };
  #log: RaftLog;
  #logger: Logger;
  #rng: Rng;
  #electionTicks: number;
  #heartbeatTicks: number;
  #preVote: boolean;
  #checkQuorum: boolean;
  #maxEntries: number;
  #maxBytes: number;
  #maxInflight: number;
  #chunkBytes: number;
  #trailingLogs: number;
  #lazyCommit: boolean;

  #term = 0;
  #vote: ServerId = "";
  #lead: ServerId = "";
  #role: Role = "follower";
  #ticks = 0;
  #electionElapsed = 0;
  #heartbeatElapsed = 0;
  #randomizedTimeout = 0;
  /** Ticks since we last heard from a leader (0 at boot: a restarted voter honours any lease it may have granted). */
  #leaderContactElapsed = 0;
  #votes = new Map<ServerId, boolean>();
  #progress = new Map<ServerId, Progress>();
  #leadTransferee: ServerId = "";
  #leaseDisabled = false;

  /** Config entries present in the log, plus the base one at the compaction point. */
  #configs: { index: number; config: Configuration }[] = [];
  #snapshot: { meta: SnapshotMeta; data?: Uint8Array } | undefined;
  #incoming: Incoming | undefined;
  #pendingInstall: { meta: SnapshotMeta; data?: Uint8Array } | undefined;
  #streamSnapshots: boolean;
  #snapshotWindow: number;
  #snapshotResendTicks: number;
  #chunksOut: NonNullable<RaftReady["snapshotChunks"]> = [];

  #round = 0;
  #roundTick = new Map<number, number>();
  #reads: PendingRead[] = [];
  #readsBeforeCommit: number[] = [];
  #readStates: ReadState[] = [];
  #msgs: RaftMessage[] = [];
  #needBroadcast = false;
  #prevHard: HardState;
  #prevSoft: SoftState;

  constructor(config: RaftConfig, restore: RaftRestore, rng: Rng) {
    this.id = config.id;
    this.#rng = rng;
    this.#logger = config.logger ?? nullLogger();
    this.#electionTicks = Math.max(3, config.electionTicks ?? 10);
    this.#heartbeatTicks = Math.max(1, Math.min(config.heartbeatTicks ?? 1, this.#electionTicks - 1));
    this.#preVote = config.preVote ?? true;
    this.#checkQuorum = config.checkQuorum ?? true;
    this.#maxEntries = Math.max(1, config.maxEntriesPerMsg ?? 512);
    this.#maxBytes = Math.max(1, config.maxBytesPerMsg ?? 1 << 20);
    this.#maxInflight = Math.max(1, config.maxInflight ?? 64);
    this.#chunkBytes = Math.max(1, config.snapshotChunkBytes ?? 256 * 1024);
    this.#trailingLogs = Math.max(0, config.trailingLogs ?? 10_240);
    this.#lazyCommit = config.lazyCommit ?? false;
    this.#streamSnapshots = config.streamSnapshots ?? false;
    this.#snapshotWindow = Math.max(1, config.snapshotWindowChunks ?? 1);
    this.#snapshotResendTicks = Math.max(0, config.snapshotResendTicks ?? 0);

    const snap = restore.snapshot;
    this.#log = snap ? new RaftLog(snap.meta.index, snap.meta.term) : new RaftLog();
    this.#snapshot = snap ? (this.#streamSnapshots || snap.data === undefined ? { meta: snap.meta } : { meta: snap.meta, data: snap.data }) : undefined;
    this.#configs = [{ index: this.#log.offsetIndex, config: snap ? snap.meta.configuration : { servers: [] } }];
    for (const e of restore.entries ?? []) {
      if (e.index <= this.#log.offsetIndex) continue;
      if (e.index !== this.#log.lastIndex() + 1) {
        this.#logger.error("stored log has a gap; ignoring the rest", { expected: this.#log.lastIndex() + 1, got: e.index });
        break;
      }
      this.#log.append([e]);
      if (e.type === "config") this.#addConfigEntry(e);
    }
    this.#log.stabled = this.#log.lastIndex();
    this.#log.persisting = this.#log.stabled;
    const hs = restore.hardState;
    if (hs) {
      this.#term = hs.term;
      this.#vote = hs.vote;
      this.#log.commitTo(Math.max(hs.commit, this.#log.offsetIndex));
    }
    // A node that never had a term cannot have acknowledged a leader.
    if (this.#term === 0) this.#leaderContactElapsed = this.#electionTicks;
    this.#prevHard = this.#hardState();
    if (!snap && this.#log.lastIndex() === 0 && restore.bootstrap && restore.bootstrap.servers.length > 0) {
      // Bootstrap (hashicorp/raft BootstrapCluster): every first server
      // writes the same configuration entry at index 1, term 1, so the
      // membership lives in the log and a restart needs no peer list. It is
      // committed by construction; the first Ready persists it.
      const e: LogEntry = { index: 1, term: 1, type: "config", data: encodeConfiguration(restore.bootstrap) };
      this.#log.append([e]);
      this.#addConfigEntry(e);
      this.#log.commitTo(1);
      if (this.#term < 1) {
        this.#term = 1;
        this.#vote = "";
      }
    }
    this.#resetRandomizedTimeout();
    this.#prevSoft = this.softState();
  }

  // -------------------------------------------------------------------------
  // Public surface

  get term(): number {
    return this.#term;
  }
  get role(): Role {
    return this.#role;
  }
  get leader(): ServerId {
    return this.#lead;
  }
  get commitIndex(): number {
    return this.#log.committed;
  }
  get appliedIndex(): number {
    return this.#log.applied;
  }
  get lastIndex(): number {
    return this.#log.lastIndex();
  }
  /** hashicorp/raft ReloadConfig: entries kept behind the next snapshot from now on. */
  setTrailingLogs(entries: number): void {
    this.#trailingLogs = Math.max(0, entries);
  }
  /** Entries at or below this index are compacted away (driver deletes them from the LogStore). */
  get compactedIndex(): number {
    return this.#log.offsetIndex;
  }
  get snapshotMeta(): SnapshotMeta | undefined {
    return this.#snapshot?.meta;
  }
  isLeader(): boolean {
    return this.#role === "leader";
  }
  softState(): SoftState {
    return { role: this.#role, leader: this.#lead, term: this.#term };
  }
  /** The latest membership (including an uncommitted change). */
  configuration(): Configuration {
    return this.#configs[this.#configs.length - 1]!.config;
  }
  /** How many other voters a quorum needs besides this server (its own vote counts when it is a voter). */
  peersForQuorum(): number {
    const voters = this.#voters();
    return majority(voters.length) - (voters.includes(this.id) ? 1 : 0);
  }

  /** The membership in force at `index` (for snapshot metadata). */
  configurationAt(index: number): Configuration {
    let c = this.#configs[0]!.config;
    for (const x of this.#configs) if (x.index <= index) c = x.config;
    return c;
  }
  termAt(index: number): number | undefined {
    return this.#log.term(index);
  }
  entriesFrom(lo: number, hi: number): LogEntry[] {
    return this.#log.slice(lo, hi);
  }
  /** Leader's view of a follower, for tests and `operator raft` output. */
  progressOf(id: ServerId): { match: number; next: number; state: string } | undefined {
    const p = this.#progress.get(id);
    return p ? { match: p.match, next: p.next, state: p.state } : undefined;
  }

  /**
   * Leader lease: a quorum acknowledged a heartbeat sent less than an
   * election timeout ago (minus two ticks of slack for clock phase), so no
   * other leader can have been elected since (voters in contact with a leader
   * refuse votes). Disabled in a term once leadership transfer started.
   */
  hasLease(): boolean {
    if (this.#role !== "leader" || this.#leaseDisabled || this.#leadTransferee !== "" || !this.#checkQuorum) return false;
    if (!this.#committedInTerm()) return false;
    const voters = this.#voters();
    if (voters.length === 1 && voters[0] === this.id) return true;
    const round = committedIndex(voters, (id) => (id === this.id ? this.#round : this.#progress.get(id)?.ackedRound ?? 0));
    if (round === 0) return false;
    const sentAt = this.#roundTick.get(round);
    return sentAt !== undefined && this.#ticks - sentAt < this.#electionTicks - 2;
  }

  step(input: RaftInput): StepResult {
    switch (input.kind) {
      case "tick":
        this.#tick();
        return { ok: true };
      case "message":
        this.#stepMessage(input.msg);
        return { ok: true };
      case "propose":
        return this.#propose("normal", input.data);
      case "readIndex":
        return this.#readIndex(input.ctx);
      case "transferLeader":
        return this.#transferLeader(input.to);
      case "confChange":
        return this.#confChange(input.change);
      case "snapshotDone":
        return this.#snapshotDone(input.meta, input.data);
      case "restoreUser":
        return this.#restoreUser(input.stateIndex, input.sizeBytes, input.contentId);
      case "campaign":
        if (this.#role === "leader") return { ok: false, reason: "already leader" };
        if (!this.#promotable()) return { ok: false, reason: "not a voter" };
        this.#campaign(this.#preVote ? "pre" : "election");
        return { ok: true };
      case "leaderUnreachable":
        return this.#leaderUnreachable(input.leader);
      case "notifyCommit":
        if (this.#role !== "leader") return { ok: false, reason: "not leader" };
        for (const [id, pr] of this.#progress) if (this.#commitUnsent(pr)) this.#sendAppend(id, true);
        return { ok: true };
      case "persisted":
        this.#markStable(input.entries);
        if (this.#role === "leader" && this.#maybeCommit() && !this.#lazyCommit) this.#needBroadcast = true;
        return { ok: true };
    }
  }

  /**
   * `entries` (one Ready's, in order) are durable: move `stabled` over the
   * part of them our log still holds. A follower's log can lose a suffix
   * to a conflicting append while the write runs; what precedes the
   * conflict was written all the same.
   */
  #markStable(entries: readonly LogEntry[]): void {
    if (entries.length === 0 || this.#log.stabled < entries[0]!.index - 1) return;
    let stable = this.#log.stabled;
    for (const e of entries) {
      if (this.#log.term(e.index) !== e.term) break;
      stable = e.index;
    }
    if (stable > this.#log.stabled) this.#log.stabled = stable;
  }

  /**
   * lazyCommit: some follower holds entries it does not know are committed
   * (no append or heartbeat carried the commit index yet). The driver steps
   * `notifyCommit` a little later unless new appends carry it first.
   */
  needsCommitNotify(): boolean {
    if (this.#role !== "leader" || !this.#lazyCommit) return false;
    for (const pr of this.#progress.values()) if (this.#commitUnsent(pr)) return true;
    return false;
  }

  #commitUnsent(pr: Progress): boolean {
    return pr.state !== "snapshot" && Math.min(pr.match, this.#log.committed) > pr.commitSent;
  }

  /** Whether the next Ready would carry entries to persist. */
  hasUnstableEntries(): boolean {
    return this.#log.hasUnstable();
  }

  hasReady(): boolean {
    if (this.#needBroadcast || this.#msgs.length > 0 || this.#readStates.length > 0 || this.#pendingInstall || this.#chunksOut.length > 0) return true;
    if (this.#log.hasUnstable() || this.#log.committed > this.#log.applying) return true;
    if (this.#needsReadRound()) return true;
    const h = this.#hardState();
    if (h.term !== this.#prevHard.term || h.vote !== this.#prevHard.vote) return true;
    const s = this.softState();
    return s.role !== this.#prevSoft.role || s.leader !== this.#prevSoft.leader || s.term !== this.#prevSoft.term;
  }

  /** Collect pending effects. Call once, process, then `advance` with the same object. */
  ready(): RaftReady {
    if (this.#role === "leader") {
      if (this.#needsReadRound()) this.#bcastHeartbeat();
      if (this.#needBroadcast) {
        this.#needBroadcast = false;
        this.#bcastAppend();
      }
    } else {
      this.#needBroadcast = false;
    }
    const h = this.#hardState();
    const hardChanged = h.term !== this.#prevHard.term || h.vote !== this.#prevHard.vote;
    const entries = this.#log.unstableEntries();
    if (entries.length > 0) this.#log.persisting = entries[entries.length - 1]!.index;
    const committed = this.#log.nextCommitted();
    if (committed.length > 0) this.#log.applying = committed[committed.length - 1]!.index;
    let messages = this.#msgs;
    let sendBeforePersist = 0;
    // Only when term and vote are already durable (the previous Ready, which
    // the driver finished before asking for this one, carried them): a
    // leader's message in a term it could still forget after a crash could
    // meet a second leader of that term.
    if (!hardChanged && this.#pendingInstall === undefined && messages.length > 0) {
      const early: RaftMessage[] = [];
      const late: RaftMessage[] = [];
      for (const m of messages) (isLeaderTraffic(m) ? early : late).push(m);
      messages = late.length === 0 ? early : early.concat(late);
      sendBeforePersist = early.length;
    }
    const rd: RaftReady = {
      softState: this.softState(),
      entries,
      mustSync: hardChanged || entries.length > 0 || this.#pendingInstall !== undefined,
      messages,
      sendBeforePersist,
      committed,
      readStates: this.#readStates,
    };
    if (hardChanged) rd.hardState = h;
    if (this.#pendingInstall) rd.snapshot = this.#pendingInstall;
    this.#pendingInstall = undefined;
    if (this.#chunksOut.length > 0) {
      rd.snapshotChunks = this.#chunksOut;
      rd.mustSync = true;
      this.#chunksOut = [];
    }
    this.#msgs = [];
    this.#readStates = [];
    this.#prevHard = h;
    this.#prevSoft = rd.softState;
    return rd;
  }

  /**
   * The driver has persisted, sent and applied everything in `rd`. A leader
   * may instead advance while its own write of `rd.entries` is still running
   * (`entriesDurable: false`) and step `persisted` once it is done: its
   * copy counts toward a commit only from then on, so entries commit on the
   * followers' copies alone when those are faster (Raft thesis §10.2.1), and
   * the next Ready need not wait for this write. Only a Ready without a
   * snapshot or a hardState change, whose messages are all leader traffic,
   * may be advanced that way.
   */
  advance(rd: RaftReady, options?: { entriesDurable?: boolean }): void {
    if (options?.entriesDurable !== false) this.#markStable(rd.entries);
    if (rd.committed.length > 0) {
      this.#log.applied = Math.max(this.#log.applied, rd.committed[rd.committed.length - 1]!.index);
    }
    if (this.#role === "leader") {
      if (this.#maybeCommit() && !this.#lazyCommit) this.#needBroadcast = true;
    }
  }

  // -------------------------------------------------------------------------
  // Proposals and requests

  #propose(type: "normal" | "config", data: Uint8Array): StepResult {
    if (this.#role !== "leader") return { ok: false, reason: "not leader" };
    if (this.#leadTransferee !== "") return { ok: false, reason: "leadership transfer in progress" };
    const e: LogEntry = { index: this.#log.lastIndex() + 1, term: this.#term, type, data };
    this.#log.append([e]);
    if (type === "config") this.#addConfigEntry(e);
    this.#needBroadcast = true;
    // A single voter commits as soon as its own write is durable (see advance).
    return { ok: true, index: e.index, term: e.term };
  }

  #confChange(change: ConfChange): StepResult {
    if (this.#role !== "leader") return { ok: false, reason: "not leader" };
    if (!this.#committedInTerm()) return { ok: false, reason: "leader has not committed an entry in its term yet" };
    if (this.#configs[this.#configs.length - 1]!.index > this.#log.committed) {
      return { ok: false, reason: "a configuration change is still pending" };
    }
    const servers = this.configuration().servers.filter((s) => s.id !== change.id);
    if (change.op === "addVoter" || change.op === "addNonvoter") {
      if (change.id === "") return { ok: false, reason: "empty server id" };
      servers.push({ id: change.id, address: change.address, suffrage: change.op === "addVoter" ? "voter" : "nonvoter" });
    } else if (servers.length === this.configuration().servers.length) {
      return { ok: false, reason: `server "${change.id}" is not in the configuration` };
    }
    if (!servers.some((s) => s.suffrage === "voter")) return { ok: false, reason: "cannot remove the last voter" };
    return this.#propose("config", encodeConfiguration({ servers }));
  }

  #readIndex(ctx: number): StepResult {
    if (this.#role !== "leader") {
      this.#readStates.push({ ctx, index: 0, ok: false });
      return { ok: false, reason: "not leader" };
    }
    if (!this.#committedInTerm()) {
      this.#readsBeforeCommit.push(ctx);
      return { ok: true };
    }
    this.#addRead(ctx);
    return { ok: true };
  }

  #addRead(ctx: number): void {
    const voters = this.#voters();
    if (voters.length === 1 && voters[0] === this.id) {
      this.#readStates.push({ ctx, index: this.#log.committed, ok: true });
      return;
    }
    this.#reads.push({ ctx, index: this.#log.committed, round: 0 });
  }

  /**
   * Reads wait in a queue; a heartbeat round confirms every read queued
   * before it went out. A new round starts for queued reads only when no
   * read round is still out, so concurrent reads share rounds instead of
   * each costing one (etcd's linearizableReadLoop batches the same way); a
   * periodic heartbeat also takes the queued reads along.
   */
  #needsReadRound(): boolean {
    return this.#reads.length > 0 && this.#reads[0]!.round === 0;
  }

  #transferLeader(to: ServerId | undefined): StepResult {
    if (this.#role !== "leader") return { ok: false, reason: "not leader" };
    let target = to;
    if (target === undefined || target === "") {
      let best = -1;
      for (const s of this.configuration().servers) {
        const p = this.#progress.get(s.id);
        if (s.id !== this.id && s.suffrage === "voter" && p && p.match > best) {
          best = p.match;
          target = s.id;
        }
      }
    }
    if (!target || target === this.id) return { ok: false, reason: "no other voter to transfer to" };
    const server = this.configuration().servers.find((s) => s.id === target);
    const pr = this.#progress.get(target);
    if (!server || server.suffrage !== "voter" || !pr) return { ok: false, reason: `"${target}" is not a voter` };
    this.#logger.info("transferring leadership", { to: target, term: this.#term });
    this.#leadTransferee = target;
    this.#electionElapsed = 0;
    if (pr.match === this.#log.lastIndex()) this.#sendTimeoutNow(target);
    else this.#sendAppend(target, true);
    return { ok: true };
  }

  #snapshotDone(meta: SnapshotMeta, data: Uint8Array | undefined): StepResult {
    if (meta.index <= (this.#snapshot?.meta.index ?? 0)) return { ok: false, reason: "snapshot is not newer" };
    if (meta.index > this.#log.applied) return { ok: false, reason: "snapshot is ahead of the applied index" };
    if (this.#log.term(meta.index) !== meta.term) return { ok: false, reason: "snapshot term does not match the log" };
    if (!this.#streamSnapshots && data === undefined) return { ok: false, reason: "snapshot without data" };
    this.#snapshot = this.#streamSnapshots ? { meta } : { meta, data };
    const compactTo = meta.index - this.#trailingLogs;
    if (compactTo > this.#log.offsetIndex) {
      this.#log.compact(compactTo);
      this.#compactConfigs();
    }
    return { ok: true, index: meta.index, term: meta.term };
  }

  #restoreUser(stateIndex: number, sizeBytes: number, contentId: string | undefined): StepResult {
    if (this.#role !== "leader") return { ok: false, reason: "not leader" };
    if (!this.#streamSnapshots) return { ok: false, reason: "restore needs streamSnapshots" };
    if (this.#leadTransferee !== "") return { ok: false, reason: "leadership transfer in progress" };
    if (!Number.isSafeInteger(stateIndex) || stateIndex < 0 || !Number.isSafeInteger(sizeBytes) || sizeBytes < 0) {
      return { ok: false, reason: "bad snapshot index or size" };
    }
    // hashicorp/raft restoreUserSnapshot: no restore while a configuration change is outstanding.
    if (this.#configs[this.#configs.length - 1]!.index > this.#log.committed) {
      return { ok: false, reason: "a configuration change is still pending" };
    }
    // Above everything in the log (and in the snapshot's own history), with
    // a hole before it: followers cannot match an entry there, so
    // replication faults and sends them the snapshot.
    const index = Math.max(this.#log.lastIndex(), stateIndex) + 1;
    // Room for the noop and the log after it (an index is a safe integer on every server).
    if (index > maxRestoreIndex) return { ok: false, reason: `snapshot index ${stateIndex} is out of range` };
    const term = this.#term;
    const configuration = this.configuration();
    const meta: SnapshotMeta = { index, term, configuration, sizeBytes, userRestore: true };
    if (contentId !== undefined && contentId !== "") meta.contentId = contentId;
    this.#logger.info("restoring a user snapshot", { index, term, sizeBytes, droppedEntries: this.#log.lastIndex() - this.#log.committed });
    this.#log.restore(index, term);
    this.#configs = [{ index, config: configuration }];
    this.#snapshot = { meta };
    for (const id of this.#progress.keys()) {
      const p = new Progress(index + 1);
      p.recentActive = true;
      this.#progress.set(id, p);
    }
    // A noop after it: once it commits, a quorum holds the restored state.
    this.#log.append([{ index: index + 1, term, type: "noop", data: new Uint8Array(0) }]);
    for (const [id, pr] of this.#progress) this.#startSnapshot(id, pr);
    return { ok: true, index, term };
  }

  // -------------------------------------------------------------------------
  // Time

  #tick(): void {
    this.#ticks++;
    this.#leaderContactElapsed++;
    if (this.#role === "leader") {
      this.#leaderContactElapsed = 0;
      this.#heartbeatElapsed++;
      this.#electionElapsed++;
      if (this.#electionElapsed >= this.#electionTicks) {
        this.#electionElapsed = 0;
        if (this.#checkQuorum) {
          const ok = hasQuorum(this.#voters(), (id) => id === this.id || this.#progress.get(id)?.recentActive === true);
          for (const p of this.#progress.values()) p.recentActive = false;
          if (!ok) {
            this.#logger.warn("stepping down: no quorum heard within the election timeout", { term: this.#term });
            this.#becomeFollower(this.#term, "");
            return;
          }
        }
        if (this.#leadTransferee !== "") {
          this.#logger.info("leadership transfer timed out", { to: this.#leadTransferee });
          this.#leadTransferee = "";
        }
      }
      if (this.#heartbeatElapsed >= this.#heartbeatTicks) {
        this.#heartbeatElapsed = 0;
        this.#bcastHeartbeat();
      }
      for (const [t, at] of this.#roundTick) {
        if (this.#ticks - at > 2 * this.#electionTicks) this.#roundTick.delete(t);
      }
      return;
    }
    this.#electionElapsed++;
    if (this.#promotable() && this.#electionElapsed >= this.#randomizedTimeout) {
      this.#electionElapsed = 0;
      this.#campaign(this.#preVote ? "pre" : "election");
    }
  }

  // -------------------------------------------------------------------------
  // Messages

  #drop(m: RaftMessage, why: string): void {
    this.stats.droppedMessages++;
    this.#logger.debug("dropped message", { type: m.type, from: m.from, term: m.term, why });
  }

  #stepMessage(m: RaftMessage): void {
    if (m.to !== this.id) return this.#drop(m, "addressed to another server");
    if (m.from === this.id || m.from === "") return this.#drop(m, "bad sender");
    // Drivers' own traffic (a restore's bytes sent ahead): no term, no state here.
    if (m.type === "prefetch" || m.type === "prefetchResp") return this.#drop(m, "prefetch traffic is the driver's");
    if (m.term > this.#term) {
      if (m.type === "vote" && !m.transfer && this.#checkQuorum && this.#leaderContactElapsed < this.#electionTicks) {
        // In a leader's lease: refuse to disturb it (thesis §4.2.3).
        this.#logger.debug("ignoring vote request within leader lease", { from: m.from, term: m.term, pre: m.pre });
        return;
      }
      const keepTerm = (m.type === "vote" && m.pre) || (m.type === "voteResp" && m.pre && m.granted);
      if (!keepTerm) {
        const fromLeader = m.type === "append" || m.type === "heartbeat" || m.type === "snapshot";
        this.#logger.info("newer term seen", { term: m.term, from: m.from, type: m.type });
        this.#becomeFollower(m.term, fromLeader ? m.from : "");
      }
    } else if (m.term < this.#term) {
      if ((this.#checkQuorum || this.#preVote) && (m.type === "append" || m.type === "heartbeat")) {
        // Tell a stale leader about the newer term so it steps down.
        this.#send({ type: "appendResp", from: this.id, to: m.from, term: this.#term, index: 0, reject: true, rejectHint: 0, hintTerm: 0 });
      } else if (m.type === "vote" && m.pre) {
        this.#send({ type: "voteResp", from: this.id, to: m.from, term: this.#term, pre: true, granted: false });
      }
      return;
    }

    if (m.type === "vote") return this.#handleVote(m);
    switch (this.#role) {
      case "follower":
        return this.#stepFollower(m);
      case "preCandidate":
      case "candidate":
        return this.#stepCandidate(m);
      case "leader":
        return this.#stepLeader(m);
    }
  }

  #handleVote(m: VoteRequest): void {
    const canVote = this.#vote === m.from || (this.#vote === "" && this.#lead === "") || (m.pre && m.term > this.#term);
    if (canVote && this.#log.isUpToDate(m.lastIndex, m.lastTerm)) {
      this.#send({ type: "voteResp", from: this.id, to: m.from, term: m.term, pre: m.pre, granted: true });
      if (!m.pre) {
        this.#electionElapsed = 0;
        this.#vote = m.from;
      }
    } else {
      this.#send({ type: "voteResp", from: this.id, to: m.from, term: this.#term, pre: m.pre, granted: false });
    }
  }

  #stepFollower(m: RaftMessage): void {
    switch (m.type) {
      case "append":
      case "heartbeat":
      case "snapshot":
        this.#electionElapsed = 0;
        this.#leaderContactElapsed = 0;
        this.#lead = m.from;
        if (m.type === "append") this.#handleAppend(m);
        else if (m.type === "heartbeat") this.#handleHeartbeat(m);
        else this.#handleSnapshot(m);
        return;
      case "timeoutNow":
        if (!this.#promotable()) return this.#drop(m, "timeoutNow to a non-voter");
        this.#logger.info("campaigning on leadership transfer", { from: m.from, term: this.#term });
        this.#campaign("transfer");
        return;
      default:
        return; // stale responses
    }
  }

  #stepCandidate(m: RaftMessage): void {
    switch (m.type) {
      case "append":
      case "heartbeat":
      case "snapshot":
        this.#becomeFollower(this.#term, m.from);
        this.#stepFollower(m);
        return;
      case "voteResp": {
        if (m.pre !== (this.#role === "preCandidate")) return;
        this.#votes.set(m.from, m.granted);
        const result = voteResult(this.#voters(), this.#votes);
        if (result === "won") {
          if (this.#role === "preCandidate") this.#campaign("election");
          else this.#becomeLeader();
        } else if (result === "lost") {
          this.#becomeFollower(this.#term, "");
        }
        return;
      }
      default:
        return;
    }
  }

  #stepLeader(m: RaftMessage): void {
    const pr = this.#progress.get(m.from);
    if (!pr) return this.#drop(m, "from a server not in the configuration");
    switch (m.type) {
      case "appendResp":
        pr.recentActive = true;
        return this.#handleAppendResp(m, pr);
      case "heartbeatResp":
        pr.recentActive = true;
        return this.#handleHeartbeatResp(m, pr);
      case "snapshotResp":
        pr.recentActive = true;
        return this.#handleSnapshotResp(m, pr);
      default:
        return;
    }
  }

  // -------------------------------------------------------------------------
  // Follower side of replication

  #handleAppend(m: AppendRequest): void {
    const log = this.#log;
    const reply = (r: Partial<AppendResponse>): void =>
      this.#send({ type: "appendResp", from: this.id, to: m.from, term: this.#term, index: 0, reject: false, rejectHint: 0, hintTerm: 0, ...r });
    if (m.prevIndex < log.committed) {
      reply({ index: log.committed });
      return;
    }
    if (!log.matchTerm(m.prevIndex, m.prevTerm)) {
      const hint = Math.min(m.prevIndex, log.lastIndex());
      const c = log.findConflictByTerm(hint, m.prevTerm);
      reply({ index: m.prevIndex, reject: true, rejectHint: c.index, hintTerm: c.term });
      return;
    }
    const lastBefore = log.lastIndex();
    const truncated = log.appendAfter(m.entries);
    if (truncated === -1) {
      this.#logger.error("leader tried to overwrite committed entries; dropping", { from: m.from, committed: log.committed });
      this.stats.droppedMessages++;
      return;
    }
    if (truncated > 0) {
      this.#configs = this.#configs.filter((c, i) => i === 0 || c.index < truncated);
    }
    const from = truncated > 0 ? truncated : lastBefore + 1;
    for (const e of m.entries) {
      if (e.index >= from && e.type === "config") this.#addConfigEntry(e);
    }
    const lastNew = m.prevIndex + m.entries.length;
    log.commitTo(Math.min(m.commit, lastNew));
    reply({ index: lastNew });
  }

  #handleHeartbeat(m: HeartbeatRequest): void {
    this.#log.commitTo(m.commit);
    this.#send({ type: "heartbeatResp", from: this.id, to: m.from, term: this.#term, ctx: m.ctx });
  }

  #handleSnapshot(m: SnapshotRequest): void {
    const reply = (offset: number, reject = false): void =>
      this.#send({ type: "snapshotResp", from: this.id, to: m.from, term: this.#term, index: m.meta.index, offset, reject });
    if (m.meta.index <= this.#log.committed) {
      this.#incoming = undefined;
      this.#send({ type: "appendResp", from: this.id, to: m.from, term: this.#term, index: this.#log.committed, reject: false, rejectHint: 0, hintTerm: 0 });
      return;
    }
    const cur = this.#incoming;
    const sameSnap = cur !== undefined && cur.meta.index === m.meta.index && cur.meta.term === m.meta.term;
    // A first chunk starts a transfer, unless it is a late duplicate of the one in progress.
    if (m.offset === 0 && !(sameSnap && cur.received > 0)) {
      // The driver may hold the first bytes already (sent ahead of a user
      // restore's install): take them as received, and ask for the rest.
      const pre = this.#streamSnapshots && m.prefetched !== undefined && m.prefetched <= m.meta.sizeBytes ? m.prefetched : 0;
      this.#incoming = { from: m.from, meta: m.meta, chunks: [], received: pre };
      if (pre > 0) {
        this.#chunksOut.push({ meta: m.meta, offset: 0, chunk: new Uint8Array(0), done: pre === m.meta.sizeBytes, prefetched: pre });
        if (pre < m.meta.sizeBytes) {
          reply(pre);
          return;
        }
        this.#incoming = undefined;
        this.#finishIncoming(m, pre, reply);
        return;
      }
    }
    const inc = this.#incoming;
    if (!inc || inc.meta.index !== m.meta.index || inc.meta.term !== m.meta.term || inc.received !== m.offset) {
      reply(inc && inc.meta.index === m.meta.index ? inc.received : 0);
      return;
    }
    if (inc.received + m.chunk.length > m.meta.sizeBytes) {
      this.#incoming = undefined;
      this.stats.droppedMessages++;
      reply(0, true);
      return;
    }
    if (this.#streamSnapshots) this.#chunksOut.push({ meta: m.meta, offset: m.offset, chunk: m.chunk, done: m.done });
    else inc.chunks.push(m.chunk);
    inc.received += m.chunk.length;
    if (!m.done) {
      reply(inc.received);
      return;
    }
    this.#incoming = undefined;
    this.#finishIncoming(m, inc.received, reply, inc.chunks);
  }

  /** The last bytes of a snapshot came (`received` in all): install it, unless it is short or we hold its entry. */
  #finishIncoming(m: SnapshotRequest, received: number, reply: (offset: number, reject?: boolean) => void, chunks: Uint8Array[] = []): void {
    if (received !== m.meta.sizeBytes) {
      this.stats.droppedMessages++;
      reply(0, true);
      return;
    }
    if (this.#log.matchTerm(m.meta.index, m.meta.term)) {
      // We already hold that entry (a late or duplicated snapshot): keep our
      // log, whose tail we may have acknowledged, and just learn the commit.
      this.#log.commitTo(m.meta.index);
      this.#send({ type: "appendResp", from: this.id, to: m.from, term: this.#term, index: m.meta.index, reject: false, rejectHint: 0, hintTerm: 0 });
      return;
    }
    if (this.#streamSnapshots) {
      this.#installSnapshot(m.meta, undefined);
    } else {
      this.#installSnapshot(m.meta, concatBytes(chunks));
    }
    reply(m.meta.sizeBytes);
  }

  #installSnapshot(meta: SnapshotMeta, data: Uint8Array | undefined): void {
    this.#logger.info("installing snapshot from leader", { index: meta.index, term: meta.term, sizeBytes: meta.sizeBytes });
    this.stats.snapshotsInstalled++;
    this.#log.restore(meta.index, meta.term);
    this.#configs = [{ index: meta.index, config: meta.configuration }];
    this.#snapshot = data ? { meta, data } : { meta };
    this.#pendingInstall = data ? { meta, data } : { meta };
  }

  // -------------------------------------------------------------------------
  // Leader side of replication

  #handleAppendResp(m: AppendResponse, pr: Progress): void {
    if (m.reject) {
      const hint = m.hintTerm > 0 ? this.#log.findConflictByTerm(m.rejectHint, m.hintTerm).index : m.rejectHint;
      if (pr.state === "probe" && m.index === pr.match && pr.next === pr.match + 1 && hint < pr.match) {
        // The follower no longer has entries it acknowledged (a disk that
        // lied about fsync, or a late message). Probing at match+1 would
        // loop forever; believe the follower and back off below match.
        this.#logger.warn("follower lost acknowledged entries; probing lower", { to: m.from, match: pr.match, hint });
        pr.match = hint;
        pr.next = hint + 1;
        pr.paused = false;
        this.#sendAppend(m.from, false);
        return;
      }
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.#sendAppend(m.from, false);
      }
      return;
    }
    const advanced = pr.maybeUpdate(m.index);
    if (!advanced) {
      // A probe answered at the match we already knew still proves where the
      // logs meet: start pipelining (etcd does the same).
      if (pr.state === "probe" && m.index === pr.match) {
        pr.becomeReplicate();
        this.#sendAppendLoop(m.from);
      }
      return;
    }
    if (pr.state === "probe") pr.becomeReplicate();
    else if (pr.state === "snapshot" && pr.match >= pr.pendingSnapshot) pr.becomeProbe();
    if (this.#maybeCommit() && !this.#lazyCommit) this.#needBroadcast = true;
    else this.#sendAppendLoop(m.from);
    if (m.from === this.#leadTransferee && pr.match === this.#log.lastIndex()) this.#sendTimeoutNow(m.from);
  }

  #handleHeartbeatResp(m: HeartbeatResponse, pr: Progress): void {
    if (m.ctx > pr.ackedRound) pr.ackedRound = m.ctx;
    if (pr.state === "probe") pr.paused = false;
    // The link works but an append sent well before this heartbeat is still
    // unanswered: it was lost (or the follower restarted). Probe again.
    const sentAt = this.#roundTick.get(m.ctx);
    const oldest = pr.inflight[0];
    if (pr.state === "replicate" && oldest && sentAt !== undefined && sentAt - oldest.tick >= Math.max(2, this.#electionTicks >> 1)) {
      pr.becomeProbe();
    }
    // Behind: probe (even with nothing new to send, so a follower whose
    // next index is past our log still learns where the logs meet).
    if (pr.match < this.#log.lastIndex()) {
      if (pr.state !== "probe") this.#sendAppendLoop(m.from);
      else if (this.#sendAppend(m.from, true)) this.#sendAppendLoop(m.from);
    }
    if (this.#reads.length > 0) {
      const voters = this.#voters();
      const q = committedIndex(voters, (id) => (id === this.id ? this.#round : this.#progress.get(id)?.ackedRound ?? 0));
      while (this.#reads.length > 0 && this.#reads[0]!.round !== 0 && this.#reads[0]!.round <= q) {
        const r = this.#reads.shift()!;
        this.#readStates.push({ ctx: r.ctx, index: r.index, ok: true });
      }
    }
  }

  #handleSnapshotResp(m: SnapshotResponse, pr: Progress): void {
    if (pr.state !== "snapshot" || m.index !== pr.pendingSnapshot) return;
    pr.snapshotSentTick = this.#ticks; // the follower is alive and answering: no resend yet
    if (m.reject) {
      pr.snapshotOffset = 0;
      pr.paused = false;
      return;
    }
    if (m.offset >= (this.#snapshot?.meta.sizeBytes ?? 0) && this.#snapshot?.meta.index === m.index) {
      pr.match = Math.max(pr.match, m.index);
      pr.becomeProbe();
      this.#sendAppend(m.from, true);
      return;
    }
    // The follower says which byte it wants next. Progress: fill the
    // window again. Otherwise (a duplicate, or the follower lost its partial
    // copy) just remember it; the next resend starts there, so duplicates
    // cannot multiply into a storm of chunks.
    const progressed = m.offset > pr.snapshotOffset;
    pr.snapshotOffset = m.offset;
    if (pr.snapshotSent < m.offset || !progressed) pr.snapshotSent = m.offset;
    if (progressed) this.#sendSnapshotChunk(m.from, pr);
  }

  #maybeCommit(): boolean {
    const voters = this.#voters();
    const idx = committedIndex(voters, (id) => (id === this.id ? this.#log.stabled : this.#progress.get(id)?.match ?? 0));
    if (idx <= this.#log.committed || this.#log.term(idx) !== this.#term) return false;
    this.#log.commitTo(idx);
    if (this.#readsBeforeCommit.length > 0) {
      const ctxs = this.#readsBeforeCommit;
      this.#readsBeforeCommit = [];
      for (const c of ctxs) this.#addRead(c);
    }
    const cfg = this.#configs[this.#configs.length - 1]!;
    if (cfg.index <= this.#log.committed && !this.#isVoter(this.id)) {
      this.#logger.info("stepping down: removed from the configuration", { index: cfg.index });
      this.#becomeFollower(this.#term, "");
    }
    return true;
  }

  #bcastAppend(): void {
    for (const id of this.#progress.keys()) {
      if (this.#sendAppend(id, true)) this.#sendAppendLoop(id);
    }
  }

  #sendAppendLoop(to: ServerId): void {
    for (let i = 0; i < this.#maxInflight + 1; i++) {
      if (!this.#sendAppend(to, false)) return;
    }
  }

  /** Send the next batch to `to`; returns whether anything was sent. */
  #sendAppend(to: ServerId, sendIfEmpty: boolean): boolean {
    const pr = this.#progress.get(to);
    if (!pr) return false;
    if (pr.state === "snapshot") return false;
    if (pr.isPaused(this.#maxInflight)) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.#log.term(prevIndex);
    if (prevTerm === undefined) {
      if (prevIndex > this.#log.lastIndex()) {
        pr.next = this.#log.lastIndex() + 1;
        return false;
      }
      return this.#startSnapshot(to, pr);
    }
    const entries: LogEntry[] = [];
    let bytes = 0;
    for (let i = pr.next; i <= this.#log.lastIndex() && entries.length < this.#maxEntries; i++) {
      const e = this.#log.entry(i)!;
      if (entries.length > 0 && bytes + e.data.length > this.#maxBytes) break;
      entries.push(e);
      bytes += e.data.length;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.#send({ type: "append", from: this.id, to, term: this.#term, prevIndex, prevTerm, entries, commit: this.#log.committed });
    // The follower commits up to min(commit, its last new entry).
    pr.commitSent = Math.max(pr.commitSent, Math.min(this.#log.committed, prevIndex + entries.length));
    pr.sentEntries(prevIndex + entries.length, entries.length, this.#ticks);
    return entries.length > 0;
  }

  #startSnapshot(to: ServerId, pr: Progress): boolean {
    const snap = this.#snapshot;
    if (!snap) {
      this.#logger.error("follower needs compacted entries but there is no snapshot", { to });
      return false;
    }
    this.#logger.info("sending snapshot", { to, index: snap.meta.index, sizeBytes: snap.meta.sizeBytes });
    this.stats.snapshotsSent++;
    pr.becomeSnapshot(snap.meta.index);
    this.#sendSnapshotChunk(to, pr);
    return true;
  }

  /** Send chunks from what the follower wants (or `resend`: from what it acknowledged) until the window is full. */
  #sendSnapshotChunk(to: ServerId, pr: Progress, resend = false): void {
    const snap = this.#snapshot;
    if (!snap) return;
    if (pr.pendingSnapshot !== snap.meta.index) {
      pr.becomeSnapshot(snap.meta.index);
    }
    if (this.#snapshotWindow === 1 && this.#snapshotResendTicks === 0) return this.#sendOneChunk(to, pr, pr.snapshotOffset);
    const size = snap.data?.length ?? snap.meta.sizeBytes;
    if (resend) {
      // Only the first chunk the follower has not acknowledged; its answer
      // says where it is, and the window refills from there.
      this.#sendOneChunk(to, pr, pr.snapshotOffset);
      pr.snapshotSent = Math.min(size, pr.snapshotOffset + this.#chunkBytes);
      pr.snapshotSentTick = this.#ticks;
      return;
    }
    if (pr.snapshotSent < pr.snapshotOffset) pr.snapshotSent = pr.snapshotOffset;
    const limit = pr.snapshotOffset + this.#snapshotWindowOf(to, pr) * this.#chunkBytes;
    do {
      if (pr.snapshotSent >= limit) break;
      const off = pr.snapshotSent;
      this.#sendOneChunk(to, pr, off);
      pr.snapshotSent = Math.min(size, off + this.#chunkBytes);
      if (off >= size) break;
    } while (pr.snapshotSent < size);
    pr.snapshotSentTick = this.#ticks;
  }

  /**
   * Chunks in flight to `to`. The followers a quorum needs get a snapshot
   * first: when enough other voters (as many as a quorum needs besides us)
   * are receiving the same snapshot, answering, and further along (or as
   * far, with a smaller id), `to` gets one chunk at a time. On a leader short
   * of CPU, shipping to every follower at once delayed the quorum (an
   * operator's restore waits for it) by as much as it had followers; the
   * trickle keeps the others moving, and one that gets ahead takes the lead.
   * A user restore sent ahead starts with one chunk too.
   */
  #snapshotWindowOf(to: ServerId, pr: Progress): number {
    if (this.#snapshotWindow === 1) return 1;
    // A user restore's bytes were sent ahead (SnapshotMeta.contentId): the
    // answer to the first chunk says how many the follower holds already.
    if (this.#snapshot?.meta.contentId !== undefined && pr.snapshotOffset === 0) return 1;
    const voters = this.#voters();
    const needed = this.peersForQuorum();
    if (needed <= 0) return this.#snapshotWindow;
    let ahead = 0;
    for (const [id, other] of this.#progress) {
      if (id === to || id === this.id || !voters.includes(id)) continue;
      if (other.state !== "snapshot" || other.pendingSnapshot !== pr.pendingSnapshot || !other.recentActive) continue;
      if (other.snapshotOffset > pr.snapshotOffset || (other.snapshotOffset === pr.snapshotOffset && id < to)) ahead++;
    }
    return ahead >= needed ? 1 : this.#snapshotWindow;
  }

  #sendOneChunk(to: ServerId, pr: Progress, offset: number): void {
    const snap = this.#snapshot!;
    if (snap.data === undefined) {
      // Streaming: the driver reads the bytes from its snapshot store.
      const size = snap.meta.sizeBytes;
      const off = Math.min(offset, size);
      const fillBytes = Math.min(this.#chunkBytes, size - off);
      this.#send({ type: "snapshot", from: this.id, to, term: this.#term, meta: snap.meta, offset: off, chunk: new Uint8Array(0), done: off + fillBytes >= size, fillBytes });
      pr.paused = true;
      return;
    }
    const off = Math.min(offset, snap.data.length);
    const chunk = snap.data.subarray(off, off + this.#chunkBytes);
    this.#send({
      type: "snapshot",
      from: this.id,
      to,
      term: this.#term,
      meta: snap.meta,
      offset: off,
      chunk,
      done: off + chunk.length >= snap.data.length,
    });
    pr.paused = true;
  }

  #bcastHeartbeat(): void {
    this.#round++;
    this.#roundTick.set(this.#round, this.#ticks);
    // Reads queued (round 0, at the tail) ride on this round: it leaves after they began.
    for (let i = this.#reads.length - 1; i >= 0 && this.#reads[i]!.round === 0; i--) this.#reads[i]!.round = this.#round;
    for (const [id, pr] of this.#progress) {
      const commit = Math.min(pr.match, this.#log.committed);
      this.#send({ type: "heartbeat", from: this.id, to: id, term: this.#term, commit, ctx: this.#round });
      pr.commitSent = Math.max(pr.commitSent, commit);
      // Resend what may have been lost (with a resend timeout: only once no answer came for that long).
      if (pr.state === "snapshot" && (this.#snapshotResendTicks === 0 || this.#ticks - pr.snapshotSentTick >= this.#snapshotResendTicks)) {
        this.#sendSnapshotChunk(id, pr, true);
      }
    }
  }

  #sendTimeoutNow(to: ServerId): void {
    this.#leaseDisabled = true;
    this.#send({ type: "timeoutNow", from: this.id, to, term: this.#term });
  }

  // -------------------------------------------------------------------------
  // Roles

  #campaign(kind: "pre" | "election" | "transfer"): void {
    this.stats.elections++;
    if (kind === "pre") {
      this.#reset(this.#term);
      this.#role = "preCandidate";
      this.#lead = "";
    } else {
      this.#reset(this.#term + 1);
      this.#role = "candidate";
      this.#vote = this.id;
    }
    this.#logger.debug("campaigning", { kind, term: this.#term });
    this.#votes = new Map([[this.id, true]]);
    const result = voteResult(this.#voters(), this.#votes);
    if (result === "won") {
      if (kind === "pre") this.#campaign("election");
      else this.#becomeLeader();
      return;
    }
    const term = kind === "pre" ? this.#term + 1 : this.#term;
    for (const v of this.#voters()) {
      if (v === this.id) continue;
      this.#send({
        type: "vote",
        from: this.id,
        to: v,
        term,
        pre: kind === "pre",
        lastIndex: this.#log.lastIndex(),
        lastTerm: this.#log.lastTerm(),
        transfer: kind === "transfer",
      });
    }
  }

  #becomeLeader(): void {
    this.#reset(this.#term);
    this.#role = "leader";
    this.#lead = this.id;
    this.#leaderContactElapsed = 0;
    this.#logger.info("became leader", { term: this.#term, lastIndex: this.#log.lastIndex() });
    this.#progress = new Map();
    for (const s of this.configuration().servers) {
      if (s.id === this.id) continue;
      const p = new Progress(this.#log.lastIndex() + 1);
      p.recentActive = true;
      this.#progress.set(s.id, p);
    }
    this.#log.append([{ index: this.#log.lastIndex() + 1, term: this.#term, type: "noop", data: new Uint8Array(0) }]);
    this.#needBroadcast = true;
  }

  #becomeFollower(term: number, lead: ServerId): void {
    const wasLeader = this.#role === "leader";
    this.#reset(term);
    this.#role = "follower";
    this.#lead = lead;
    if (lead !== "") this.#leaderContactElapsed = 0;
    if (wasLeader) this.#logger.info("stepped down", { term, leader: lead });
  }

  #reset(term: number): void {
    if (this.#term !== term) {
      this.#term = term;
      this.#vote = "";
    }
    this.#lead = "";
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#resetRandomizedTimeout();
    this.#votes = new Map();
    this.#leadTransferee = "";
    this.#leaseDisabled = false;
    this.#needBroadcast = false;
    this.#incoming = undefined;
    for (const r of this.#reads) this.#readStates.push({ ctx: r.ctx, index: 0, ok: false });
    for (const c of this.#readsBeforeCommit) this.#readStates.push({ ctx: c, index: 0, ok: false });
    this.#reads = [];
    this.#readsBeforeCommit = [];
    if (this.#role === "leader") this.#progress = new Map();
  }

  /**
   * Leave the leader's lease now (grant others' votes) and campaign within
   * 1 to 3 ticks instead of after the randomized timeout. Followers that
   * still hear the leader keep its lease and refuse the pre-vote, so a
   * spurious hint on one server disturbs nothing; a heartbeat from the
   * leader puts everything back.
   */
  #leaderUnreachable(leader: ServerId): StepResult {
    if (this.#role !== "follower" || leader === "" || this.#lead !== leader) return { ok: false, reason: "not following that leader" };
    this.#logger.info("leader connection lost; campaigning early", { leader, term: this.#term });
    this.#leaderContactElapsed = Math.max(this.#leaderContactElapsed, this.#electionTicks);
    this.#electionElapsed = Math.max(this.#electionElapsed, this.#randomizedTimeout - 1 - this.#rng.int(3));
    return { ok: true };
  }

  #resetRandomizedTimeout(): void {
    this.#randomizedTimeout = this.#electionTicks + this.#rng.int(this.#electionTicks);
  }

  // -------------------------------------------------------------------------
  // Helpers

  #send(m: RaftMessage): void {
    this.#msgs.push(m);
  }

  #hardState(): HardState {
    return { term: this.#term, vote: this.#vote, commit: this.#log.committed };
  }

  #committedInTerm(): boolean {
    return this.#log.term(this.#log.committed) === this.#term;
  }

  #voters(): ServerId[] {
    return this.configuration().servers.filter((s) => s.suffrage === "voter").map((s) => s.id);
  }

  #isVoter(id: ServerId): boolean {
    return this.configuration().servers.some((s) => s.id === id && s.suffrage === "voter");
  }

  #promotable(): boolean {
    return this.#isVoter(this.id);
  }

  #addConfigEntry(e: LogEntry): void {
    const config = decodeConfiguration(e.data);
    if (!config) {
      this.#logger.error("undecodable configuration entry; ignoring", { index: e.index });
      return;
    }
    this.#configs.push({ index: e.index, config });
    this.#applyConfig(config);
  }

  /** A new configuration takes effect at once: leaders track new servers and forget removed ones. */
  #applyConfig(config: Configuration): void {
    if (this.#role !== "leader") return;
    const ids = new Set(config.servers.map((s: ServerEntry) => s.id));
    for (const id of [...this.#progress.keys()]) if (!ids.has(id)) this.#progress.delete(id);
    for (const s of config.servers) {
      if (s.id === this.id || this.#progress.has(s.id)) continue;
      const p = new Progress(this.#log.lastIndex() + 1);
      p.recentActive = true;
      this.#progress.set(s.id, p);
    }
    if (this.#leadTransferee !== "" && !ids.has(this.#leadTransferee)) this.#leadTransferee = "";
  }

  #compactConfigs(): void {
    const off = this.#log.offsetIndex;
    const base = this.configurationAt(off);
    this.#configs = [{ index: off, config: base }, ...this.#configs.filter((c) => c.index > off)];
  }
}
