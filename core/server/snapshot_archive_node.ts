// The snapshot archive (snapshot_archive.ts describes the format: a gzipped
// tar of meta.json, state.bin and SHA256SUMS, as Consul's snapshot/archive.go)
// written and read as streams, for states of any size: nothing here holds
// more than a chunk of state.bin at a time.
//
// Writing: tar needs state.bin's size in its header, before the bytes. The
// state is a point-in-time capture that encodes to the same bytes each time
// it is iterated, so it is measured first (by the state itself when it can
// count without building frames, else by a pass that drops them) and sent
// after, hashed on the way; SHA256SUMS comes last, as in Consul's archives.
//
// Reading: gunzip, walk the tar, hand state.bin's bytes to the caller as
// they come, keep meta.json and SHA256SUMS (small), and check everything at
// the end. A damaged archive is refused with its reason (bad gzip, bad tar,
// truncated, checksum mismatch, bad meta): the caller must not act on what
// it was handed before the promise resolved.

import type * as NodeCrypto from "node:crypto";
import { Readable } from "node:stream";
import type * as NodeZlib from "node:zlib";

// node:crypto and node:zlib load on the first snapshot, not when the agent starts (every
// client agent carries the bundle and never takes a snapshot; docs/performance.md).
const crypto = lazyCrypto;
const zlib = lazyZlib;
const createHash = (algorithm: string): NodeCrypto.Hash => crypto().createHash(algorithm);
/**
 * gunzip output in 1 MiB pieces, not zlib's 16 KiB: every piece is a turn of
 * the tar walker, a hash update and a file write, and at 16 KiB those cost
 * more than the inflating (checking a 1 GiB archive into a file: 5.1 CPU s
 * at 16 KiB, 3.6 at 1 MiB; docs/performance.md).
 */
const gunzipChunkBytes = 1024 * 1024;
const createGunzip = (): NodeZlib.Gunzip => zlib().createGunzip({ chunkSize: gunzipChunkBytes });
import { CorruptionError, errorMessage } from "../errors.ts";
import { lazyCrypto, lazyZlib } from "../lazy_builtins_node.ts";
import { crc32Update } from "../raft/log_store_file_node.ts";
import { archiveVersion, parseArchiveMeta, parseSha256Sums, parseTarHeader, type SnapshotArchiveMeta, tarHeader } from "./snapshot_archive.ts";

const block = 512;
const encoder = new TextEncoder();
/** meta.json and SHA256SUMS are small; anything bigger is not our archive. */
const maxSmallFileBytes = 1024 * 1024;
/**
 * gzip, adaptively. Deflate at level 1 is fast on what compresses (JSON,
 * text: several hundred MB/s) but crawls on what does not (random or
 * already compressed values: ~30 MB/s here, a third of a save's budget).
 * So each 1 MiB of input is probed (4 KiB from its middle deflated, on the
 * event loop: 16 KiB gave the same ratios, random 1.00, JSON 0.2, base64
 * 0.76, at four times the cost; the middle, because an archive's first MiB
 * starts with tar headers and meta.json, which made a MiB of random state
 * look compressible) and sent at level 1 when it compresses, stored when
 * it does not.
 *
 * Each MiB is a gzip member of its own (RFC 1952 2.2: members follow each
 * other; gzip(1), Go's compress/gzip, zlib and so node read them as one
 * stream), whose header carries, in an extra field ("cs", 4 bytes, little
 * endian), the length of its deflate data. A reader that knows it
 * (snapshot_check_node.ts, the CLI's save) takes a stored member's bytes
 * as they are, checking its CRC, and inflates only the deflated ones,
 * knowing where each ends; any other reader ignores the field.
 */
const gzipBatchBytes = 1024 * 1024;
const probeBytes = 4 * 1024;
/** The extra subfield naming a member's deflate length: SI1 'c', SI2 's'. */
export const memberLengthField = [0x63, 0x73] as const;
/** A member header with FEXTRA: 10 bytes, XLEN, one subfield of 4 bytes. */
export const memberHeaderBytes = 20;

function memberHeader(deflateBytes: number): Uint8Array {
  const h = Uint8Array.of(0x1f, 0x8b, 8, 4 /* FEXTRA */, 0, 0, 0, 0, 0, 255, 8, 0, memberLengthField[0], memberLengthField[1], 4, 0, 0, 0, 0, 0);
  new DataView(h.buffer).setUint32(16, deflateBytes, true);
  return h;
}

function memberTrailer(crc: number, size: number): Uint8Array {
  const trailer = new Uint8Array(8);
  const view = new DataView(trailer.buffer);
  view.setUint32(0, crc >>> 0, true);
  view.setUint32(4, size >>> 0, true); // ISIZE: the size modulo 2^32
  return trailer;
}

function deflatePiece(data: Uint8Array, level: number): Promise<Uint8Array> {
  // Room for the whole output in one buffer (deflate's worst case adds well
  // under 0.1%): with zlib's default 16 KiB, a MiB came back in up to 64
  // turns of the thread pool, each a call and a buffer on the event loop (a
  // quarter to a third of a save's main thread at 100 MiB, when stored
  // blocks still went through zlib).
  const chunkSize = data.length + (data.length >> 10) + 1024;
  return new Promise((resolve, reject) => {
    // The thread pool compresses while the event loop encodes the next batch.
    zlib().deflateRaw(data, { level, chunkSize }, (err, out) => (err ? reject(err) : resolve(out)));
  });
}

/** The most bytes one stored block holds (RFC 1951 3.2.4: LEN has 16 bits). */
const maxStoredBlockBytes = 65535;

/**
 * `parts` (`size` bytes in all) as one member of stored deflate blocks: a
 * 5-byte header before each slice (BFINAL on the last, BTYPE 00, LEN,
 * NLEN), the slices views of the parts, never copied. Nothing to deflate
 * here: zlib at level 0 did the same in the thread pool, copying every
 * byte into a buffer of its own on the way.
 */
function storedMember(parts: readonly Uint8Array[], size: number, crc: number): Uint8Array[] {
  const blocks = Math.max(1, Math.ceil(size / maxStoredBlockBytes));
  const out: Uint8Array[] = [memberHeader(size + 5 * blocks)];
  let p = 0;
  let off = 0;
  for (let b = 0; b < blocks; b++) {
    const n = Math.min(maxStoredBlockBytes, size - b * maxStoredBlockBytes);
    out.push(Uint8Array.of(b === blocks - 1 ? 1 : 0, n & 0xff, n >>> 8, ~n & 0xff, (~n >>> 8) & 0xff));
    for (let left = n; left > 0;) {
      const part = parts[p]!;
      const take = Math.min(left, part.length - off);
      if (take > 0) out.push(part.subarray(off, off + take));
      off += take;
      left -= take;
      if (off === part.length) {
        p++;
        off = 0;
      }
    }
  }
  out.push(memberTrailer(crc, size));
  return out;
}

/** The middle `probeBytes` of the parts (one view when it lies in one part, as it mostly does). */
function probeSample(parts: readonly Uint8Array[], size: number): Uint8Array {
  const n = Math.min(probeBytes, size);
  let from = (size - n) >> 1;
  for (const part of parts) {
    if (from < part.length) {
      if (from + n <= part.length) return part.subarray(from, from + n);
      break;
    }
    from -= part.length;
  }
  return Buffer.concat(parts as Uint8Array[], size).subarray((size - n) >> 1, ((size - n) >> 1) + n);
}

function levelFor(sample: Uint8Array): number {
  const { constants, deflateRawSync } = zlib();
  if (sample.length < 256) return constants.Z_BEST_SPEED;
  const out = deflateRawSync(sample, { level: constants.Z_BEST_SPEED });
  return out.length < sample.length * 0.9 ? constants.Z_BEST_SPEED : constants.Z_NO_COMPRESSION;
}

/** gzip a byte stream (see above), one member per MiB; one is compressed while the next is produced. */
export async function* gzipAdaptive(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let parts: Uint8Array[] = [];
  let have = 0;
  let members = 0;
  let inflight: Promise<Uint8Array[]> | undefined;
  const start = (): Promise<Uint8Array[]> => {
    const batch = parts;
    const size = have;
    parts = [];
    have = 0;
    members++;
    let crc = 0;
    for (const p of batch) crc = crc32Update(crc, p);
    // Views of the parts, handed on as they are: nothing upstream reuses a buffer it yielded.
    if (levelFor(probeSample(batch, size)) === zlib().constants.Z_NO_COMPRESSION) return Promise.resolve(storedMember(batch, size, crc));
    const data = batch.length === 1 ? batch[0]! : Buffer.concat(batch, size);
    return deflatePiece(data, zlib().constants.Z_BEST_SPEED).then((out) => [memberHeader(out.length), out, memberTrailer(crc, size)]);
  };
  for await (const c of source) {
    parts.push(c);
    have += c.length;
    if (have < gzipBatchBytes) continue;
    const next = start();
    next.catch(() => {});
    if (inflight) yield* await inflight;
    inflight = next;
  }
  if (have > 0 || members === 0) {
    // The last MiB, or for nothing at all one empty member: gzip has at least one.
    const next = start();
    next.catch(() => {});
    if (inflight) yield* await inflight;
    inflight = next;
  }
  if (inflight) yield* await inflight;
}

function padding(size: number): Uint8Array {
  const rest = size % block;
  return new Uint8Array(rest === 0 ? 0 : block - rest);
}

/**
 * A captured state: the same bytes each time it is iterated; `sizeBytes`,
 * when given, tells their total without iterating (StateStore.snapshot).
 */
export interface ArchiveState extends Iterable<Uint8Array> {
  sizeBytes?(): number;
}

/** The tar stream (not yet gzipped) of an archive around `state`. */
async function* tarStream(state: ArchiveState, options: { index: number; term?: number; nowMs: number }): AsyncGenerator<Uint8Array> {
  let size = 0;
  if (state.sizeBytes) size = state.sizeBytes();
  else for (const c of state) size += c.length;
  const meta: SnapshotArchiveMeta = { Version: archiveVersion, ID: `${options.term ?? 0}-${options.index}-${options.nowMs}`, Index: options.index, Term: options.term, Size: size };
  const metaBytes = encoder.encode(JSON.stringify(meta));
  const mtimeS = Math.floor(options.nowMs / 1000);
  yield tarHeader("meta.json", metaBytes.length, mtimeS);
  yield metaBytes;
  yield padding(metaBytes.length);
  yield tarHeader("state.bin", size, mtimeS);
  const hash = createHash("sha256");
  let sent = 0;
  // Small frames are gathered so the gzip stream gets chunks worth its while.
  let batch: Uint8Array[] = [];
  let batchBytes = 0;
  for (const c of state) {
    hash.update(c);
    sent += c.length;
    batch.push(c);
    batchBytes += c.length;
    if (batchBytes >= 256 * 1024) {
      yield batch.length === 1 ? batch[0]! : Buffer.concat(batch, batchBytes);
      batch = [];
      batchBytes = 0;
    }
  }
  if (batchBytes > 0) yield Buffer.concat(batch, batchBytes);
  if (sent !== size) throw new Error(`Snapshot state changed while it was sent (${sent} bytes, measured ${size})`);
  yield padding(size);
  const metaSum = createHash("sha256").update(metaBytes).digest("hex");
  const sums = encoder.encode(`${metaSum}  meta.json\n${hash.digest("hex")}  state.bin\n`);
  yield tarHeader("SHA256SUMS", sums.length, mtimeS);
  yield sums;
  yield padding(sums.length);
  yield new Uint8Array(block * 2);
}

/**
 * The archive of a captured state as gzip chunks, produced as they are
 * read. `state` must give the same bytes each time it is iterated (see
 * StateStore.snapshot).
 */
export function snapshotArchiveStream(state: ArchiveState, options: { index: number; term?: number; nowMs: number }): AsyncIterable<Uint8Array> {
  return gzipAdaptive(tarStream(state, options));
}

export interface ArchiveReadResult {
  meta: SnapshotArchiveMeta;
  /** Bytes of state.bin handed to onState. */
  stateBytes: number;
}

/** Walks a tar byte stream; state.bin's data goes to `onState`, the small files are kept. */
export class TarWalker {
  #header = new Uint8Array(block);
  #headerFill = 0;
  /** Current entry: its name, bytes left, padding left after it. */
  #name = "";
  #left = 0;
  #pad = 0;
  #inEntry = false;
  #ended = false;
  #offset = 0;
  readonly small = new Map<string, Uint8Array[]>();
  readonly seen = new Set<string>();
  stateBytes = 0;
  readonly #onState: (chunk: Uint8Array) => Promise<void> | void;

  constructor(onState: (chunk: Uint8Array) => Promise<void> | void) {
    this.#onState = onState;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** True once the tar said where it ends, or it stopped between entries. */
  get atBoundary(): boolean {
    return !this.#inEntry && this.#pad === 0 && this.#headerFill === 0;
  }

  async push(chunk: Uint8Array): Promise<void> {
    let i = 0;
    while (i < chunk.length) {
      if (this.#ended) {
        // Zero blocks after the end (tar pads to a record size) are fine; anything else is not.
        for (; i < chunk.length; i++) if (chunk[i] !== 0) throw new CorruptionError("Snapshot archive has data after the end of its tar stream");
        return;
      }
      if (this.#inEntry) {
        const n = Math.min(this.#left, chunk.length - i);
        const part = chunk.subarray(i, i + n);
        if (this.#name === "state.bin") {
          this.stateBytes += n;
          await this.#onState(part);
        } else {
          const list = this.small.get(this.#name)!;
          list.push(part.slice());
        }
        this.#left -= n;
        i += n;
        this.#offset += n;
        if (this.#left === 0) this.#inEntry = false;
        continue;
      }
      if (this.#pad > 0) {
        const n = Math.min(this.#pad, chunk.length - i);
        this.#pad -= n;
        i += n;
        this.#offset += n;
        continue;
      }
      const n = Math.min(block - this.#headerFill, chunk.length - i);
      this.#header.set(chunk.subarray(i, i + n), this.#headerFill);
      this.#headerFill += n;
      i += n;
      if (this.#headerFill < block) continue;
      this.#headerFill = 0;
      this.#startEntry();
      this.#offset += block;
    }
  }

  #startEntry(): void {
    const header = this.#header;
    if (header.every((b) => b === 0)) {
      this.#ended = true;
      return;
    }
    const { name, size, checksumOk } = parseTarHeader(header);
    if (!checksumOk) throw new CorruptionError("Snapshot archive is not a valid tar: bad header checksum", { offset: this.#offset });
    if (!Number.isSafeInteger(size) || size < 0) throw new CorruptionError(`Snapshot archive entry ${JSON.stringify(name)} has a bad size`, { offset: this.#offset });
    if (this.seen.has(name)) throw new CorruptionError(`Snapshot archive holds ${JSON.stringify(name)} twice`);
    this.seen.add(name);
    if (name !== "state.bin") {
      if (size > maxSmallFileBytes) throw new CorruptionError(`Snapshot archive entry ${JSON.stringify(name)} is too large (${size} bytes)`);
      this.small.set(name, []);
    }
    this.#name = name;
    this.#left = size;
    this.#inEntry = size > 0;
    this.#pad = padding(size).length;
  }

  /** The bytes of a small entry that is complete, or undefined. */
  file(name: string): Uint8Array | undefined {
    const parts = this.small.get(name);
    if (!parts || (this.#name === name && this.#inEntry)) return undefined;
    return Buffer.concat(parts);
  }

  /** Whether the tar stopped in the middle of something. */
  get truncated(): boolean {
    return this.#inEntry || this.#headerFill > 0;
  }

  get entryName(): string {
    return this.#name;
  }
}

/**
 * Read an archive from a byte stream: state.bin's bytes go to `onState` as
 * they arrive (write them somewhere; do not act on them until this
 * resolves). Resolves with the checked meta; throws CorruptionError with
 * the reason when anything is wrong, or the error `onState` threw.
 */
export async function readSnapshotArchiveStream(
  source: AsyncIterable<Uint8Array>,
  onState: (chunk: Uint8Array) => Promise<void> | void,
): Promise<ArchiveReadResult> {
  const hash = createHash("sha256");
  const walker = new TarWalker(async (c) => {
    hash.update(c);
    await onState(c);
  });
  let inputBytes = 0;
  const counted = (async function* () {
    for await (const c of source) {
      inputBytes += c.length;
      yield c;
    }
  })();
  const sawBytes = await gunzipInto(walker, counted, () => inputBytes);
  if (!sawBytes) throw new CorruptionError("Snapshot archive is empty");
  return finishArchiveCheck(walker, hash);
}

/**
 * A gzip stream through node's gunzip into the walker, with the archive
 * errors for what zlib says (empty, truncated, not gzip). `inputBytes`
 * counts what the source gave so far. Resolves with whether gunzip gave
 * any bytes.
 */
export async function gunzipInto(walker: TarWalker, source: AsyncIterable<Uint8Array>, inputBytes: () => number): Promise<boolean> {
  const gunzip = createGunzip();
  const input = Readable.from(source, { objectMode: false });
  input.on("error", (err) => gunzip.destroy(err));
  input.pipe(gunzip);
  let sawBytes = false;
  try {
    for await (const chunk of gunzip as AsyncIterable<Uint8Array>) {
      sawBytes = true;
      await walker.push(chunk);
    }
  } catch (err) {
    if (err instanceof CorruptionError) throw err;
    if (inputBytes() === 0) throw new CorruptionError("Snapshot archive is empty");
    const code = (err as { code?: string }).code;
    if (code === "Z_BUF_ERROR" || /unexpected end of file/i.test(errorMessage(err))) {
      throw new CorruptionError("Snapshot archive is truncated (the gzip stream ends early)");
    }
    if (typeof code === "string" && code.startsWith("Z_")) throw new CorruptionError(`Snapshot archive is not valid gzip: ${errorMessage(err)}`);
    throw err;
  } finally {
    input.destroy();
    gunzip.destroy();
  }
  return sawBytes;
}

/** The checks once the whole tar was walked (state.bin hashed into `hash`): the entries, SHA256SUMS, meta.json. */
export function finishArchiveCheck(walker: TarWalker, hash: NodeCrypto.Hash): ArchiveReadResult {
  if (walker.truncated) throw new CorruptionError(`Snapshot archive is truncated: entry ${JSON.stringify(walker.entryName)} is cut short`);
  const metaBytes = walker.file("meta.json");
  const sums = walker.file("SHA256SUMS");
  if (!metaBytes || !walker.seen.has("state.bin") || !sums) {
    throw new CorruptionError("Snapshot archive must hold meta.json, state.bin and SHA256SUMS");
  }
  const want = parseSha256Sums(sums);
  if (want.get("meta.json") !== createHash("sha256").update(metaBytes).digest("hex")) throw new CorruptionError("Snapshot archive checksum mismatch for meta.json");
  if (want.get("state.bin") !== hash.digest("hex")) throw new CorruptionError("Snapshot archive checksum mismatch for state.bin");
  const m = parseArchiveMeta(metaBytes);
  if (typeof m.Size === "number" && m.Size !== walker.stateBytes) {
    throw new CorruptionError(`Snapshot archive meta.json says state.bin holds ${m.Size} bytes, it holds ${walker.stateBytes}`);
  }
  const meta: SnapshotArchiveMeta = { Version: m.Version, ID: m.ID, Index: m.Index, Size: walker.stateBytes };
  if (typeof m.Term === "number") meta.Term = m.Term;
  return { meta, stateBytes: walker.stateBytes };
}

/**
 * A push-fed async iterable with a bound: `push` waits while `limit` bytes
 * are queued, so a producer (the archive reader) cannot run far ahead of a
 * consumer (a state store being built from the same bytes).
 */
export class ByteQueue implements AsyncIterable<Uint8Array> {
  #items: Uint8Array[] = [];
  #bytes = 0;
  #ended = false;
  #error: unknown;
  #wakeConsumer: (() => void) | undefined;
  #wakeProducer: (() => void) | undefined;
  readonly #limit: number;

  constructor(limit = 8 * 1024 * 1024) {
    this.#limit = limit;
  }

  async push(chunk: Uint8Array): Promise<void> {
    if (this.#ended) throw new Error("queue has ended");
    this.#items.push(chunk);
    this.#bytes += chunk.length;
    this.#wakeConsumer?.();
    while (this.#bytes > this.#limit && !this.#ended) {
      await new Promise<void>((resolve) => (this.#wakeProducer = resolve));
    }
  }

  end(error?: unknown): void {
    this.#ended = true;
    if (error !== undefined) this.#error = error;
    this.#wakeConsumer?.();
    this.#wakeProducer?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.#items.length > 0) {
        const c = this.#items.shift()!;
        this.#bytes -= c.length;
        if (this.#bytes <= this.#limit) this.#wakeProducer?.();
        yield c;
        continue;
      }
      if (this.#ended) {
        if (this.#error !== undefined) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => (this.#wakeConsumer = resolve));
      this.#wakeConsumer = undefined;
    }
  }
}
