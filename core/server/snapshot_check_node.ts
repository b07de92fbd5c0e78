// Checking a snapshot archive as it downloads (`cairn snapshot save`), or
// reading one as it is restored (the leader's Snapshot.Restore), with the
// same verdicts as readSnapshotArchiveStream (gzip, tar, SHA256SUMS, meta)
// at less cost: an archive our servers write is a row of gzip
// members whose headers say how long each one's deflate data is
// (snapshot_archive_node.ts, gzipAdaptive), so a member of stored blocks
// is read here as views of the bytes received, its CRC-32 checked natively,
// and only deflated members go through zlib. Through node's gunzip, a
// stored MiB was copied into a buffer of its own in the thread pool and
// handed back, while the main thread waited for it between its SHA-256
// turns (~0.1 CPU s per 100 MiB, and the two took turns). Any other gzip
// (Consul's archives, older cairn's) goes through gunzip from its first
// member without that field on, as before.

import type * as NodeCrypto from "node:crypto";
import { CorruptionError, errorMessage } from "../errors.ts";
import { lazyCrypto, lazyZlib } from "../lazy_builtins_node.ts";
import { crc32Update } from "../raft/log_store_file_node.ts";
import { type ArchiveReadResult, finishArchiveCheck, gunzipInto, memberHeaderBytes, memberLengthField, TarWalker } from "./snapshot_archive_node.ts";

const crypto = lazyCrypto;
const zlib = lazyZlib;

/** A member whose header claims more deflate data than this is not one of ours (ours are ~1 MiB). */
const maxMemberBytes = 64 * 1024 * 1024;

/** Received bytes not yet taken: a list of views, read from the front. */
class Pending {
  #parts: Uint8Array[] = [];
  #head = 0;
  bytes = 0;

  push(c: Uint8Array): void {
    if (c.length === 0) return;
    this.#parts.push(c);
    this.bytes += c.length;
  }

  /** Byte `i` ahead (i < bytes). */
  at(i: number): number {
    let k = this.#head;
    for (;;) {
      const p = this.#parts[k]!;
      if (i < p.length) return p[i]!;
      i -= p.length;
      k++;
    }
  }

  /** The next `n` bytes as views (n <= bytes), removed. */
  take(n: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    this.bytes -= n;
    while (n > 0) {
      const p = this.#parts[this.#head]!;
      if (p.length <= n) {
        out.push(p);
        n -= p.length;
        this.#parts[this.#head++] = undefined as unknown as Uint8Array;
      } else {
        out.push(p.subarray(0, n));
        this.#parts[this.#head] = p.subarray(n);
        n = 0;
      }
    }
    if (this.#head > 64) {
      this.#parts = this.#parts.slice(this.#head);
      this.#head = 0;
    }
    return out;
  }

  /** Everything left, removed. */
  rest(): Uint8Array[] {
    return this.take(this.bytes);
  }

  /** Put taken views back at the front. */
  unshift(views: Uint8Array[]): void {
    this.#parts = [...views, ...this.#parts.slice(this.#head)];
    this.#head = 0;
    for (const v of views) this.bytes += v.length;
  }
}

/**
 * The data of a member's stored blocks, as views of `deflate` (its deflate
 * data, `length` bytes in all); undefined when a block is not stored (the
 * member is then inflated whole). Throws on a block that is stored but
 * malformed, or a member whose final block does not end at `length`.
 */
function storedData(deflate: readonly Uint8Array[], length: number): Uint8Array[] | undefined {
  const out: Uint8Array[] = [];
  let p = 0;
  let off = 0;
  let pos = 0;
  const byte = (): number => {
    while (off >= deflate[p]!.length) {
      p++;
      off = 0;
    }
    pos++;
    return deflate[p]![off++]!;
  };
  for (;;) {
    if (pos + 5 > length) throw new CorruptionError("Snapshot archive is not valid gzip: a member's deflate data is cut short");
    const head = byte();
    if (((head >> 1) & 3) !== 0) {
      if (pos === 1) return undefined; // deflated from its first block: zlib's
      throw new CorruptionError("Snapshot archive is not valid gzip: a member mixes stored and compressed blocks");
    }
    const len = byte() | (byte() << 8);
    const nlen = byte() | (byte() << 8);
    if ((len ^ 0xffff) !== nlen) throw new CorruptionError("Snapshot archive is not valid gzip: bad stored block length");
    if (pos + len > length) throw new CorruptionError("Snapshot archive is not valid gzip: a stored block runs past its member");
    for (let left = len; left > 0;) {
      while (off >= deflate[p]!.length) {
        p++;
        off = 0;
      }
      const part = deflate[p]!;
      const n = Math.min(left, part.length - off);
      out.push(part.subarray(off, off + n));
      off += n;
      pos += n;
      left -= n;
    }
    if ((head & 1) === 1) {
      if (pos !== length) throw new CorruptionError("Snapshot archive is not valid gzip: a member's header gives the wrong length");
      return out;
    }
  }
}

function inflateMember(deflate: readonly Uint8Array[], length: number): Promise<Uint8Array> {
  const data = deflate.length === 1 ? deflate[0]! : Buffer.concat(deflate as Uint8Array[], length);
  return new Promise((resolve, reject) => {
    zlib().inflateRaw(data, { info: true, chunkSize: 1024 * 1024 }, (err, res) => {
      if (err) return reject(new CorruptionError(`Snapshot archive is not valid gzip: ${errorMessage(err)}`));
      const { buffer, engine } = res as unknown as { buffer: Uint8Array; engine: { bytesWritten: number } };
      if (engine.bytesWritten !== length) return reject(new CorruptionError("Snapshot archive is not valid gzip: a member's header gives the wrong length"));
      resolve(buffer);
    });
  });
}

/** Whether `pending` starts with one of our member headers; its deflate length if so, -1 if not, undefined if too few bytes came yet. */
function ourMember(pending: Pending): number | undefined {
  if (pending.bytes < memberHeaderBytes) {
    // Too short to say, unless it already is not a header of ours.
    const fixed = [0x1f, 0x8b, 8, 4];
    for (let i = 0; i < Math.min(pending.bytes, fixed.length); i++) if (pending.at(i) !== fixed[i]) return -1;
    return undefined;
  }
  const want = [0x1f, 0x8b, 8, 4];
  for (let i = 0; i < want.length; i++) if (pending.at(i) !== want[i]) return -1;
  if (pending.at(10) !== 8 || pending.at(11) !== 0 || pending.at(12) !== memberLengthField[0] || pending.at(13) !== memberLengthField[1] || pending.at(14) !== 4 || pending.at(15) !== 0) return -1;
  const length = (pending.at(16) | (pending.at(17) << 8) | (pending.at(18) << 16) | (pending.at(19) << 24)) >>> 0;
  return length > maxMemberBytes ? -1 : length;
}

/** A member's data, checked against its trailer (CRC-32 and size); throws if it does not check out. */
async function memberData(deflate: Uint8Array[], length: number, trailer: Uint8Array[]): Promise<Uint8Array[]> {
  const t = trailer.length === 1 ? trailer[0]! : Buffer.concat(trailer, 8);
  const view = new DataView(t.buffer, t.byteOffset, 8);
  const data = storedData(deflate, length) ?? [await inflateMember(deflate, length)];
  let crc = 0;
  let size = 0;
  for (const d of data) {
    crc = crc32Update(crc, d);
    size += d.length;
  }
  if ((crc >>> 0) !== view.getUint32(0, true) || (size >>> 0) !== view.getUint32(4, true)) throw new CorruptionError("Snapshot archive is not valid gzip: incorrect data check");
  return data;
}

/**
 * Read an archive from a byte stream and check it whole, as
 * readSnapshotArchiveStream does (the same errors), without handing the
 * state on: for a download that is written to a file meanwhile.
 */
export function checkSnapshotArchiveStream(source: AsyncIterable<Uint8Array>): Promise<ArchiveReadResult> {
  return readMemberArchiveStream(source);
}

/**
 * readSnapshotArchiveStream, reading our members as above: state.bin's
 * bytes go to `onState` as they come (for a stored member, views of the
 * source's chunks, up to 64 KiB each; do not act on them until this
 * resolves). The source must not reuse a buffer it yielded: views of it
 * are checked after more came, and handed on.
 */
export async function readMemberArchiveStream(source: AsyncIterable<Uint8Array>, onState?: (chunk: Uint8Array) => Promise<void> | void): Promise<ArchiveReadResult> {
  const hash = crypto().createHash("sha256");
  const walker = new TarWalker(
    onState
      ? async (c) => {
        hash.update(c);
        await onState(c);
      }
      : (c) => void hash.update(c),
  );
  const pending = new Pending();
  let inputBytes = 0;
  let members = 0;
  let it: AsyncIterator<Uint8Array> | undefined = source[Symbol.asyncIterator]();
  let foreign = false;

  /**
   * Takes whole members of ours off `pending` into the walker; false at
   * one that is not ours, or that does not check out as ours (a damaged
   * one): it stays in `pending` for gunzip, whose verdict it then gets.
   */
  const takeMembers = async (): Promise<boolean> => {
    for (;;) {
      if (pending.bytes === 0) return true;
      const length = ourMember(pending);
      if (length === -1) return false;
      if (length === undefined || pending.bytes < memberHeaderBytes + length + 8) return true;
      const header = pending.take(memberHeaderBytes);
      const deflate = pending.take(length);
      const trailer = pending.take(8);
      const data = await memberData(deflate, length, trailer).catch(() => undefined);
      if (data === undefined) {
        pending.unshift([...header, ...deflate, ...trailer]);
        return false;
      }
      members++;
      for (const d of data) await walker.push(d);
    }
  };

  try {
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      inputBytes += next.value.length;
      pending.push(next.value);
      if (!(await takeMembers())) {
        foreign = true;
        break;
      }
    }
    // The stream ended inside a member: gunzip says how (truncated, or not gzip at all).
    if (pending.bytes > 0) foreign = true;
    if (foreign) {
      // From here on, node's gunzip: a member without our length field, or not gzip at all.
      const rest = pending.rest();
      const source2 = it;
      it = undefined;
      await gunzipInto(walker, (async function* () {
        yield* rest;
        for (;;) {
          const n = await source2.next();
          if (n.done) return;
          inputBytes += n.value.length;
          yield n.value;
        }
      })(), () => inputBytes);
      members++;
    }
  } finally {
    await it?.return?.();
  }
  if (inputBytes === 0 || members === 0) throw new CorruptionError("Snapshot archive is empty");
  return finishArchiveCheck(walker, hash);
}
