// Direct readers for the msgpack shapes Go's encoder writes (go-msgpack
// 0.5.5): the fix and 16-bit forms of maps, arrays and raw strings, and
// unsigned integers. Each returns undefined for anything else, and the
// caller then falls back to the general decoder (msgpack_go.ts), so what is
// accepted never changes; they only skip building a value tree for the
// messages every node decodes many times in a join storm.
import { textOf } from "./msgpack_go.ts";

export interface ByteReader {
  readonly bytes: Uint8Array;
  pos: number;
}

/** The count in a fix-form or 16-bit map/array header (see fixOr16), or undefined. */
export function readHeader(r: ByteReader, fix: number, mask: number, wide: number): number | undefined {
  const h = fixOr16(r.bytes, r.pos, fix, mask, wide);
  if (!h) return undefined;
  r.pos = h[1];
  return h[0];
}

/** A fixraw/raw16 string, or undefined. */
export function readStr(r: ByteReader): string | undefined {
  const end = rawEnd(r);
  if (end === undefined) return undefined;
  const start = r.pos;
  r.pos = end;
  return textOf(r.bytes.subarray(start, end));
}

/** Keys to match with readKey: ASCII names, as bytes. */
export function keySet(names: readonly string[]): readonly Uint8Array[] {
  return names.map((n) => Uint8Array.from(n, (c) => c.charCodeAt(0)));
}

/**
 * Which of `keys` the fixraw string at r.pos is (its index, and r moves past it), or -1
 * (r unchanged): matched byte for byte, without making a string of it.
 */
export function readKey(r: ByteReader, keys: readonly Uint8Array[]): number {
  const { bytes, pos } = r;
  if (pos >= bytes.length) return -1;
  const len = bytes[pos]! - 0xa0;
  if (len < 0 || len > 0x1f || pos + 1 + len > bytes.length) return -1;
  next: for (let k = 0; k < keys.length; k++) {
    const key = keys[k]!;
    if (key.length !== len) continue;
    for (let i = 0; i < len; i++) if (bytes[pos + 1 + i] !== key[i]) continue next;
    r.pos = pos + 1 + len;
    return k;
  }
  return -1;
}

/** A fixraw/raw16 value as bytes of its own (Go's []byte), or undefined. */
export function readRaw(r: ByteReader): Uint8Array | undefined {
  const end = rawEnd(r);
  if (end === undefined) return undefined;
  const start = r.pos;
  r.pos = end;
  return r.bytes.slice(start, end);
}

/** A positive fixint or uint8/16/32, or undefined. */
export function readUint(r: ByteReader): number | undefined {
  const { bytes, pos } = r;
  if (pos >= bytes.length) return undefined;
  const b = bytes[pos]!;
  if (b <= 0x7f) {
    r.pos = pos + 1;
    return b;
  }
  const width = b === 0xcc ? 1 : b === 0xcd ? 2 : b === 0xce ? 4 : 0;
  if (width === 0 || pos + 1 + width > bytes.length) return undefined;
  let v = 0;
  for (let i = 1; i <= width; i++) v = v * 256 + bytes[pos + i]!;
  r.pos = pos + 1 + width;
  return v;
}

/** Moves past a fixraw/raw16 header and returns where its bytes end (r.pos: where they start). */
function rawEnd(r: ByteReader): number | undefined {
  const h = fixOr16(r.bytes, r.pos, 0xa0, 0x1f, 0xda);
  if (!h || h[0] > r.bytes.length - h[1]) return undefined;
  r.pos = h[1];
  return h[1] + h[0];
}

/**
 * The count or length in the msgpack header at pos, in its fix form (fix to fix + mask) or
 * 16-bit form (the `wide` byte), and where what follows begins; undefined for any other header.
 */
function fixOr16(bytes: Uint8Array, pos: number, fix: number, mask: number, wide: number): [number, number] | undefined {
  if (pos >= bytes.length) return undefined;
  const b = bytes[pos]!;
  if (b >= fix && b <= fix + mask) return [b & mask, pos + 1];
  if (b === wide && pos + 3 <= bytes.length) return [(bytes[pos + 1]! << 8) | bytes[pos + 2]!, pos + 3];
  return undefined;
}
