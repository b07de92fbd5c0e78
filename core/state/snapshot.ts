// Snapshot stream format: a sequence of frames, each a 4-byte big-endian
// length and a msgpack record. The stream can be re-chunked freely (disk,
// network) because the reader reassembles frames.
//
//   { t: "header", version: 1, index }        first
//   { t: "rows", table, rows: [...] }        any number, ≤ batch rows each
//   { t: "indexes", indexes: [[name, idx]] }
//   { t: "end" }                              last; a stream without it is truncated

import { Decoder, Encoder } from "@msgpack/msgpack";
import { CorruptionError } from "../errors.ts";

export const snapshotVersion = 1;
const batchRows = 512;
/** A rows record is cut once its rows hold about this many bytes (big KV values), so no frame nears maxFrameBytes. */
const batchBytes = 1024 * 1024;
const maxFrameBytes = 256 * 1024 * 1024;

export type SnapshotRecord =
  | { t: "header"; version: number; index: number }
  | { t: "rows"; table: string; rows: unknown[] }
  | { t: "indexes"; indexes: [string, number][] }
  | { t: "end" };

/** A point-in-time copy of the store's row references (rows are frozen, so this is cheap). */
export interface CapturedState {
  index: number;
  tables: [string, readonly object[]][];
  indexes: [string, number][];
}

const encoder = new Encoder({ ignoreUndefined: true });

function frame(record: SnapshotRecord): Uint8Array {
  // The encoder's own buffer, copied once into the frame (encode() would
  // copy it into a buffer of its own first: a save encodes the state twice).
  const body = encoder.encodeSharedRef(record);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** A captured state's frames: iterable again and again, to the same bytes each time. */
export interface SnapshotFrames extends Iterable<Uint8Array> {
  /**
   * The bytes one iteration yields, counted without building the frames (a
   * streamed archive needs the size first, for tar's header: measuring by
   * iterating built and dropped a copy of the whole state).
   */
  sizeBytes(): number;
}

/** Frames of a captured state, produced lazily. */
export function* encodeSnapshot(state: CapturedState): Generator<Uint8Array> {
  for (const record of snapshotRecords(state)) yield frame(record);
}

/** The bytes encodeSnapshot(state) yields in all. */
export function encodedSnapshotBytes(state: CapturedState): number {
  let n = 0;
  for (const record of snapshotRecords(state)) n += 4 + encoder.encodeSharedRef(record).length;
  return n;
}

function* snapshotRecords(state: CapturedState): Generator<SnapshotRecord> {
  yield { t: "header", version: snapshotVersion, index: state.index };
  for (const [table, rows] of state.tables) {
    let start = 0;
    let bytes = 0;
    for (let i = 0; i < rows.length; i++) {
      bytes += approxRowBytes(rows[i]!);
      if (i + 1 - start >= batchRows || bytes >= batchBytes) {
        yield { t: "rows", table, rows: rows.slice(start, i + 1) };
        start = i + 1;
        bytes = 0;
      }
    }
    if (start < rows.length) yield { t: "rows", table, rows: rows.slice(start) };
  }
  yield { t: "indexes", indexes: state.indexes };
  yield { t: "end" };
}

/** Bytes a row's byte and string fields hold (one level deep): enough to keep big values apart. */
function approxRowBytes(row: object): number {
  let n = 32;
  for (const v of Object.values(row)) {
    if (v instanceof Uint8Array) n += v.length;
    else if (typeof v === "string") n += v.length;
    else n += 8;
  }
  return n;
}

export type ByteStream = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/**
 * Reassembles frames from chunks of any size: push() returns the records
 * completed by a chunk, finish() checks the stream ended with its end record.
 * Throws CorruptionError on bad data.
 *
 * Each frame is copied out into a buffer of its own before it is decoded:
 * decoded byte values (KV values) are views into that buffer and keep it
 * alive, so it must hold that frame and nothing else. A view into the
 * incoming chunk (a 1 MiB file read) or into a join of several would keep
 * neighbouring frames' bytes alive too: a restored state took up to twice
 * its size.
 */
class SnapshotReader {
  readonly #decoder = new Decoder();
  /** Chunks not yet consumed; the first is consumed from #head on. */
  #parts: Uint8Array[] = [];
  #head = 0;
  #have = 0;
  #sawEnd = false;

  push(chunk: Uint8Array): SnapshotRecord[] {
    const out: SnapshotRecord[] = [];
    if (chunk.length === 0) return out;
    if (this.#sawEnd) throw new CorruptionError("Snapshot has data after its end record");
    if (this.#have === 0 && isWholeFrame(chunk)) {
      // A frame in a buffer of its own (framesAt): decoded in place, no copy.
      out.push(this.#decode(chunk.subarray(4)));
      return out;
    }
    this.#parts.push(chunk);
    this.#have += chunk.length;
    while (this.#have >= 4) {
      const len = this.#peekLength();
      if (len > maxFrameBytes) throw new CorruptionError(`Snapshot frame too large: ${len} bytes`);
      if (this.#have < 4 + len) break;
      this.#skip(4);
      out.push(this.#decode(this.#take(len)));
      if (this.#sawEnd) break;
    }
    return out;
  }

  #decode(body: Uint8Array): SnapshotRecord {
    let rec: unknown;
    try {
      rec = this.#decoder.decode(body);
    } catch (err) {
      throw new CorruptionError(`Snapshot frame is not valid msgpack: ${String(err)}`);
    }
    const r = checkRecord(rec);
    if (r.t === "end") {
      this.#sawEnd = true;
      if (this.#have > 0) throw new CorruptionError("Snapshot has data after its end record");
    }
    return r;
  }

  /** The big-endian u32 at the front (the caller checked 4 bytes are there). */
  #peekLength(): number {
    let n = 0;
    let part = 0;
    let off = this.#head;
    for (let i = 0; i < 4; i++) {
      while (off >= this.#parts[part]!.length) {
        part++;
        off = 0;
      }
      n = n * 256 + this.#parts[part]![off++]!;
    }
    return n;
  }

  #skip(n: number): void {
    this.#take(n, false);
  }

  /** The next n bytes as a buffer of their own (copied), consumed. */
  #take(n: number, copy = true): Uint8Array {
    const out = copy ? new Uint8Array(n) : undefined;
    let got = 0;
    while (got < n) {
      const first = this.#parts[0]!;
      const step = Math.min(n - got, first.length - this.#head);
      out?.set(first.subarray(this.#head, this.#head + step), got);
      got += step;
      this.#head += step;
      if (this.#head === first.length) {
        this.#parts.shift();
        this.#head = 0;
      }
    }
    this.#have -= n;
    return out ?? new Uint8Array(0);
  }

  finish(): void {
    if (!this.#sawEnd) throw new CorruptionError("Snapshot is truncated: no end record");
  }
}

/** The big-endian u32 at `at`. */
function u32(b: Uint8Array, at: number): number {
  return b[at]! * 0x1000000 + (b[at + 1]! << 16) + (b[at + 2]! << 8) + b[at + 3]!;
}

/**
 * Whether `chunk` is exactly one frame (length and body) and the whole of its
 * ArrayBuffer: a view into it keeps nothing else alive, so its values need
 * no copy of their own.
 */
function isWholeFrame(chunk: Uint8Array): boolean {
  return chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && chunk.length >= 4 && u32(chunk, 0) === chunk.length - 4;
}

/** Snapshot bytes read at offsets (a Raft snapshot file: SnapshotSource, SnapshotSink). */
export interface SnapshotBytesAt {
  /** Up to `length` bytes from `offset`, fewer only at the end; into `into` when it has room. */
  read(offset: number, length: number, into?: Uint8Array): Promise<Uint8Array>;
}

/** Bytes read ahead for small frames; a frame that does not fit is read straight into its own buffer. */
const framesAtReadBytes = 256 * 1024;

/**
 * The frames of stored snapshot bytes, each in a buffer of its own, for
 * decodeSnapshot: a big frame (a large KV value, a full rows batch) is read
 * from the file straight into that buffer, small ones are cut out of one
 * reused read buffer. Against reading fixed chunks and copying each frame
 * out of them, that is one copy and one buffer per frame less. Bad lengths
 * and a short file come out as the reader's CorruptionErrors.
 */
export async function* framesAt(src: SnapshotBytesAt): AsyncGenerator<Uint8Array> {
  const ahead = new Uint8Array(framesAtReadBytes);
  let have = new Uint8Array(0); // unconsumed bytes of `ahead`
  let offset = 0; // file offset of have[0]
  for (;;) {
    if (have.length < 4) {
      // Refill: the few bytes left (a length cut by the last read) move to the front first.
      const keep = have.length;
      if (keep > 0) ahead.copyWithin(0, have.byteOffset, have.byteOffset + keep);
      const room = ahead.subarray(keep);
      const got = await src.read(offset + keep, room.length, room);
      if (got.buffer !== ahead.buffer || got.byteOffset !== keep) ahead.set(got, keep);
      const n = keep + got.length;
      have = ahead.subarray(0, n);
      if (n === 0) return;
      if (n < 4) {
        yield have.slice();
        return;
      }
    }
    const len = u32(have, 0);
    if (len > maxFrameBytes) throw new CorruptionError(`Snapshot frame too large: ${len} bytes`);
    const whole = 4 + len;
    if (whole <= have.length) {
      yield have.slice(0, whole);
      have = have.subarray(whole);
      offset += whole;
      continue;
    }
    const frame = new Uint8Array(whole);
    frame.set(have);
    const rest = await src.read(offset + have.length, whole - have.length, frame.subarray(have.length));
    if (rest.length < whole - have.length) {
      // The file ends inside this frame: hand on what is there, the reader says truncated.
      yield frame.subarray(0, have.length + rest.length);
      return;
    }
    if (rest.buffer !== frame.buffer || rest.byteOffset !== frame.byteOffset + have.length) frame.set(rest, have.length);
    offset += whole;
    have = new Uint8Array(0);
    yield frame;
  }
}

/** Records from a (possibly re-chunked) stream. Throws CorruptionError on a bad or truncated stream. */
export async function* decodeSnapshot(stream: ByteStream): AsyncGenerator<SnapshotRecord> {
  const reader = new SnapshotReader();
  const chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array> = stream instanceof Uint8Array ? [stream] : stream;
  for await (const chunk of chunks) yield* reader.push(chunk);
  reader.finish();
}

/** The same, for bytes already in hand (a Raft log entry is applied synchronously). */
export function* decodeSnapshotSync(stream: Uint8Array | Iterable<Uint8Array>): Generator<SnapshotRecord> {
  const reader = new SnapshotReader();
  for (const chunk of stream instanceof Uint8Array ? [stream] : stream) yield* reader.push(chunk);
  reader.finish();
}

function checkRecord(rec: unknown): SnapshotRecord {
  if (typeof rec !== "object" || rec === null) throw new CorruptionError("Snapshot record is not a map");
  const r = rec as Record<string, unknown>;
  switch (r.t) {
    case "header":
      if (typeof r.version !== "number" || typeof r.index !== "number") break;
      return { t: "header", version: r.version, index: r.index };
    case "rows":
      if (typeof r.table !== "string" || !Array.isArray(r.rows)) break;
      return { t: "rows", table: r.table, rows: r.rows };
    case "indexes":
      if (!Array.isArray(r.indexes)) break;
      for (const pair of r.indexes) {
        if (!Array.isArray(pair) || typeof pair[0] !== "string" || typeof pair[1] !== "number") {
          throw new CorruptionError("Snapshot index record is malformed");
        }
      }
      return { t: "indexes", indexes: r.indexes as [string, number][] };
    case "end":
      return { t: "end" };
  }
  throw new CorruptionError(`Snapshot record is malformed: type ${JSON.stringify(String(r.t))}`);
}

