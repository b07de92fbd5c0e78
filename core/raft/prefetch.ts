// A user restore's bytes sent ahead of its install (PrefetchRequest in
// types.ts), so that a restore's phases overlap instead of running one after
// another: while the leader still receives and checks the operator's archive
// (the longest phase), the followers already write the state bytes to their
// snapshot stores; when the snapshot is installed, its InstallSnapshot names
// them (SnapshotMeta.contentId) and only what a follower lacks travels.
// Before that a restore's phases were receive, rebuild, then ship every byte
// to each follower, and at 1 GiB shipping took as long as receiving
// (docs/performance.md, snapshot).
//
// Nothing here is acted on: the bytes become a snapshot only through the
// core's InstallSnapshot handling (SnapshotRequest.prefetched), after the
// leader checked the archive and installed it. Bytes of a restore that failed
// stay in a temporary file until the next restore's bytes replace them or the
// server restarts. Losses are repaired as InstallSnapshot's are: each answer
// says which byte the follower wants next; no answer for a while means the
// window is sent again from there.
import type { Clock } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { PrefetchRequest, PrefetchResponse, RaftTransport, ServerId, SnapshotSink, SnapshotStore } from "./types.ts";

/** What the sender reads from: the restore's staged file, as it grows. */
export interface PrefetchSource {
  readonly written: number;
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
  /** The bytes as views, while they are still in memory (SnapshotSink.recent). */
  recent?(offset: number, length: number): Uint8Array[] | undefined;
}

interface PeerState {
  id: ServerId;
  address: string;
  /** The follower said it has this many bytes. */
  acked: number;
  /** Bytes sent (or being read to send). */
  sent: number;
  lastProgressMs: number;
  /** Reads for this peer run one after another, so chunks leave in order. */
  turn: Promise<void>;
  totalSent: boolean;
}

export interface PrefetchSenderOptions {
  self: ServerId;
  selfAddress: string;
  term: number;
  peers: { id: ServerId; address: string }[];
  source: PrefetchSource;
  transport: RaftTransport;
  clock: Clock;
  logger: Logger;
  chunkBytes: number;
  windowChunks: number;
  resendMs: number;
}

/** The leader's side: sends the staged bytes to every follower, a window of chunks at a time. */
export class PrefetchSender {
  readonly id: string;
  readonly #o: PrefetchSenderOptions;
  readonly #peers = new Map<ServerId, PeerState>();
  #total: number | undefined;
  #stopped = false;

  constructor(id: string, o: PrefetchSenderOptions) {
    this.id = id;
    this.#o = o;
    const now = o.clock.now();
    for (const p of o.peers) {
      if (p.id === o.self) continue;
      this.#peers.set(p.id, { id: p.id, address: p.address, acked: 0, sent: 0, lastProgressMs: now, turn: Promise.resolve(), totalSent: false });
    }
  }

  /** More bytes were written to the source. */
  grew(): void {
    for (const p of this.#peers.values()) this.#pump(p);
  }

  /** The bytes are complete (the archive checked out): followers may flush them. */
  complete(total: number): void {
    this.#total = total;
    this.grew();
  }

  onResponse(m: PrefetchResponse): void {
    const p = this.#peers.get(m.from);
    if (this.#stopped || !p || m.id !== this.id) return;
    // No progress (a chunk lost or reordered, or an answer repeated): nothing
    // now. Resending the window on every such answer multiplied duplicates
    // into a storm; tick() sends it again from what the follower has.
    if (m.offset <= p.acked) return;
    p.acked = m.offset;
    p.lastProgressMs = this.#o.clock.now();
    if (p.sent < p.acked) p.sent = p.acked;
    this.#pump(p);
  }

  /** Called every tick: a peer that has not answered for a while gets its window again. */
  tick(): void {
    if (this.#stopped) return;
    const now = this.#o.clock.now();
    for (const p of this.#peers.values()) {
      if (p.sent > p.acked && now - p.lastProgressMs >= this.#o.resendMs) {
        p.sent = p.acked;
        p.totalSent = false;
        p.lastProgressMs = now;
        this.#pump(p);
      }
    }
  }

  stop(): void {
    this.#stopped = true;
  }

  #pump(p: PeerState): void {
    const { chunkBytes, windowChunks, source } = this.#o;
    while (!this.#stopped) {
      const available = source.written;
      if (p.sent >= available || p.sent - p.acked >= windowChunks * chunkBytes) break;
      const offset = p.sent;
      const n = Math.min(chunkBytes, available - offset);
      p.sent = offset + n;
      const total = this.#total !== undefined && p.sent === this.#total ? this.#total : undefined;
      if (total !== undefined) p.totalSent = true;
      this.#queue(p, offset, n, total);
    }
    if (!this.#stopped && this.#total !== undefined && p.sent === this.#total && !p.totalSent) {
      p.totalSent = true;
      this.#queue(p, p.sent, 0, this.#total);
    }
  }

  #queue(p: PeerState, offset: number, n: number, total: number | undefined): void {
    p.turn = p.turn.then(() => this.#readAndSend(p, offset, n, total));
  }

  async #readAndSend(p: PeerState, offset: number, n: number, total: number | undefined): Promise<void> {
    if (this.#stopped) return;
    const { transport, source } = this.#o;
    const target = { id: p.id, address: p.address };
    const msg: PrefetchRequest = { type: "prefetch", from: this.#o.self, to: p.id, term: this.#o.term, fromAddress: this.#o.selfAddress, id: this.id, offset, chunk: new Uint8Array(0) };
    if (total !== undefined) msg.total = total;
    // Still in memory (the follower keeps up): sent from there, not read back from the file into a frame of its own.
    const views = n > 0 && transport.sendSnapshotChunkParts ? source.recent?.(offset, n) : undefined;
    if (views) {
      transport.sendSnapshotChunkParts!(target, msg, views);
      transport.flush?.();
      return;
    }
    const prepared = n > 0 ? transport.prepareSnapshotChunk?.(target, msg, n) : undefined;
    let chunk: Uint8Array;
    try {
      chunk = n > 0 ? await source.read(offset, n, prepared?.chunk) : new Uint8Array(0);
    } catch (err) {
      // The staged file went away (the restore failed or was installed): nothing to send any more.
      if (!this.#stopped) this.#o.logger.warn("cannot read restore bytes to send ahead; stopping", { to: p.id, offset, error: errorMessage(err) });
      this.#stopped = true;
      return;
    }
    if (this.#stopped || chunk.length !== n) return;
    if (prepared) prepared.send();
    else transport.send(target, { ...msg, chunk });
    transport.flush?.();
  }
}

interface Incoming {
  id: string;
  from: ServerId;
  sink: SnapshotSink;
  /** Writes, one after another. */
  turn: Promise<void>;
  /** Taken for an install: write nothing more. */
  closed: boolean;
  flushing: boolean;
}

export interface PrefetchReceiverOptions {
  self: ServerId;
  selfAddress: string;
  store: SnapshotStore;
  transport: RaftTransport;
  logger: Logger;
  addressOf(id: ServerId): string | undefined;
  /** Refuse more bytes than this under one id. */
  maxBytes: number;
}

/** A follower's side: writes the bytes sent ahead to its snapshot store, and hands them to an install that names them. */
export class PrefetchReceiver {
  readonly #o: PrefetchReceiverOptions;
  #current: Incoming | undefined;
  /** The id taken for an install (see take): its late chunks are ignored. */
  #takenId: string | undefined;
  /** Bytes taken off `#current` for an install that names them, until the install uses them. */
  #held: { id: string; sink: SnapshotSink } | undefined;

  constructor(o: PrefetchReceiverOptions) {
    this.#o = o;
  }

  onRequest(m: PrefetchRequest, currentTerm: number): void {
    if (m.term < currentTerm) return; // a deposed leader's
    if (m.id === this.#takenId) return; // already taken for its install
    let cur = this.#current;
    if (!cur || cur.id !== m.id) {
      if (m.offset !== 0) {
        this.#answer(m, 0);
        return;
      }
      // A new restore's bytes: an older restore's are not wanted any more.
      this.#drop();
      // Flushed in the background as it grows, so the flush at the end (and the install's fsync) has little left: a GiB at once took ~2 s.
      cur = this.#current = { id: m.id, from: m.from, sink: this.#o.store.begin({ backgroundFlush: true }), turn: Promise.resolve(), closed: false, flushing: false };
    }
    const c = cur;
    c.turn = c.turn.then(async () => {
      if (c.closed) return;
      if (m.offset === c.sink.written && m.chunk.length > 0) {
        if (c.sink.written + m.chunk.length > this.#o.maxBytes) throw new Error(`more than ${this.#o.maxBytes} bytes sent ahead`);
        await c.sink.write(m.chunk);
      }
      if (m.total !== undefined && m.total === c.sink.written && !c.flushing) {
        // Complete: to disk now, while the leader rebuilds its state, so the install's fsync has little left.
        c.flushing = true;
        c.sink.flush().catch(() => {});
      }
      this.#answer(m, c.sink.written);
    }).catch((err: unknown) => {
      if (c.closed) return;
      this.#o.logger.warn("dropping restore bytes sent ahead", { id: c.id, error: errorMessage(err) });
      c.closed = true;
      if (this.#current === c) this.#current = undefined;
      void c.sink.cancel().catch(() => {});
    });
  }

  /** Bytes held for `id` (taken, and not yet used by an install), or undefined. */
  held(id: string): number | undefined {
    return this.#held?.id === id ? this.#held.sink.written : undefined;
  }

  /**
   * An install names `id`: stop writing its bytes and hold them for it.
   * Resolves once the writes under way settled; undefined when they are not here.
   */
  take(id: string): Promise<void> | undefined {
    const c = this.#current;
    if (!c || c.id !== id) return undefined;
    this.#current = undefined;
    this.#takenId = id;
    return c.turn.then(() => {
      if (c.closed) return; // a write failed: nothing to hold
      c.closed = true;
      void this.#held?.sink.cancel().catch(() => {});
      this.#held = { id: c.id, sink: c.sink };
    });
  }

  /** The held bytes for an install that took `bytes` of them (SnapshotRequest.prefetched); they are the install's from now on. */
  adopt(id: string, bytes: number): SnapshotSink {
    const h = this.#held;
    if (!h || h.id !== id || h.sink.written !== bytes) {
      throw new Error(`InstallSnapshot took ${bytes} bytes sent ahead as ${id}, which are not held`);
    }
    this.#held = undefined;
    return h.sink;
  }

  /** Throw away whatever is held or being written. */
  async close(): Promise<void> {
    const c = this.#current;
    const h = this.#held;
    this.#current = undefined;
    this.#held = undefined;
    if (c) {
      c.closed = true;
      await c.turn.catch(() => {});
      await c.sink.cancel().catch(() => {});
    }
    await h?.sink.cancel().catch(() => {});
  }

  #drop(): void {
    const c = this.#current;
    const h = this.#held;
    this.#current = undefined;
    this.#held = undefined;
    this.#takenId = undefined;
    if (c) {
      c.closed = true;
      void c.turn.then(() => c.sink.cancel()).catch(() => {});
    }
    void h?.sink.cancel().catch(() => {});
  }

  #answer(m: PrefetchRequest, offset: number): void {
    const address = m.fromAddress || this.#o.addressOf(m.from);
    if (!address) return;
    const r: PrefetchResponse = { type: "prefetchResp", from: this.#o.self, to: m.from, term: m.term, fromAddress: this.#o.selfAddress, id: m.id, offset };
    this.#o.transport.send({ id: m.from, address }, r);
    this.#o.transport.flush?.();
  }
}
