// Snapshot endpoint family (consul agent/consul/snapshot_endpoint.go): save
// the whole state as an archive, or replace it with one, for states of any
// size. Neither direction holds the archive in memory:
//
// - Save: the serving server (the leader, or any with allowStale) captures
//   the state at a point in time (rows are frozen, so that is cheap) and
//   streams the archive as it is produced. Over RPC it travels in chunks the
//   caller pulls (`streamId` + `offset`, idempotent, so a retried pull
//   neither skips nor repeats bytes); a pull that reaches another server is
//   sent on to the one holding the stream (`server`).
// - Restore: the leader receives the archive in chunks pushed in order, and
//   as they arrive it writes state.bin into its Raft snapshot store and
//   builds a new state store from the same bytes, apart from the live one.
//   Only when the whole archive checked out (gzip, tar, SHA256SUMS, meta)
//   does it install the snapshot as hashicorp/raft Restore does (RaftNode.restoreUserSnapshot):
//   at an index above everything in the log; followers get it through
//   InstallSnapshot. A damaged archive changes nothing anywhere.
//
// The old way, one `Restore` log entry carrying the state (fsm.ts), is no
// longer written.

import { byteLength, partsOf } from "../bytes.ts";
import { BadRequestError, CorruptionError, NotLeaderError, OutcomeUnknownError, errorMessage } from "../errors.ts";
import type { RpcHandlers } from "../rpc/methods.ts";
import { maxRestoreIndex, type SnapshotMeta, type SnapshotSink, type SnapshotStore } from "../raft/types.ts";
import { StateStore } from "../state/store.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { requireLeader } from "./context.ts";
import { ByteQueue, snapshotArchiveStream } from "./snapshot_archive_node.ts";
import { readMemberArchiveStream } from "./snapshot_check_node.ts";

/** The largest archive a restore takes: it streams to the leader's disk, so this is a sanity bound (1 TiB), not memory. */
export const maxSnapshotStateBytes = 2 ** 40;

/** Bytes per chunk a Save pull answers, or a Restore push carries (an RPC frame holds 16 MiB). */
export const snapshotChunkBytes = 4 * 1024 * 1024;

/** A restore writes state.bin to the snapshot store in writes of about this many bytes. */
const writeBatchBytes = 1024 * 1024;

/** How long a restore waits for a quorum to install the snapshot before it answers anyway. */
const replicationWaitMs = 20_000;

/** A stream nobody pulled from or pushed to for this long is dropped. */
const idleMs = 60_000;

/** What a server's consensus offers for restores (RaftNode fits; tests may give less). */
export interface SnapshotInstaller {
  readonly address?: string;
  readonly snapshotStore: SnapshotStore;
  restoreUserSnapshot(options: { sink: SnapshotSink; stateIndex: number; install: (meta: SnapshotMeta) => void; contentId?: string }): Promise<{ index: number; term: number; replicated: Promise<void> }>;
  /** Send the restore's bytes to followers while they arrive (RaftNode.sendAhead); absent: they travel at the install. */
  sendAhead?(id: string, source: SnapshotSink): { grew(): void; complete(total: number): void; cancel(): void } | undefined;
}

function installerOf(ctx: ServerContext): SnapshotInstaller | undefined {
  const c = ctx.consensus as Partial<SnapshotInstaller>;
  return typeof c.restoreUserSnapshot === "function" && c.snapshotStore !== undefined ? (c as SnapshotInstaller) : undefined;
}

/** The Raft term of the entry at `index` (Consul's archive meta carries it), when the consensus can tell. */
function termAt(ctx: ServerContext, index: number): number | undefined {
  const core = (ctx.consensus as { core?: { termAt?(i: number): number | undefined; term?: number } }).core;
  return core?.termAt?.(index) ?? core?.term;
}

function selfAddress(ctx: ServerContext): string {
  return (ctx.consensus as { address?: unknown }).address as string | undefined ?? "";
}

/** Pulls fixed-size pieces from an async byte stream. */
class ChunkReader {
  readonly #it: AsyncIterator<Uint8Array>;
  #rest: Uint8Array | undefined;
  #done = false;

  constructor(stream: AsyncIterable<Uint8Array>) {
    this.#it = stream[Symbol.asyncIterator]();
  }

  /** Up to `max` bytes; done once the stream ended and nothing is left. */
  async next(max: number): Promise<{ chunk: Uint8Array; done: boolean }> {
    const parts: Uint8Array[] = [];
    let n = 0;
    while (n < max) {
      let c = this.#rest;
      this.#rest = undefined;
      if (!c) {
        if (this.#done) break;
        const r = await this.#it.next();
        if (r.done) {
          this.#done = true;
          break;
        }
        c = r.value;
      }
      if (n + c.length > max) {
        this.#rest = c.subarray(max - n);
        c = c.subarray(0, max - n);
      }
      parts.push(c);
      n += c.length;
    }
    const chunk = parts.length === 1 ? parts[0]! : Buffer.concat(parts, n);
    return { chunk, done: this.#done && this.#rest === undefined };
  }

  async cancel(): Promise<void> {
    this.#done = true;
    await this.#it.return?.().catch(() => {});
  }
}

interface SaveStream {
  reader: ChunkReader;
  index: number;
  /** Offset of `last` in the archive, and `last` itself, for a repeated pull. */
  lastOffset: number;
  last: { chunk: Uint8Array; done: boolean } | undefined;
  /**
   * The chunk after `last`, produced while `last` travels: encoding, hashing
   * and gzip then overlap the caller's write of the previous chunk instead of
   * taking turns with it (one chunk more held: 4 MiB).
   */
  ahead: Promise<{ chunk: Uint8Array; done: boolean }> | undefined;
  busy: Promise<unknown>;
  timer: { cancel(): void };
}

interface RestoreStream {
  queue: ByteQueue;
  received: number;
  /** ctx.clock.now() when the first piece came (for the phase timings logged). */
  startedMs: number;
  /** The archive reader and the state builder, running as chunks come in. */
  result: Promise<{ fresh: StateStore; stateIndex: number }>;
  sink: SnapshotSink;
  /** Its bytes going to followers ahead of the install (see SnapshotInstaller.sendAhead). */
  ahead?: { cancel(): void };
  busy: Promise<unknown>;
  timer: { cancel(): void };
  failed?: unknown;
}

export function snapshotEndpoints(ctx: ServerContext): Pick<RpcHandlers, "Snapshot.Save" | "Snapshot.Restore"> {
  const saves = new Map<string, SaveStream>();
  const restores = new Map<string, RestoreStream>();
  let seq = 0;
  const newId = () => `${ctx.clock.wallNow().toString(36)}-${(++seq).toString(36)}-${ctx.rng.int(2 ** 30).toString(36)}`;

  const touch = (s: { timer: { cancel(): void } }, drop: () => void) => {
    s.timer.cancel();
    s.timer = ctx.clock.setTimer(idleMs, drop);
  };

  function dropSave(id: string): void {
    const s = saves.get(id);
    if (!s) return;
    saves.delete(id);
    s.timer.cancel();
    void s.reader.cancel();
  }

  function dropRestore(id: string, why: string): void {
    const r = restores.get(id);
    if (!r) return;
    restores.delete(id);
    r.timer.cancel();
    r.queue.end(new Error(why));
    r.ahead?.cancel();
    void r.sink.cancel().catch(() => {});
    ctx.logger.info("snapshot restore abandoned", { reason: why });
  }

  /** A stream id this server does not hold: send the caller on to the one named, or say it is gone. */
  function notHere(kind: string, server: unknown): never {
    if (typeof server === "string" && server !== "" && server !== selfAddress(ctx)) throw new NotLeaderError(server);
    throw new BadRequestError(`Snapshot ${kind} stream not found (it expired, or its server restarted or lost leadership): start again`);
  }

  async function pull(s: SaveStream, id: string, offset: number): Promise<{ index: number; archive: Uint8Array; done: boolean; offset: number }> {
    const prev = s.busy;
    const run = (async () => {
      await prev.catch(() => {});
      if (s.last && offset === s.lastOffset) return s.last; // a repeated pull
      const want = s.last ? s.lastOffset + s.last.chunk.length : 0;
      if (offset !== want) throw new BadRequestError(`Snapshot save stream is at byte ${want}, not ${offset}`);
      if (s.last?.done) return { chunk: new Uint8Array(0), done: true };
      const piece = await (s.ahead ?? s.reader.next(snapshotChunkBytes));
      s.lastOffset = offset;
      s.last = piece;
      s.ahead = undefined;
      if (!piece.done) {
        s.ahead = s.reader.next(snapshotChunkBytes);
        s.ahead.catch(() => {}); // reported by the pull that takes it
      }
      return piece;
    })();
    s.busy = run;
    const piece = await run;
    if (piece.done) {
      // Kept a little, for a repeated last pull; dropped by its timer.
      s.timer.cancel();
      s.timer = ctx.clock.setTimer(idleMs / 6, () => dropSave(id));
    } else {
      touch(s, () => dropSave(id));
    }
    return { index: s.index, archive: piece.chunk, done: piece.done, offset };
  }

  return withCheckedArgs<"Snapshot.Save" | "Snapshot.Restore">({
    async "Snapshot.Save"(args, options) {
      const streamId = (args as { streamId?: unknown }).streamId;
      if (streamId !== undefined) {
        const offset = (args as { offset?: unknown }).offset;
        if (typeof streamId !== "string" || typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) {
          throw new BadRequestError("Invalid snapshot save request: streamId and offset");
        }
        const s = saves.get(streamId);
        if (!s) notHere("save", (args as { server?: unknown }).server);
        return { ...(await pull(s, streamId, offset)), streamId, server: selfAddress(ctx) };
      }
      if (!args.allowStale) {
        requireLeader(ctx);
        // Everything committed before the request is in the state we save.
        await ctx.consensus.readBarrier(options);
      }
      const fsm = ctx.fsm;
      const index = fsm.lastIndex;
      // Captured now (cheap: rows are frozen); encoded as the archive is pulled.
      const archive = snapshotArchiveStream(fsm.snapshotStream(), { index, term: termAt(ctx, index), nowMs: ctx.clock.wallNow() });
      const id = newId();
      const s: SaveStream = { reader: new ChunkReader(archive), index, lastOffset: 0, last: undefined, ahead: undefined, busy: Promise.resolve(), timer: ctx.clock.setTimer(idleMs, () => dropSave(id)) };
      saves.set(id, s);
      try {
        return { ...(await pull(s, id, 0)), streamId: id, server: selfAddress(ctx) };
      } catch (err) {
        dropSave(id);
        throw err;
      }
    },

    async "Snapshot.Restore"(args) {
      requireLeader(ctx);
      // The archive's shape (bytes, or a list of them) was checked with the other args (args.ts).
      const a = args as { archive: Uint8Array | Uint8Array[]; streamId?: unknown; offset?: unknown; done?: unknown; server?: unknown };
      const parts = partsOf(a.archive);
      const length = byteLength(parts);
      if (a.offset !== undefined && (typeof a.offset !== "number" || !Number.isSafeInteger(a.offset) || a.offset < 0)) throw new BadRequestError("Invalid snapshot restore offset");
      if (a.done !== undefined && typeof a.done !== "boolean") throw new BadRequestError("Invalid snapshot restore done flag");
      const installer = installerOf(ctx);
      if (!installer) throw new BadRequestError("This server cannot restore snapshots");
      // The whole archive in one call (older callers): one chunk that is also the last.
      const offset = a.offset ?? 0;
      const done = a.done ?? a.streamId === undefined;
      let id: string;
      let r: RestoreStream;
      if (a.streamId === undefined) {
        if (offset !== 0) throw new BadRequestError("A snapshot restore starts at offset 0");
        id = newId();
        r = startRestore(installer, id);
        r.timer = ctx.clock.setTimer(idleMs, () => dropRestore(id, "no data for a minute"));
        restores.set(id, r);
      } else {
        if (typeof a.streamId !== "string") throw new BadRequestError("Invalid snapshot restore stream id");
        id = a.streamId;
        const found = restores.get(id);
        if (!found) notHere("restore", a.server);
        r = found;
        touch(r, () => dropRestore(id, "no data for a minute"));
      }
      const prev = r.busy;
      const run = (async () => {
        await prev.catch(() => {});
        if (r.failed !== undefined) throw r.failed;
        if (offset + length <= r.received && !done) return; // a repeated push
        if (offset !== r.received) throw new BadRequestError(`Snapshot restore stream is at byte ${r.received}, not ${offset}`);
        r.received += length;
        // Kept as given, not copied: the caller hands the bytes over (a frame
        // the RPC layer decoded, or the HTTP upload's chunks), and a view
        // holds no more than the piece itself; a copy was 1 GiB of garbage
        // per GiB restored.
        for (const p of parts) if (p.length > 0) await r.queue.push(p);
      })();
      r.busy = run;
      try {
        await run;
      } catch (err) {
        dropRestore(id, errorMessage(err));
        throw err;
      }
      if (!done) return { index: 0, streamId: id, server: selfAddress(ctx), received: r.received };
      restores.delete(id);
      r.timer.cancel();
      r.queue.end();
      const receivedMs = ctx.clock.now();
      try {
        const { fresh, stateIndex } = await r.result;
        const builtMs = ctx.clock.now();
        if (!Number.isSafeInteger(stateIndex) || stateIndex < 0 || stateIndex >= maxRestoreIndex) {
          throw new BadRequestError(`Invalid snapshot: its index ${stateIndex} is out of range`);
        }
        const { index, replicated } = await installer.restoreUserSnapshot({
          sink: r.sink,
          stateIndex,
          install: (meta) => ctx.fsm.installRestored(fresh, meta),
          contentId: id,
        });
        const installedMs = ctx.clock.now();
        // Where a restore's time goes (docs/performance.md, snapshot): receiving
        // (upload, gunzip, checks and the write of state.bin run together as
        // pieces arrive), the state rebuild from that file, the Raft install.
        ctx.logger.info("snapshot restored", {
          index,
          bytes: r.received,
          receiveMs: Math.round(receivedMs - r.startedMs),
          rebuildMs: Math.round(builtMs - receivedMs),
          installMs: Math.round(installedMs - builtMs),
        });
        // As hashicorp/raft Restore, answer once a quorum holds it, but do not
        // hold the caller past its RPC timeout: the restore is done here, and
        // followers still installing it catch up on their own.
        // A lost leadership fails it (hashicorp/raft Restore returns the
        // noop's error): the next leader may not hold the snapshot, and
        // answering success then told the operator a restore held that the
        // cluster had dropped.
        let timer: { cancel(): void } | undefined;
        const waited = await Promise.race([
          replicated.then(() => true as const, (err: unknown) => ({ err })),
          new Promise<false>((resolve) => (timer = ctx.clock.setTimer(replicationWaitMs, () => resolve(false)))),
        ]);
        timer?.cancel();
        if (typeof waited === "object") {
          ctx.logger.error("leadership lost before a quorum held the restored snapshot", { index, error: errorMessage(waited.err) });
          throw new OutcomeUnknownError("leadership was lost before a quorum held the restored snapshot; check the state and restore again", { cause: waited.err });
        }
        if (!waited) ctx.logger.warn("snapshot restored on the leader; followers are still installing it", { index });
        else ctx.logger.info("restored snapshot installed on a quorum", { index, replicateMs: Math.round(ctx.clock.now() - installedMs) });
        return { index, streamId: id, server: selfAddress(ctx), received: r.received };
      } catch (err) {
        r.ahead?.cancel();
        await r.sink.cancel().catch(() => {});
        if (err instanceof CorruptionError) throw new BadRequestError(`Invalid snapshot: ${err.message}`);
        throw err;
      }
    },
  });

  /**
   * Begin reading an archive as it is pushed: state.bin goes to the snapshot
   * store as it arrives, checked on the way (gzip, tar, SHA256SUMS, meta),
   * and a new state store is built from the same bytes meanwhile, apart
   * from the live one. Nothing acts on either until the whole archive
   * checked out; a damaged one leaves both to be thrown away. Building it
   * from the file once the archive was in took a phase of its own (0.3 s
   * per 100 MiB, while the followers waited for the install); the bytes
   * were in memory already (docs/performance.md, snapshot).
   */
  function startRestore(installer: SnapshotInstaller, id: string): RestoreStream {
    const queue = new ByteQueue();
    // keepRecent: what the followers are sent ahead comes from memory while they keep up; the chunks are never reused.
    const sink = installer.snapshotStore.begin({ backgroundFlush: true, keepRecent: true });
    // The followers write the bytes as they come, so the install only names them.
    const ahead = installer.sendAhead?.(id, sink);
    const r: RestoreStream = {
      queue,
      ahead,
      received: 0,
      startedMs: ctx.clock.now(),
      sink,
      busy: Promise.resolve(),
      timer: { cancel() {} },
      result: (async () => {
        // The builder takes the chunks as they are (nothing upstream reuses a
        // buffer it handed on) and copies each frame into a buffer of its own.
        const stateBytes = new ByteQueue();
        let buildFailed = false;
        const built = StateStore.restore(stateBytes, { logger: ctx.logger });
        built.catch(() => {
          buildFailed = true; // reported below, once the archive's own checks had their say
          stateBytes.end();
        });
        // Our archives' stored members come as 64 KiB views: gathered, and written a MiB at a time.
        let batch: Uint8Array[] = [];
        let batchBytes = 0;
        const write = async () => {
          const parts = batch;
          batch = [];
          batchBytes = 0;
          await sink.write(parts);
          ahead?.grew();
        };
        try {
          await readMemberArchiveStream(queue, async (c) => {
            const queued = buildFailed ? undefined : stateBytes.push(c);
            batch.push(c);
            batchBytes += c.length;
            if (batchBytes >= writeBatchBytes) await write();
            await queued;
          });
          if (batchBytes > 0) await write();
        } catch (err) {
          stateBytes.end(err);
          throw err;
        }
        stateBytes.end();
        ahead?.complete(sink.written);
        const fresh = await built;
        return { fresh, stateIndex: fresh.snapshotIndex };
      })(),
    };
    // A bad archive is known before the last chunk: refuse the next push at once.
    r.result.catch((err: unknown) => {
      ahead?.cancel();
      r.failed = err instanceof CorruptionError ? new BadRequestError(`Invalid snapshot: ${err.message}`) : err;
      queue.end();
    });
    return r;
  }
}
