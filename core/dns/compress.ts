// RFC 1035 4.1.4 name compression for an encoded DNS message. dns-packet
// writes every name in full; Consul (miekg/dns with `Compress = true`, unless
// dns_config.disable_compression) replaces a repeated name suffix with a
// 2-byte pointer to its first occurrence. This rewrites a message that way:
// owner names, and the names inside CNAME, NS, PTR, MX and SOA data (the
// types miekg/dns compresses). An SRV target is written in full (RFC 2782),
// though later names may point into it. Pure; the decoded message is the same
// before and after, byte for byte in every name.

/** Pointers hold 14 bits: names past this offset cannot be pointed at. */
const maxPointerOffset = 0x3fff;

const typeNs = 2;
const typeCname = 5;
const typeSoa = 6;
const typePtr = 12;
const typeMx = 15;
const typeSrv = 33;

class Malformed extends Error {}

/** A name suffix written in full: where its bytes are in the input, how many, and where it starts in the output. */
interface Written {
  src: number;
  length: number;
  out: number;
}

interface Writer {
  out: Uint8Array;
  pos: number;
  /** Hash of a suffix's wire bytes → the suffixes written in full with that hash (almost always one). */
  seen: Map<number, Written[]>;
}

/**
 * The message with repeated names compressed, or the message itself when it
 * cannot be parsed (or already holds a pointer): never worse than the input.
 */
export function compressMessage(msg: Uint8Array): Uint8Array {
  try {
    const out = compressOrThrow(msg);
    return out.length < msg.length ? out : msg;
  } catch (err) {
    if (err instanceof Malformed) return msg;
    throw err;
  }
}

function compressOrThrow(msg: Uint8Array): Uint8Array {
  if (msg.length < 12) throw new Malformed();
  const w: Writer = { out: new Uint8Array(msg.length), pos: 12, seen: new Map() };
  w.out.set(msg.subarray(0, 12));
  const count = (at: number): number => (msg[at]! << 8) | msg[at + 1]!;
  const qd = count(4);
  const rr = count(6) + count(8) + count(10);
  let at = 12;
  for (let i = 0; i < qd; i++) {
    at = copyName(msg, at, w, true);
    at = copyBytes(msg, at, 4, w);
  }
  for (let i = 0; i < rr; i++) {
    at = copyName(msg, at, w, true);
    if (at + 10 > msg.length) throw new Malformed();
    const type = count(at);
    const rdLength = count(at + 8);
    at = copyBytes(msg, at, 8, w);
    at += 2;
    const lengthAt = w.pos;
    w.pos += 2;
    const end = at + rdLength;
    if (end > msg.length) throw new Malformed();
    switch (type) {
      case typeNs:
      case typeCname:
      case typePtr:
        at = copyName(msg, at, w, true);
        break;
      case typeMx:
        at = copyBytes(msg, at, 2, w);
        at = copyName(msg, at, w, true);
        break;
      case typeSoa:
        at = copyName(msg, at, w, true);
        at = copyName(msg, at, w, true);
        at = copyBytes(msg, at, 20, w);
        break;
      case typeSrv:
        at = copyBytes(msg, at, 6, w);
        at = copyName(msg, at, w, false);
        break;
      default:
        at = copyBytes(msg, at, rdLength, w);
    }
    if (at !== end) throw new Malformed();
    const written = w.pos - lengthAt - 2;
    w.out[lengthAt] = written >> 8;
    w.out[lengthAt + 1] = written & 0xff;
  }
  if (at !== msg.length) throw new Malformed();
  return w.out.slice(0, w.pos);
}

function copyBytes(msg: Uint8Array, at: number, n: number, w: Writer): number {
  if (at + n > msg.length) throw new Malformed();
  w.out.set(msg.subarray(at, at + n), w.pos);
  w.pos += n;
  return at + n;
}

/** The same bytes at two places of the input. */
function sameBytes(msg: Uint8Array, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (msg[a + i] !== msg[b + i]) return false;
  return true;
}

function findSame(msg: Uint8Array, candidates: Written[], src: number, length: number): Written | undefined {
  for (const x of candidates) if (x.length === length && sameBytes(msg, x.src, src, length)) return x;
  return undefined;
}

/** Copies the uncompressed name at `at`; returns the offset after it in `msg`. */
function copyName(msg: Uint8Array, at: number, w: Writer, mayPoint: boolean): number {
  const starts: number[] = [];
  let p = at;
  for (;;) {
    if (p >= msg.length) throw new Malformed();
    const len = msg[p]!;
    if (len === 0) break;
    if (len > 63) throw new Malformed(); // a pointer or a reserved label type
    starts.push(p);
    p += 1 + len;
  }
  const end = p + 1;
  // FNV-1a of each suffix's bytes, built from the last label back (exact bytes, so case is kept).
  const hashes = new Array<number>(starts.length);
  let h = 0x811c9dc5;
  for (let i = starts.length - 1; i >= 0; i--) {
    const labelEnd = i + 1 < starts.length ? starts[i + 1]! : end - 1;
    for (let j = starts[i]!; j < labelEnd; j++) h = Math.imul(h ^ msg[j]!, 0x01000193);
    hashes[i] = h;
  }
  for (let i = 0; i < starts.length; i++) {
    const src = starts[i]!;
    const length = end - src;
    const same = w.seen.get(hashes[i]!);
    const target = same === undefined ? undefined : findSame(msg, same, src, length);
    if (target !== undefined && mayPoint) {
      w.out[w.pos++] = 0xc0 | (target.out >> 8);
      w.out[w.pos++] = target.out & 0xff;
      return end;
    }
    if (target === undefined && w.pos <= maxPointerOffset) {
      const entry = { src, length, out: w.pos };
      if (same) same.push(entry);
      else w.seen.set(hashes[i]!, [entry]);
    }
    const labelEnd = i + 1 < starts.length ? starts[i + 1]! : end - 1;
    for (let j = src; j < labelEnd; j++) w.out[w.pos++] = msg[j]!;
  }
  w.out[w.pos++] = 0;
  return end;
}
