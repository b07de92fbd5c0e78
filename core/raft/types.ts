// The seams of cairn's Raft: the data shapes the pure core (raft.ts) speaks and
// the storage / network interfaces the driver (driver.ts) calls. Shaped after
// hashicorp/raft (`log.go`, `stable.go`, `snapshot.go`, `transport.go`,
// `fsm.go`) and etcd-io/raft (`raftpb`): every value here is a plain object of
// numbers, strings, booleans and Uint8Array, so msgpack encodes it as is.
//
// Stability: other layers (file stores, TCP transport, server) code against
// these; change them only by adding optional fields.

// ---------------------------------------------------------------------------
// Log, state, configuration

/** Server ID (Consul: the node ID). Unique and stable across restarts. */
export type ServerId = string;

/** `voter` counts towards quorum and may lead; `nonvoter` only replicates. */
export type Suffrage = "voter" | "nonvoter";

export interface ServerEntry {
  id: ServerId;
  /** Where the transport reaches this server, e.g. "10.0.0.5:8300". */
  address: string;
  suffrage: Suffrage;
}

/** The cluster membership. Stored in `config` log entries and in snapshot metadata. */
export interface Configuration {
  servers: ServerEntry[];
}

/**
 * `normal`: an application command for the Fsm.
 * `noop`: appended by a new leader to commit entries of earlier terms; never reaches the Fsm.
 * `config`: a membership change; `data` is `encodeConfiguration(config)` (codec.ts).
 *   It takes effect when appended, not when committed (single-server changes).
 */
export type EntryType = "normal" | "noop" | "config";

export interface LogEntry {
  /** 1-based, contiguous. */
  index: number;
  term: number;
  type: EntryType;
  data: Uint8Array;
}

/** What must survive a crash besides the log: persisted before any message that depends on it is sent. */
export interface HardState {
  term: number;
  /** Who we voted for in `term`; "" for nobody. */
  vote: ServerId;
  /** Highest index known committed (may lag after a restart; that is safe). */
  commit: number;
}

/** Highest index a user restore may take: far above any real log, far below where indexes stop being exact. */
export const maxRestoreIndex = 2 ** 52;

/** Describes a snapshot: the Fsm state after applying every entry up to `index`. */
export interface SnapshotMeta {
  index: number;
  term: number;
  /** The membership as of `index`. */
  configuration: Configuration;
  sizeBytes: number;
  /**
   * A snapshot an operator restored (hashicorp/raft Restore, `PUT
   * /v1/snapshot`): its state comes from elsewhere, at an index above
   * everything in the log. The Fsm restores it the same way on every server
   * (see Fsm.restore).
   */
  userRestore?: boolean;
  /**
   * A user restore's id for its bytes: the leader sent them to followers
   * ahead of the install, while the archive arrived (PrefetchRequest), and a
   * follower holding them under this id does not need them again.
   */
  contentId?: string;
}

// ---------------------------------------------------------------------------
// Messages (etcd-style: one-way; responses are messages too, so a transport
// only needs "deliver this object to that server", no request/response pairing)

interface MessageHeader {
  from: ServerId;
  to: ServerId;
  /** Sender's current term (for a pre-vote request: the term it would campaign at). */
  term: number;
  /**
   * Sender's transport address, set by the driver on every message so a
   * server that does not know the configuration yet (just added) can answer.
   */
  fromAddress?: string;
}

/** RequestVote or, with `pre`, the pre-vote round (Raft thesis §9.6). */
export interface VoteRequest extends MessageHeader {
  type: "vote";
  pre: boolean;
  lastIndex: number;
  lastTerm: number;
  /** Set when campaigning after TimeoutNow: voters ignore their leader lease. */
  transfer: boolean;
}

export interface VoteResponse extends MessageHeader {
  type: "voteResp";
  pre: boolean;
  granted: boolean;
}

export interface AppendRequest extends MessageHeader {
  type: "append";
  prevIndex: number;
  prevTerm: number;
  entries: LogEntry[];
  commit: number;
}

export interface AppendResponse extends MessageHeader {
  type: "appendResp";
  /** Accepted: the follower's log matches the leader's up to `index`. Rejected: the prevIndex refused. */
  index: number;
  reject: boolean;
  /** On reject: the follower's best guess of where the logs may match (fast back-off). */
  rejectHint: number;
  /** On reject: the term of the follower's entry at `rejectHint` (0 if none). */
  hintTerm: number;
}

/** Leader heartbeat; `ctx` > 0 also asks followers to confirm leadership for ReadIndex round `ctx`. */
export interface HeartbeatRequest extends MessageHeader {
  type: "heartbeat";
  commit: number;
  ctx: number;
}

export interface HeartbeatResponse extends MessageHeader {
  type: "heartbeatResp";
  ctx: number;
}

/** One chunk of InstallSnapshot; chunks go in order, `offset` is the byte offset of `chunk`. */
export interface SnapshotRequest extends MessageHeader {
  type: "snapshot";
  meta: SnapshotMeta;
  offset: number;
  chunk: Uint8Array;
  done: boolean;
  /**
   * Only between a streaming core and its driver, never on the wire: the
   * core holds no snapshot bytes, so `chunk` is empty and the driver reads
   * this many bytes at `offset` from the snapshot store before sending.
   */
  fillBytes?: number;
  /**
   * Only between a follower's driver and its core, never on the wire: the
   * driver already holds this many bytes of the snapshot (sent ahead under
   * meta.contentId, see PrefetchRequest), durable once the install finishes.
   */
  prefetched?: number;
}

export interface SnapshotResponse extends MessageHeader {
  type: "snapshotResp";
  /** meta.index of the snapshot being answered. */
  index: number;
  /** Next byte offset wanted; equals meta.sizeBytes when installed. */
  offset: number;
  reject: boolean;
}

/** Leadership transfer: the receiver campaigns at once (Raft thesis §3.10). */
export interface TimeoutNowRequest extends MessageHeader {
  type: "timeoutNow";
}

/**
 * A user restore's bytes sent ahead of its install (drivers only; the core
 * never sees these): while the leader still receives and checks the
 * operator's archive, it sends the state bytes written so far to every
 * follower, which writes them to a file of its snapshot store. When the
 * snapshot is installed and its InstallSnapshot names the same `id`
 * (SnapshotMeta.contentId), the follower answers with the bytes it already
 * holds, and only the rest travels. Nothing is acted on before that: bytes
 * of a restore that failed are thrown away with the next one, or at restart.
 */
export interface PrefetchRequest extends MessageHeader {
  type: "prefetch";
  id: string;
  offset: number;
  chunk: Uint8Array;
  /** Set once the bytes are complete (the archive checked out): their total. */
  total?: number;
  /** Between a driver and its transport only, as SnapshotRequest.fillBytes. */
  fillBytes?: number;
}

export interface PrefetchResponse extends MessageHeader {
  type: "prefetchResp";
  id: string;
  /** The next byte wanted (what the follower has written). */
  offset: number;
}

export type RaftMessage =
  | VoteRequest
  | VoteResponse
  | AppendRequest
  | AppendResponse
  | HeartbeatRequest
  | HeartbeatResponse
  | SnapshotRequest
  | SnapshotResponse
  | TimeoutNowRequest
  | PrefetchRequest
  | PrefetchResponse;

export type RaftMessageType = RaftMessage["type"];

// ---------------------------------------------------------------------------
// Storage seams. Every method resolves only once the effect is durable (fsync):
// the driver sends messages that depend on a write only after awaiting it.
// Implementations never hold a caller's arrays: copy what you keep.

export interface LogStore {
  /** Index of the first stored entry; 0 when empty. */
  firstIndex(): Promise<number>;
  /** Index of the last stored entry; 0 when empty. */
  lastIndex(): Promise<number>;
  /** Entries with lo <= index < hi, in order (fewer if the range is not stored). */
  getEntries(lo: number, hi: number): Promise<LogEntry[]>;
  /**
   * Append contiguous entries, durably. If entries[0].index <= lastIndex, every
   * stored entry with index >= entries[0].index is dropped first (a follower's
   * conflicting suffix). An empty store accepts any start index (after a snapshot).
   * A gap (entries[0].index > lastIndex + 1 on a non-empty store) rejects with a RangeError.
   */
  append(entries: LogEntry[]): Promise<void>;
  /** Delete entries with min <= index <= max, durably (compaction, or dropping the whole log before installing a snapshot). */
  deleteRange(min: number, max: number): Promise<void>;
  close(): Promise<void>;
}

export interface StableStore {
  /** The last saved HardState, or undefined on a fresh node. */
  load(): Promise<HardState | undefined>;
  /** Replace the HardState, durably. */
  save(state: HardState): Promise<void>;
  close(): Promise<void>;
}

/** A stored snapshot opened for reading, without loading it (hashicorp/raft SnapshotStore.Open). */
export interface SnapshotSource {
  readonly meta: SnapshotMeta;
  /**
   * Up to `length` bytes from `offset` (fewer only at the end). With `into`
   * (at least `length` bytes), a store may read into it and answer a view
   * of it, so a caller that is done with the bytes before its next read
   * allocates nothing per read.
   */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  /** The whole data as chunks, from the start. */
  stream(): AsyncIterable<Uint8Array>;
  /** Release it (a file store keeps the file open: a newer snapshot may delete its name meanwhile). */
  close(): Promise<void>;
}

/** A snapshot being written (hashicorp/raft SnapshotSink): nothing is visible until `finish`. */
export interface SnapshotSink {
  /** Bytes written so far. */
  readonly written: number;
  /** Bytes at the end: one chunk, or several end to end (written together). The caller keeps them unchanged until this resolves. */
  write(chunk: Uint8Array | readonly Uint8Array[]): Promise<void>;
  /**
   * Up to `length` bytes of what was written, from `offset` (waits for the
   * writes that cover them), as SnapshotSource.read: a user restore's bytes
   * are sent to followers from here while more arrive, when they are no
   * longer in memory (recent()).
   */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  /**
   * The written bytes at `offset` as views of the buffers given to write(),
   * when they are among the last few MiB written by a sink begun with
   * `keepRecent`; otherwise undefined (read() them). A user restore's bytes
   * go to followers from here while they keep up, with no copy and no read.
   */
  recent?(offset: number, length: number): Uint8Array[] | undefined;
  /**
   * Write what was written so far to disk (fdatasync), so that finish() has
   * little left to do: a user restore calls it before it pauses Raft to
   * install the snapshot (an fsync of a GiB inside that pause outlasted the
   * election timeout). Not a substitute for finish().
   */
  flush(): Promise<void>;
  /** Make it durable under `meta` (its sizeBytes is set to what was written) and keep the newest few. */
  finish(meta: SnapshotMeta): Promise<SnapshotMeta>;
  /** Throw it away. */
  cancel(): Promise<void>;
}

export interface SnapshotStore {
  /**
   * Store a snapshot durably (file stores: temp name, fsync, rename) and
   * keep only the newest few (hashicorp/raft retains 2).
   */
  create(meta: SnapshotMeta, data: Uint8Array): Promise<void>;
  /** The newest complete snapshot, or undefined. */
  latest(): Promise<{ meta: SnapshotMeta; data: Uint8Array } | undefined>;
  /**
   * Start writing a snapshot chunk by chunk (snapshots of any size: nothing
   * is held in memory). `backgroundFlush`: write what arrived to disk every
   * few MiB while more comes (a user restore's staged state, so its flush()
   * before Raft pauses is short). Off for an InstallSnapshot: on a follower
   * it halved the rate chunks were written at (writes waiting on pages
   * under writeback), which cost more than the one fsync at the end. On
   * for a follower's restore bytes sent ahead: they arrive at the pace of
   * the leader's upload, and their flush came at the install otherwise.
   * `keepRecent`: the sink keeps views of the last few MiB written, for
   * `recent()`; the caller never changes a buffer it wrote.
   */
  begin(options?: { backgroundFlush?: boolean; keepRecent?: boolean }): SnapshotSink;
  /** The newest complete snapshot (its checksum verified), open for reading; or the one with `meta`'s index and term. */
  open(which?: { index: number; term: number }): Promise<SnapshotSource | undefined>;
  /** Metadata of stored snapshots, newest first. */
  list(): Promise<SnapshotMeta[]>;
  close(): Promise<void>;
}

/**
 * Best-effort, unordered, one-way delivery of RaftMessages between servers.
 * Raft tolerates loss, duplication and reordering; the transport must not
 * block the caller (queue, drop when a peer is slow or down). Messages are
 * encoded with `encodeRaftMessage` and decoded with `decodeRaftMessage`
 * (codec.ts), which validates peer input and never throws.
 */
export interface RaftTransport {
  /** The address other servers use to reach this one. */
  readonly localAddress: string;
  /** Queue `msg` for the server at `target.address`; never throws, never awaits. */
  send(target: { id: ServerId; address: string }, msg: RaftMessage): void;
  /**
   * Optional: an InstallSnapshot message whose `chunkBytes` bytes of chunk
   * the caller writes into `chunk` (a view of the encoded frame) before
   * calling `send()`, which queues it as `send(target, msg)` would with that
   * chunk; `msg.chunk` is ignored. The chunk is read from the snapshot file
   * straight into the frame, never copied. Without it (the simulation's
   * transport, which keeps message objects) the driver reads each chunk into
   * a buffer of its own and calls `send`.
   */
  prepareSnapshotChunk?(target: { id: ServerId; address: string }, msg: SnapshotRequest | PrefetchRequest, chunkBytes: number): { chunk: Uint8Array; send(): void } | undefined;
  /**
   * Optional: the same message with its chunk given as parts end to end
   * (bytes already in memory, which nobody changes: a restore's upload),
   * queued as they are after the message's head, never joined. False when
   * it was dropped.
   */
  sendSnapshotChunkParts?(target: { id: ServerId; address: string }, msg: SnapshotRequest | PrefetchRequest, parts: readonly Uint8Array[]): boolean;
  /** Register the single receiver of inbound messages (replaces any earlier one). */
  onMessage(handler: (msg: RaftMessage) => void): void;
  /**
   * Optional: put what `send` queued on the wire now rather than at the end
   * of the event-loop turn. The driver calls it once per Ready, so a leader's
   * appends leave before it encodes and writes its own copy.
   */
  flush?(): void;
  close(): Promise<void>;
}

/**
 * The replicated state machine (hashicorp/raft `fsm.go`). `apply` is called
 * once per committed `normal` entry, in index order, on every server; it must
 * be deterministic (no wall clock, no randomness) and its return value is
 * handed back to the proposer on the leader.
 */
export interface Fsm {
  apply(index: number, data: Uint8Array): unknown;
  /** The full state after the last applied entry. */
  snapshot(): Promise<Uint8Array> | Uint8Array;
  /** Replace the whole state with a snapshot's. */
  restore(data: Uint8Array): Promise<void> | void;
  /**
   * Optional, for state of any size: the point-in-time state as lazy
   * chunks (captured when called), written straight to a SnapshotSink.
   */
  snapshotStream?(): Iterable<Uint8Array> | AsyncIterable<Uint8Array>;
  /**
   * Optional: restore from the stored snapshot as it is read (its `stream()`
   * or its `read()` at offsets) rather than from one buffer. `src.meta` says
   * which snapshot it is (a `userRestore` one is restored the same way on
   * every server). Without it, the driver reads the snapshot into one buffer.
   */
  restoreStream?(src: SnapshotSource): Promise<void>;
}
