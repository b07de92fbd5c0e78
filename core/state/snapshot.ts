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
  const body = encoder.encode(record);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** Frames of a captured state, produced lazily. */
export function* encodeSnapshot(state: CapturedState): Generator<Uint8Array> {
  yield frame({ t: "header", version: snapshotVersion, index: state.index });
  for (const [table, rows] of state.tables) {
    for (let i = 0; i < rows.length; i += batchRows) {
      yield frame({ t: "rows", table, rows: rows.slice(i, i + batchRows) });
    }
  }
  yield frame({ t: "indexes", indexes: state.indexes });
  yield frame({ t: "end" });
}

export type ByteStream = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** Records from a (possibly re-chunked) stream. Throws CorruptionError on a bad or truncated stream. */
export async function* decodeSnapshot(stream: ByteStream): AsyncGenerator<SnapshotRecord> {
  const decoder = new Decoder();
  // Chunks not yet parsed; joined only once a whole frame has arrived, so
  // small chunks do not make reassembly quadratic.
  let parts: Uint8Array[] = [];
  let have = 0;
  let need = 4;
  let sawEnd = false;
  const chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array> = stream instanceof Uint8Array ? [stream] : stream;
  for await (const chunk of chunks) {
    if (chunk.length === 0) continue;
    if (sawEnd) throw new CorruptionError("Snapshot has data after its end record");
    parts.push(chunk);
    have += chunk.length;
    if (have < need) continue;
    const buf = parts.length === 1 ? parts[0]! : concatChunks(parts);
    let off = 0;
    need = 4;
    while (buf.length - off >= 4) {
      const len = new DataView(buf.buffer, buf.byteOffset + off, 4).getUint32(0);
      if (len > maxFrameBytes) throw new CorruptionError(`Snapshot frame too large: ${len} bytes`, { offset: off });
      if (buf.length - off - 4 < len) {
        need = 4 + len;
        break;
      }
      let rec: unknown;
      try {
        rec = decoder.decode(buf.subarray(off + 4, off + 4 + len));
      } catch (err) {
        throw new CorruptionError(`Snapshot frame is not valid msgpack: ${String(err)}`);
      }
      off += 4 + len;
      const r = checkRecord(rec);
      if (r.t === "end") sawEnd = true;
      yield r;
      if (sawEnd) break;
    }
    if (sawEnd && off < buf.length) throw new CorruptionError("Snapshot has data after its end record");
    const rest = buf.subarray(off);
    parts = rest.length > 0 ? [rest] : [];
    have = rest.length;
  }
  if (!sawEnd) throw new CorruptionError("Snapshot is truncated: no end record");
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

/** Join chunks into one buffer (for seams that want the whole snapshot at once). */
export function concatChunks(chunks: Iterable<Uint8Array>): Uint8Array {
  const list = [...chunks];
  let n = 0;
  for (const c of list) n += c.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of list) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
