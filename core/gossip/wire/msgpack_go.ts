// The go-msgpack 0.5.5 dialect (docs/gossip-wire.md section 2), written by hand
// because the exact bytes matter: strings and []byte both use the raw family
// (0xa0-0xbf, 0xda, 0xdb; never str8 or bin), struct keys are sorted, integers
// use the smallest unsigned format when non-negative, floats are always 0xcb.
//
// Decoding produces a tagged value tree (`MpValue`) so that field readers can
// apply Go's acceptance rules (bin is not a string, ints may be bools, ...).
// Nothing here throws on bad input: decoders return `WireResult`s.

import type { WireError, WireResult } from "./messages.ts";

// ---------------------------------------------------------------------------
// Values

export type MpValue =
  | { t: "nil" }
  | { t: "bool"; v: boolean }
  /** Integers: number when safe, bigint beyond 2^53. */
  | { t: "int"; v: number | bigint }
  | { t: "float"; v: number }
  /** The raw/str family (0xa0-0xbf, 0xd9, 0xda, 0xdb): Go strings and []byte. */
  | { t: "raw"; v: Uint8Array }
  /** The bin family (0xc4-0xc6): accepted for []byte only. */
  | { t: "bin"; v: Uint8Array }
  | { t: "array"; v: MpValue[] }
  | { t: "map"; v: [MpValue, MpValue][] }
  | { t: "ext"; type: number; v: Uint8Array };

export function wireError(code: string, message: string): WireError {
  return { code, message };
}

export function fail<T>(code: string, message: string): WireResult<T> {
  return { ok: false, error: { code, message } };
}

export function ok<T>(value: T): WireResult<T> {
  return { ok: true, value };
}

const maxDepth = 64;

// Decoded values are never mutated: every nil (and false/true) is the same object. Serf's
// push/pull state carries its 512-slot event buffer, mostly nils, in every push/pull.
const nilValue: MpValue = Object.freeze({ t: "nil" });
const falseValue: MpValue = Object.freeze({ t: "bool", v: false });
const trueValue: MpValue = Object.freeze({ t: "bool", v: true });
/** Positive fixints (0..127): field values such as states, ports' high bytes, small counters. */
const fixInts: readonly MpValue[] = Array.from({ length: 128 }, (_, i): MpValue => Object.freeze({ t: "int", v: i }));

/** Result of decoding one value from a buffer at an offset. */
export type DecodeStep = WireResult<{ value: MpValue; offset: number }>;

/**
 * Decode one msgpack value starting at `offset`. A buffer that ends inside
 * the value gives error code "truncated" (callers parsing TCP streams use it
 * to wait for more bytes).
 */
export function decodeValue(buf: Uint8Array, offset = 0): DecodeStep {
  const r = new Reader(buf, offset);
  const value = r.value(0);
  if (r.err) return { ok: false, error: r.err };
  return { ok: true, value: { value: value!, offset: r.pos } };
}

/** Decode exactly one value filling the whole buffer. */
export function decodeWhole(buf: Uint8Array): WireResult<MpValue> {
  const step = decodeValue(buf, 0);
  if (!step.ok) return step;
  if (step.value.offset !== buf.length) {
    return fail("bad_msgpack", `Trailing bytes after msgpack value: ${buf.length - step.value.offset}`);
  }
  return ok(step.value.value);
}

class Reader {
  readonly buf: Uint8Array;
  readonly view: DataView;
  pos: number;
  err: WireError | undefined;

  constructor(buf: Uint8Array, pos: number) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.pos = pos;
  }

  need(n: number): boolean {
    if (this.pos + n > this.buf.length) {
      this.err = wireError("truncated", `Msgpack value truncated at offset ${this.pos}: need ${n} more bytes`);
      return false;
    }
    return true;
  }

  bytes(n: number): Uint8Array | undefined {
    if (!this.need(n)) return undefined;
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  u8(): number | undefined {
    if (!this.need(1)) return undefined;
    return this.buf[this.pos++]!;
  }
  u16(): number | undefined {
    if (!this.need(2)) return undefined;
    const v = this.view.getUint16(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number | undefined {
    if (!this.need(4)) return undefined;
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  value(depth: number): MpValue | undefined {
    if (depth > maxDepth) {
      this.err = wireError("bad_msgpack", `Msgpack nesting deeper than ${maxDepth}`);
      return undefined;
    }
    const b = this.u8();
    if (b === undefined) return undefined;
    if (b <= 0x7f) return fixInts[b];
    if (b >= 0xe0) return { t: "int", v: b - 0x100 };
    if (b >= 0xa0 && b <= 0xbf) return this.raw(b & 0x1f, "raw");
    if (b >= 0x90 && b <= 0x9f) return this.array(b & 0x0f, depth);
    if (b >= 0x80 && b <= 0x8f) return this.map(b & 0x0f, depth);
    const v = this.view;
    switch (b) {
      case 0xc0:
        return nilValue;
      case 0xc2:
        return falseValue;
      case 0xc3:
        return trueValue;
      case 0xc4: {
        const n = this.u8();
        return n === undefined ? undefined : this.raw(n, "bin");
      }
      case 0xc5: {
        const n = this.u16();
        return n === undefined ? undefined : this.raw(n, "bin");
      }
      case 0xc6: {
        const n = this.u32();
        return n === undefined ? undefined : this.raw(n, "bin");
      }
      case 0xc7:
      case 0xc8:
      case 0xc9: {
        const n = b === 0xc7 ? this.u8() : b === 0xc8 ? this.u16() : this.u32();
        if (n === undefined) return undefined;
        const type = this.u8();
        if (type === undefined) return undefined;
        const data = this.bytes(n);
        return data === undefined ? undefined : { t: "ext", type, v: data };
      }
      case 0xca: {
        if (!this.need(4)) return undefined;
        const f = v.getFloat32(this.pos);
        this.pos += 4;
        return { t: "float", v: f };
      }
      case 0xcb: {
        if (!this.need(8)) return undefined;
        const f = v.getFloat64(this.pos);
        this.pos += 8;
        return { t: "float", v: f };
      }
      case 0xcc: {
        const n = this.u8();
        return n === undefined ? undefined : { t: "int", v: n };
      }
      case 0xcd: {
        const n = this.u16();
        return n === undefined ? undefined : { t: "int", v: n };
      }
      case 0xce: {
        const n = this.u32();
        return n === undefined ? undefined : { t: "int", v: n };
      }
      case 0xcf: {
        if (!this.need(8)) return undefined;
        const n = v.getBigUint64(this.pos);
        this.pos += 8;
        return { t: "int", v: n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n };
      }
      case 0xd0: {
        if (!this.need(1)) return undefined;
        const n = v.getInt8(this.pos);
        this.pos += 1;
        return { t: "int", v: n };
      }
      case 0xd1: {
        if (!this.need(2)) return undefined;
        const n = v.getInt16(this.pos);
        this.pos += 2;
        return { t: "int", v: n };
      }
      case 0xd2: {
        if (!this.need(4)) return undefined;
        const n = v.getInt32(this.pos);
        this.pos += 4;
        return { t: "int", v: n };
      }
      case 0xd3: {
        if (!this.need(8)) return undefined;
        const n = v.getBigInt64(this.pos);
        this.pos += 8;
        const safe = n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= BigInt(Number.MIN_SAFE_INTEGER);
        return { t: "int", v: safe ? Number(n) : n };
      }
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8: {
        const n = 1 << (b - 0xd4);
        const type = this.u8();
        if (type === undefined) return undefined;
        const data = this.bytes(n);
        return data === undefined ? undefined : { t: "ext", type, v: data };
      }
      case 0xd9: {
        const n = this.u8();
        return n === undefined ? undefined : this.raw(n, "raw");
      }
      case 0xda: {
        const n = this.u16();
        return n === undefined ? undefined : this.raw(n, "raw");
      }
      case 0xdb: {
        const n = this.u32();
        return n === undefined ? undefined : this.raw(n, "raw");
      }
      case 0xdc: {
        const n = this.u16();
        return n === undefined ? undefined : this.array(n, depth);
      }
      case 0xdd: {
        const n = this.u32();
        return n === undefined ? undefined : this.array(n, depth);
      }
      case 0xde: {
        const n = this.u16();
        return n === undefined ? undefined : this.map(n, depth);
      }
      case 0xdf: {
        const n = this.u32();
        return n === undefined ? undefined : this.map(n, depth);
      }
      default:
        this.err = wireError("bad_msgpack", `Invalid msgpack byte 0x${b.toString(16)} at offset ${this.pos - 1}`);
        return undefined;
    }
  }

  raw(n: number, t: "raw" | "bin"): MpValue | undefined {
    const data = this.bytes(n);
    return data === undefined ? undefined : { t, v: data };
  }

  array(n: number, depth: number): MpValue | undefined {
    // Every element takes at least one byte: a count beyond the rest of the
    // buffer can only be truncated (and must not allocate first).
    if (!this.need(n)) return undefined;
    const out: MpValue[] = [];
    for (let i = 0; i < n; i++) {
      const v = this.value(depth + 1);
      if (v === undefined) return undefined;
      out.push(v);
    }
    return { t: "array", v: out };
  }

  map(n: number, depth: number): MpValue | undefined {
    if (!this.need(n * 2)) return undefined;
    const out: [MpValue, MpValue][] = [];
    for (let i = 0; i < n; i++) {
      const k = this.value(depth + 1);
      if (k === undefined) return undefined;
      const v = this.value(depth + 1);
      if (v === undefined) return undefined;
      out.push([k, v]);
    }
    return { t: "map", v: out };
  }
}

/**
 * The offset just past the value at `offset`, without building it (framing a
 * TCP stream, which has no length prefix, before the one real decode): -1
 * when the buffer ends inside the value, -2 for a byte no msgpack value
 * starts with. Nesting is not limited here; the real decode checks it.
 */
export function skipValue(buf: Uint8Array, offset: number): number {
  const len = buf.length;
  let pos = offset;
  let pending = 1; // values still to skip
  while (pending > 0) {
    if (pos >= len) return -1;
    const b = buf[pos++]!;
    pending--;
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) continue;
    let n = 0; // bytes to skip after the header
    if (b >= 0xa0 && b <= 0xbf) n = b & 0x1f;
    else if (b >= 0x80 && b <= 0x9f) {
      // As decodeValue: every element takes at least one byte, so a count beyond the buffer is truncated.
      const values = b >= 0x90 ? b & 0x0f : 2 * (b & 0x0f);
      if (values > len - pos) return -1;
      pending += values;
      continue;
    } else {
      switch (b) {
        case 0xc4: case 0xd9: // bin8, str8
          if (pos + 1 > len) return -1;
          n = buf[pos]!;
          pos += 1;
          break;
        case 0xc5: case 0xda: // bin16, raw16
          if (pos + 2 > len) return -1;
          n = (buf[pos]! << 8) | buf[pos + 1]!;
          pos += 2;
          break;
        case 0xc6: case 0xdb: // bin32, raw32
          if (pos + 4 > len) return -1;
          n = readU32(buf, pos);
          pos += 4;
          break;
        case 0xc7: // ext8
          if (pos + 1 > len) return -1;
          n = buf[pos]! + 1;
          pos += 1;
          break;
        case 0xc8: // ext16
          if (pos + 2 > len) return -1;
          n = ((buf[pos]! << 8) | buf[pos + 1]!) + 1;
          pos += 2;
          break;
        case 0xc9: // ext32
          if (pos + 4 > len) return -1;
          n = readU32(buf, pos) + 1;
          pos += 4;
          break;
        case 0xca: case 0xd2: n = 4; break;
        case 0xcb: case 0xcf: case 0xd3: n = 8; break;
        case 0xcc: case 0xd0: n = 1; break;
        case 0xcd: case 0xd1: n = 2; break;
        case 0xce: n = 4; break;
        case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: n = 1 + (1 << (b - 0xd4)); break;
        case 0xdc: case 0xdd: case 0xde: case 0xdf: {
          const wide = b === 0xdd || b === 0xdf;
          if (pos + (wide ? 4 : 2) > len) return -1;
          const count = wide ? readU32(buf, pos) : (buf[pos]! << 8) | buf[pos + 1]!;
          pos += wide ? 4 : 2;
          const values = b === 0xde || b === 0xdf ? 2 * count : count;
          if (values > len - pos) return -1;
          pending += values;
          continue;
        }
        default:
          return -2;
      }
    }
    if (n > len - pos) return -1;
    pos += n;
  }
  return pos;
}

function readU32(buf: Uint8Array, pos: number): number {
  return ((buf[pos]! << 24) >>> 0) + ((buf[pos + 1]! << 16) | (buf[pos + 2]! << 8) | buf[pos + 3]!);
}

// ---------------------------------------------------------------------------
// Field readers (Go's acceptance rules, section 2.2)

const utf8 = new TextDecoder("utf-8");
const utf8Enc = new TextEncoder();

export function textOf(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

export function bytesOf(text: string): Uint8Array {
  return utf8Enc.encode(text);
}

/** The key/value pairs of a struct map, keyed by field name (last wins). */
export type StructFields = Map<string, MpValue>;

export function asStruct(v: MpValue, what: string): WireResult<StructFields> {
  if (v.t === "nil") return ok(new Map());
  if (v.t !== "map") return fail("bad_field", `Expected a map for ${what}, got ${v.t}`);
  const out: StructFields = new Map();
  for (const [k, val] of v.v) {
    if (k.t !== "raw") return fail("bad_field", `Map key of ${what} is not a string (${k.t})`);
    out.set(textOf(k.v), val);
  }
  return ok(out);
}

/** Go string field: raw/str or nil; bin is rejected (as Go does). */
export function asString(v: MpValue | undefined, field: string): WireResult<string> {
  if (v === undefined || v.t === "nil") return ok("");
  if (v.t === "raw") return ok(textOf(v.v));
  return fail("bad_field", `Field "${field}" must be a string, got ${v.t}`);
}

/** Go []byte field: raw, bin, array of small ints; nil/absent -> null. */
export function asBytesOrNull(v: MpValue | undefined, field: string): WireResult<Uint8Array | null> {
  if (v === undefined || v.t === "nil") return ok(null);
  if (v.t === "raw" || v.t === "bin") return ok(v.v.slice());
  if (v.t === "array") {
    const out = new Uint8Array(v.v.length);
    for (let i = 0; i < v.v.length; i++) {
      const e = v.v[i]!;
      if (e.t !== "int" || typeof e.v !== "number" || e.v < -128 || e.v > 255) {
        return fail("bad_field", `Field "${field}" has a non-byte array element`);
      }
      out[i] = e.v & 0xff;
    }
    return ok(out);
  }
  return fail("bad_field", `Field "${field}" must be bytes, got ${v.t}`);
}

/** Go []byte field where nil and empty are the same to us. */
export function asBytes(v: MpValue | undefined, field: string): WireResult<Uint8Array> {
  const r = asBytesOrNull(v, field);
  if (!r.ok) return r;
  return ok(r.value ?? new Uint8Array(0));
}

/** Go unsigned integer field of at most `bits` bits (64 -> safe integers only). */
export function asUint(v: MpValue | undefined, field: string, bits: 8 | 16 | 32 | 64): WireResult<number> {
  if (v === undefined || v.t === "nil") return ok(0);
  if (v.t !== "int") return fail("bad_field", `Field "${field}" must be an integer, got ${v.t}`);
  if (typeof v.v === "bigint") return fail("bad_field", `Field "${field}" is beyond 2^53: ${v.v}`);
  const max = bits === 64 ? Number.MAX_SAFE_INTEGER : 2 ** bits - 1;
  if (v.v < 0 || v.v > max) return fail("bad_field", `Field "${field}" out of range for uint${bits}: ${v.v}`);
  return ok(v.v);
}

/** Go signed integer field (int, int64): safe integers only. */
export function asInt(v: MpValue | undefined, field: string): WireResult<number> {
  if (v === undefined || v.t === "nil") return ok(0);
  if (v.t !== "int") return fail("bad_field", `Field "${field}" must be an integer, got ${v.t}`);
  if (typeof v.v === "bigint") return fail("bad_field", `Field "${field}" is beyond 2^53: ${v.v}`);
  return ok(v.v);
}

/** Go bool field: c2/c3, or fixint 0/1. */
export function asBool(v: MpValue | undefined, field: string): WireResult<boolean> {
  if (v === undefined || v.t === "nil") return ok(false);
  if (v.t === "bool") return ok(v.v);
  if (v.t === "int" && (v.v === 0 || v.v === 1)) return ok(v.v === 1);
  return fail("bad_field", `Field "${field}" must be a bool, got ${v.t}`);
}

/** Go float64 field: ca, cb or integer. */
export function asFloat(v: MpValue | undefined, field: string): WireResult<number> {
  if (v === undefined || v.t === "nil") return ok(0);
  if (v.t === "float") return ok(v.v);
  if (v.t === "int") return ok(Number(v.v));
  return fail("bad_field", `Field "${field}" must be a float, got ${v.t}`);
}

export function asArray(v: MpValue | undefined, field: string): WireResult<MpValue[] | null> {
  if (v === undefined || v.t === "nil") return ok(null);
  if (v.t === "array") return ok(v.v);
  return fail("bad_field", `Field "${field}" must be an array, got ${v.t}`);
}

/** Go map[string]string / map[string]uint64 etc.: entries with string keys. */
export function asMapEntries(v: MpValue | undefined, field: string): WireResult<[string, MpValue][]> {
  if (v === undefined || v.t === "nil") return ok([]);
  if (v.t !== "map") return fail("bad_field", `Field "${field}" must be a map, got ${v.t}`);
  const out: [string, MpValue][] = [];
  for (const [k, val] of v.v) {
    if (k.t !== "raw") return fail("bad_field", `Map key in "${field}" is not a string`);
    out.push([textOf(k.v), val]);
  }
  return ok(out);
}

/**
 * Runs a decode body that uses `take` to unwrap field results: the first
 * failure short-circuits into an error result. Keeps decoders flat.
 */
export class FieldError extends Error {
  readonly wire: WireError;
  constructor(wire: WireError) {
    super(wire.message);
    this.wire = wire;
  }
}

export function take<T>(r: WireResult<T>): T {
  if (!r.ok) throw new FieldError(r.error);
  return r.value;
}

export function guarded<T>(body: () => T): WireResult<T> {
  try {
    return ok(body());
  } catch (err) {
    if (err instanceof FieldError) return { ok: false, error: err.wire };
    return fail("bad_msgpack", `Unexpected decode failure: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// ---------------------------------------------------------------------------
// Encoder

/** Appends go-msgpack 0.5.5 encodings to a growing buffer. */
export class MpWriter {
  #buf: Uint8Array;
  #view: DataView;
  #len = 0;

  constructor(initialBytes = 256) {
    this.#buf = new Uint8Array(initialBytes);
    this.#view = new DataView(this.#buf.buffer);
  }

  #ensure(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
    this.#view = new DataView(next.buffer);
  }

  byte(b: number): this {
    this.#ensure(1);
    this.#buf[this.#len++] = b & 0xff;
    return this;
  }

  /** Appends bytes verbatim (no msgpack header). */
  append(bytes: Uint8Array): this {
    this.#ensure(bytes.length);
    this.#buf.set(bytes, this.#len);
    this.#len += bytes.length;
    return this;
  }

  u16(n: number): this {
    this.#ensure(2);
    this.#view.setUint16(this.#len, n);
    this.#len += 2;
    return this;
  }

  u32(n: number): this {
    this.#ensure(4);
    this.#view.setUint32(this.#len, n >>> 0);
    this.#len += 4;
    return this;
  }

  nil(): this {
    return this.byte(0xc0);
  }

  /** `n` nils in a row. */
  nils(n: number): this {
    this.#ensure(n);
    this.#buf.fill(0xc0, this.#len, this.#len + n);
    this.#len += n;
    return this;
  }

  bool(b: boolean): this {
    return this.byte(b ? 0xc3 : 0xc2);
  }

  /** Any integer: smallest unsigned format if >= 0, smallest signed otherwise. */
  int(n: number | bigint): this {
    if (typeof n === "number" && !Number.isInteger(n)) throw new RangeError(`Not an integer: ${n}`);
    // Small non-negative numbers (sequence numbers, incarnations, ports, Lamport times) need no BigInt.
    if (typeof n === "number" && n >= 0 && n <= 0xffffffff) {
      if (n <= 0x7f) return this.byte(n);
      if (n <= 0xff) return this.byte(0xcc).byte(n);
      if (n <= 0xffff) return this.byte(0xcd).u16(n);
      return this.byte(0xce).u32(n);
    }
    const big = BigInt(n);
    if (big >= 0n) {
      if (big <= 0x7fn) return this.byte(Number(big));
      if (big <= 0xffn) return this.byte(0xcc).byte(Number(big));
      if (big <= 0xffffn) return this.byte(0xcd).u16(Number(big));
      if (big <= 0xffffffffn) return this.byte(0xce).u32(Number(big));
      this.byte(0xcf);
      this.#ensure(8);
      this.#view.setBigUint64(this.#len, big);
      this.#len += 8;
      return this;
    }
    if (big >= -32n) return this.byte(Number(big) & 0xff);
    if (big >= -128n) return this.byte(0xd0).byte(Number(big) & 0xff);
    if (big >= -32768n) {
      this.byte(0xd1);
      this.#ensure(2);
      this.#view.setInt16(this.#len, Number(big));
      this.#len += 2;
      return this;
    }
    if (big >= -2147483648n) {
      this.byte(0xd2);
      this.#ensure(4);
      this.#view.setInt32(this.#len, Number(big));
      this.#len += 4;
      return this;
    }
    this.byte(0xd3);
    this.#ensure(8);
    this.#view.setBigInt64(this.#len, big);
    this.#len += 8;
    return this;
  }

  float64(x: number): this {
    this.byte(0xcb);
    this.#ensure(8);
    this.#view.setFloat64(this.#len, x);
    this.#len += 8;
    return this;
  }

  /** Raw family header + bytes (how Go writes both string and []byte). */
  raw(bytes: Uint8Array): this {
    const n = bytes.length;
    if (n < 32) this.byte(0xa0 | n);
    else if (n < 65536) this.byte(0xda).u16(n);
    else this.byte(0xdb).u32(n);
    return this.append(bytes);
  }

  /** []byte that Go sends as nil when absent. */
  rawOrNil(bytes: Uint8Array | null | undefined): this {
    return bytes === null || bytes === undefined ? this.nil() : this.raw(bytes);
  }

  str(s: string): this {
    const n = s.length;
    if (n < 32) {
      // Short ASCII (node names, field names, tags): write the bytes directly.
      this.#ensure(1 + n);
      const start = this.#len + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 0x7f) break;
        this.#buf[start + i] = c;
      }
      if (i === n) {
        this.#buf[this.#len] = 0xa0 | n;
        this.#len = start + n;
        return this;
      }
    }
    return this.raw(utf8Enc.encode(s));
  }

  mapHeader(n: number): this {
    if (n < 16) return this.byte(0x80 | n);
    if (n < 65536) return this.byte(0xde).u16(n);
    return this.byte(0xdf).u32(n);
  }

  arrayHeader(n: number): this {
    if (n < 16) return this.byte(0x90 | n);
    if (n < 65536) return this.byte(0xdc).u16(n);
    return this.byte(0xdd).u32(n);
  }

  /**
   * A Go struct: map with keys in byte order of the field name. Entries whose
   * writer is undefined are omitted (omitempty).
   */
  struct(fields: Record<string, ((w: MpWriter) => unknown) | undefined>): this {
    const names = sortedFieldNames(Object.keys(fields).filter((k) => fields[k] !== undefined));
    this.mapHeader(names.length);
    for (const name of names) {
      this.str(name);
      fields[name]!(this);
    }
    return this;
  }

  /** A Go map[string]string (sorted for determinism; Go's order is random). */
  stringMap(m: ReadonlyMap<string, string>): this {
    const keys = [...m.keys()].sort(compareBytewise);
    this.mapHeader(keys.length);
    for (const k of keys) this.str(k).str(m.get(k)!);
    return this;
  }

  get length(): number {
    return this.#len;
  }

  /** A copy of the bytes written so far. */
  bytes(): Uint8Array {
    return this.#buf.slice(0, this.#len);
  }
}

// Struct field sets are few and fixed (one per message type and option mix): sort each once.
const sortedFieldCache = new Map<string, readonly string[]>();

function sortedFieldNames(names: string[]): readonly string[] {
  const key = names.join("\u0000");
  let sorted = sortedFieldCache.get(key);
  if (!sorted) {
    sorted = Object.freeze(names.sort(compareBytewise));
    if (sortedFieldCache.size < 1024) sortedFieldCache.set(key, sorted);
  }
  return sorted;
}

/** Byte order of UTF-8 strings (equal to code-unit order for ASCII names). */
export function compareBytewise(a: string, b: string): number {
  // Below U+D800 UTF-16 code units order like UTF-8 bytes; anything else takes the encoder.
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x >= 0xd800 || y >= 0xd800) return compareUtf8(a, b);
    if (x !== y) return x - y;
  }
  return a.length === b.length ? 0 : compareUtf8(a, b);
}

function compareUtf8(a: string, b: string): number {
  const x = utf8Enc.encode(a);
  const y = utf8Enc.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
  return x.length - y.length;
}
