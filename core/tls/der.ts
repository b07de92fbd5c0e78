// The slice of ASN.1 DER (ITU-T X.690) that X.509 certificates need: an
// encoder for the types a certificate is built from, and a reader that walks
// tag-length-value triples without interpreting them. Pure; every value is a
// Uint8Array of complete DER.
import { concatBytes } from "../bytes.ts";
import { isoTimestamp } from "../clock/utc_text.ts";

export const TAG = {
  boolean: 0x01,
  integer: 0x02,
  bitString: 0x03,
  octetString: 0x04,
  null: 0x05,
  oid: 0x06,
  utf8String: 0x0c,
  printableString: 0x13,
  ia5String: 0x16,
  utcTime: 0x17,
  generalizedTime: 0x18,
  sequence: 0x30,
  set: 0x31,
} as const;


/** One TLV: the tag byte, the definite length (short or long form), the content. */
export function tlv(tag: number, content: Uint8Array): Uint8Array {
  const n = content.length;
  let head: number[];
  if (n < 0x80) head = [tag, n];
  else {
    const len: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) len.unshift(v & 0xff);
    head = [tag, 0x80 | len.length, ...len];
  }
  return concatBytes([Uint8Array.from(head), content]);
}

export function sequence(...items: readonly Uint8Array[]): Uint8Array {
  return tlv(TAG.sequence, concatBytes(items));
}

export function set(...items: readonly Uint8Array[]): Uint8Array {
  return tlv(TAG.set, concatBytes(items));
}

/** `[n]` context-specific: constructed (EXPLICIT, or IMPLICIT over a SEQUENCE) or primitive (IMPLICIT over a primitive). */
export function context(n: number, content: Uint8Array, constructed: boolean): Uint8Array {
  return tlv(0x80 | (constructed ? 0x20 : 0) | n, content);
}

/** A non-negative INTEGER from its big-endian magnitude (leading zeros dropped, a 0x00 added when the top bit is set). */
export function unsignedInteger(magnitude: Uint8Array): Uint8Array {
  let i = 0;
  while (i < magnitude.length - 1 && magnitude[i] === 0) i++;
  let body = magnitude.subarray(i);
  if (body.length === 0) body = Uint8Array.of(0);
  if (body[0]! & 0x80) body = concatBytes([Uint8Array.of(0), body]);
  return tlv(TAG.integer, body);
}

export function smallInteger(n: number): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) throw new RangeError(`smallInteger: ${n} is out of range`);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return unsignedInteger(Uint8Array.from(bytes));
}

export function boolean(b: boolean): Uint8Array {
  return tlv(TAG.boolean, Uint8Array.of(b ? 0xff : 0x00));
}

export function octetString(bytes: Uint8Array): Uint8Array {
  return tlv(TAG.octetString, bytes);
}

export function bitString(bytes: Uint8Array, unusedBits = 0): Uint8Array {
  return tlv(TAG.bitString, concatBytes([Uint8Array.of(unusedBits), bytes]));
}

/**
 * A named-bit BIT STRING (KeyUsage): bit i of `bits` is ASN.1 bit i (the most
 * significant bit of the first byte is bit 0); trailing zero bits are dropped.
 */
export function namedBits(bits: number): Uint8Array {
  if (bits === 0) return bitString(new Uint8Array(0));
  const highest = 31 - Math.clz32(bits);
  const bytes = new Uint8Array(Math.floor(highest / 8) + 1);
  for (let i = 0; i <= highest; i++) if (bits & (1 << i)) bytes[i >> 3]! |= 0x80 >> (i & 7);
  return bitString(bytes, 7 - (highest & 7));
}

export function oid(dotted: string): Uint8Array {
  const arcs = dotted.split(".").map(Number);
  if (arcs.length < 2 || arcs.some((a) => !Number.isSafeInteger(a) || a < 0)) throw new RangeError(`Invalid OID "${dotted}"`);
  const out: number[] = [];
  const push = (v: number): void => {
    const groups = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) groups.unshift(0x80 | (x & 0x7f));
    out.push(...groups);
  };
  push(arcs[0]! * 40 + arcs[1]!);
  for (const a of arcs.slice(2)) push(a);
  return tlv(TAG.oid, Uint8Array.from(out));
}

// Built per call: nothing in this file runs when the bundle loads.
const encoder = { encode: (s: string): Uint8Array => new TextEncoder().encode(s) };

export function utf8String(s: string): Uint8Array {
  return tlv(TAG.utf8String, encoder.encode(s));
}

export function ia5String(s: string): Uint8Array {
  if (!/^[\x00-\x7f]*$/.test(s)) throw new RangeError(`"${s}" is not an IA5String: it has a non-ASCII character`);
  return tlv(TAG.ia5String, encoder.encode(s));
}

/** PrintableString's alphabet (X.680 §41.4). */
export function isPrintable(s: string): boolean {
  return /^[A-Za-z0-9 '()+,\-./:=?]*$/.test(s);
}

/** A directory string as Go writes it: PrintableString when every character allows, else UTF8String. */
export function directoryString(s: string): Uint8Array {
  return isPrintable(s) ? tlv(TAG.printableString, encoder.encode(s)) : utf8String(s);
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, "Z". */
export function time(ms: number): Uint8Array {
  const year = new Date(ms).getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) throw new RangeError(`Time ${ms} ms cannot be encoded in a certificate: year ${year} is outside 0..9999`);
  const digits = isoTimestamp(Math.floor(ms / 1000) * 1000).slice(0, 19).replace(/[-T:]/g, ""); // YYYYMMDDHHMMSS
  if (year >= 1950 && year < 2050) return tlv(TAG.utcTime, encoder.encode(`${digits.slice(2)}Z`));
  return tlv(TAG.generalizedTime, encoder.encode(`${digits}Z`));
}

// ---- reading ----

/** One element found in a DER buffer: its tag, the whole TLV and its content. */
export interface Element {
  tag: number;
  /** The whole TLV (header and content). */
  raw: Uint8Array;
  content: Uint8Array;
}

export class DerError extends Error {}

/** The element at `offset`; throws DerError when the bytes are not DER. */
export function readElement(bytes: Uint8Array, offset = 0): Element {
  if (offset + 2 > bytes.length) throw new DerError("Truncated DER: no room for a tag and a length");
  const tag = bytes[offset]!;
  if ((tag & 0x1f) === 0x1f) throw new DerError(`Unsupported DER: multi-byte tag at byte ${offset}`);
  let len = bytes[offset + 1]!;
  let head = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4) throw new DerError(`Invalid DER length at byte ${offset}`);
    if (offset + 2 + n > bytes.length) throw new DerError("Truncated DER length");
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + bytes[offset + 2 + i]!;
    head += n;
  }
  const end = offset + head + len;
  if (end > bytes.length) throw new DerError(`Truncated DER: element at byte ${offset} runs past the end`);
  return { tag, raw: bytes.subarray(offset, end), content: bytes.subarray(offset + head, end) };
}

/** The elements inside a constructed element's content, in order. */
export function children(content: Uint8Array): Element[] {
  const out: Element[] = [];
  for (let off = 0; off < content.length;) {
    const e = readElement(content, off);
    out.push(e);
    off += e.raw.length;
  }
  return out;
}

/** Dotted text of an OBJECT IDENTIFIER's content. */
export function oidText(content: Uint8Array): string {
  const arcs: number[] = [];
  let v = 0;
  for (const b of content) {
    v = v * 128 + (b & 0x7f);
    if (!(b & 0x80)) {
      arcs.push(v);
      v = 0;
    }
  }
  if (arcs.length === 0) throw new DerError("Empty OBJECT IDENTIFIER");
  const first = arcs[0]!;
  const head = first < 80 ? [Math.floor(first / 40), first % 40] : [2, first - 80];
  return [...head, ...arcs.slice(1)].join(".");
}

/** Milliseconds since the epoch of a UTCTime or GeneralizedTime element. */
export function readTime(e: Element): number {
  const text = new TextDecoder().decode(e.content);
  const m = e.tag === TAG.utcTime ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text) : /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(text);
  if (!m || (e.tag !== TAG.utcTime && e.tag !== TAG.generalizedTime)) throw new DerError(`Invalid certificate time "${text}"`);
  let year = Number(m[1]);
  if (e.tag === TAG.utcTime) year += year < 50 ? 2000 : 1900;
  return Date.UTC(year, Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}

