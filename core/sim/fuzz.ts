// Seeded mutation fuzzing for tests: start from valid inputs our own encoders
// made and damage them (bit flips, truncation, splicing, random bytes, huge
// lengths, odd unicode, wrong types). Every mutation comes from one `Rng`,
// so a failing case replays exactly: FUZZ_SEED=n runs only seed n,
// FUZZ_SEEDS=n runs n seeds from FUZZ_SEED_BASE (default 1). Pure.

import { seeds, type Rng } from "./rng.ts";

/** Seeds for a fuzz test; `count` is the default number (keep it small: the suite runs on two cores). */
export function fuzzSeeds(count: number, env: Record<string, string | undefined> = readEnv()): number[] {
  return seeds(count, { SIM_SEED: env.FUZZ_SEED, SIM_SEEDS: env.FUZZ_SEEDS, SIM_SEED_BASE: env.FUZZ_SEED_BASE });
}

/** The line a failure message ends with, so the case can be replayed. */
export function replayHint(seed: number, iteration?: number): string {
  return `seed ${seed}${iteration === undefined ? "" : ` iteration ${iteration}`} (replay: FUZZ_SEED=${seed})`;
}

export function hex(bytes: Uint8Array, max = 400): string {
  const h = Array.from(bytes.subarray(0, max), (b) => b.toString(16).padStart(2, "0")).join("");
  return bytes.length > max ? `${h}… (${bytes.length} bytes)` : h;
}

/** Byte values that tend to mean something to a decoder: lengths, msgpack markers, sign bits. */
const interestingBytes = [0x00, 0x01, 0x7f, 0x80, 0xc0, 0xc1, 0xc4, 0xc6, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xfe, 0xff];
/** 32-bit values for length fields. */
const interestingU32 = [0, 1, 0x7f, 0x80, 0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff];

export type ByteMutation =
  | "flip-bit"
  | "set-byte"
  | "truncate"
  | "insert-random"
  | "delete-range"
  | "duplicate-range"
  | "splice"
  | "huge-length"
  | "random";

const byteMutations: readonly ByteMutation[] = [
  "flip-bit", "flip-bit", "set-byte", "truncate", "insert-random", "delete-range", "duplicate-range", "splice", "huge-length", "random",
];

/**
 * One to three mutations of `input` (never changed in place). `corpus` gives
 * splices something to splice in; `only` restricts the kinds.
 */
export function mutateBytes(rng: Rng, input: Uint8Array, options: { corpus?: readonly Uint8Array[]; only?: readonly ByteMutation[]; rounds?: number } = {}): Uint8Array {
  let b: Uint8Array = input.slice();
  const rounds = options.rounds ?? rng.range(1, 3);
  for (let r = 0; r < rounds; r++) b = mutateOnce(rng, b, rng.pick(options.only ?? byteMutations), options.corpus);
  return b;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function mutateOnce(rng: Rng, b: Uint8Array, kind: ByteMutation, corpus: readonly Uint8Array[] | undefined): Uint8Array {
  switch (kind) {
    case "flip-bit":
      if (b.length > 0) b[rng.int(b.length)]! ^= 1 << rng.int(8);
      return b;
    case "set-byte":
      if (b.length > 0) b[rng.int(b.length)] = rng.chance(0.5) ? rng.pick(interestingBytes) : rng.int(256);
      return b;
    case "truncate":
      return b.slice(0, rng.int(b.length + 1));
    case "insert-random": {
      const at = rng.int(b.length + 1);
      return concat(b.subarray(0, at), rng.bytes(rng.range(1, 16)), b.subarray(at));
    }
    case "delete-range": {
      if (b.length === 0) return b;
      const at = rng.int(b.length);
      return concat(b.subarray(0, at), b.subarray(Math.min(b.length, at + rng.range(1, 16))));
    }
    case "duplicate-range": {
      if (b.length === 0) return b;
      const at = rng.int(b.length);
      const piece = b.subarray(at, Math.min(b.length, at + rng.range(1, 32)));
      return concat(b.subarray(0, at), piece, b.subarray(at));
    }
    case "splice": {
      const other = corpus && corpus.length > 0 ? rng.pick(corpus) : rng.bytes(rng.int(32));
      const at = rng.int(b.length + 1);
      const from = rng.int(other.length + 1);
      return concat(b.subarray(0, at), other.subarray(from, from + rng.range(1, 64)));
    }
    case "huge-length": {
      if (b.length < 4) return concat(b, new Uint8Array([0xff, 0xff, 0xff, 0xff]));
      const at = rng.int(b.length - 3);
      new DataView(b.buffer, b.byteOffset).setUint32(at, rng.pick(interestingU32), false);
      return b;
    }
    case "random":
      return rng.bytes(rng.int(b.length + 16));
  }
}

/** Characters that trip up text handling: controls, separators, surrogates, BOM, RTL, combining marks, emoji. */
export const oddChars: readonly string[] = [
  "\u0000", "\u0001", "\t", "\n", "\r", "\u007f", "\u0085", "\u00a0", "\u00ff", "\u0100", "\u0301", "\u200b", "\u200e",
  "\u202e", "\u2028", "\ufeff", "\ufffd", "\uffff", "\ud800", "\udfff", "\u{1f600}", "é", "☃", "%", "%00", "%zz", "%ff",
  "%2F", "/", "//", "/../", "\\", "?", "#", "&", "=", ";", ":", "@", "*", "+", " ", '"', "'", "<", ">", "{", "}", "[", "]",
];

/** One to three mutations of a string: odd characters, truncation, repetition. */
export function mutateText(rng: Rng, s: string, options: { rounds?: number } = {}): string {
  const rounds = options.rounds ?? rng.range(1, 3);
  for (let r = 0; r < rounds; r++) {
    const at = rng.int(s.length + 1);
    switch (rng.int(6)) {
      case 0:
        s = s.slice(0, at) + rng.pick(oddChars) + s.slice(at);
        break;
      case 1:
        s = s.slice(0, at);
        break;
      case 2:
        s = s.slice(0, at) + s.slice(at + rng.range(1, 8));
        break;
      case 3: {
        const piece = s.slice(at, at + rng.range(1, 8));
        s = s.slice(0, at) + piece.repeat(rng.range(2, 64)) + s.slice(at);
        break;
      }
      case 4:
        s = s.slice(0, at) + "x".repeat(rng.pick([64, 256, 1024, 70_000])) + s.slice(at);
        break;
      default:
        s = s.slice(0, at) + String.fromCharCode(rng.int(0x10000)) + s.slice(at);
    }
  }
  return s;
}

/** A value of some other type, or an extreme of the same one. */
export function oddValue(rng: Rng): unknown {
  switch (rng.int(22)) {
    case 0: return null;
    case 1: return undefined;
    case 2: return true;
    case 3: return 0;
    case 4: return -1;
    case 5: return 1.5;
    case 6: return 2 ** 53;
    case 7: return -(2 ** 63);
    case 8: return Number.NaN;
    case 9: return Infinity;
    case 10: return "";
    case 11: return "x".repeat(rng.pick([1, 300, 70_000]));
    case 12: return rng.pick(oddChars);
    case 13: return [];
    case 14: return [rng.int(5), "a", null];
    case 15: return {};
    case 16: return { key: 1, nested: { deep: [1] } };
    case 17: return rng.bytes(rng.int(16));
    case 18: return new Uint8Array(0);
    case 19: return "1";
    case 20: return 4294967296;
    default: return { constructor: "x", toString: 5, valueOf: null };
  }
}

/**
 * A copy of a plain value (objects, arrays, Uint8Array, primitives) with one
 * to three changes: a node replaced by `oddValue`, a key dropped or added, a
 * string mutated. `undefined` entries of objects are kept as keys.
 */
export function mutateValue(rng: Rng, value: unknown, options: { rounds?: number } = {}): unknown {
  let v = structuredCloneLike(value);
  const rounds = options.rounds ?? rng.range(1, 3);
  for (let r = 0; r < rounds; r++) v = mutateNode(rng, v, 0);
  return v;
}

function structuredCloneLike(v: unknown): unknown {
  if (v instanceof Uint8Array) return v.slice();
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [k, structuredCloneLike(x)]));
  if (Array.isArray(v)) return v.map(structuredCloneLike);
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: structuredCloneLike(x), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

function mutateNode(rng: Rng, v: unknown, depth: number): unknown {
  const descend = depth < 6 && rng.chance(0.7);
  if (descend && Array.isArray(v) && v.length > 0) {
    const i = rng.int(v.length);
    if (rng.chance(0.15)) v.splice(i, 1);
    else if (rng.chance(0.1)) v.push(...Array.from({ length: rng.pick([1, 2, 1000]) }, () => structuredCloneLike(v[i])));
    else v[i] = mutateNode(rng, v[i], depth + 1);
    return v;
  }
  if (descend && typeof v === "object" && v !== null && !(v instanceof Uint8Array)) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length > 0 && !rng.chance(0.1)) {
      const k = rng.pick(keys);
      if (rng.chance(0.15)) delete o[k];
      else o[k] = mutateNode(rng, o[k], depth + 1);
    } else {
      // An own "__proto__" key (as JSON.parse makes), not a new prototype.
      Object.defineProperty(o, rng.pick(["extra", "", "__proto__", "constructor", keys[0] ?? "k"]), { value: oddValue(rng), enumerable: true, writable: true, configurable: true });
    }
    return o;
  }
  if (typeof v === "string" && rng.chance(0.5)) return mutateText(rng, v, { rounds: 1 });
  if (v instanceof Uint8Array && rng.chance(0.5)) return mutateBytes(rng, v);
  if (typeof v === "number" && rng.chance(0.5)) return rng.pick([0, -1, v + 1, v - 1, 0.5, 2 ** 32, 2 ** 53, -(2 ** 53), Number.MAX_VALUE]);
  return oddValue(rng);
}

/**
 * A copy of a decoded message with one to three leaves changed to another
 * value of the same type (numbers to extremes, strings to odd text, bytes
 * mutated, booleans flipped, lists grown or emptied): what a decoder that
 * checks types can still hand a core.
 */
export function mutateLeaves(rng: Rng, value: unknown, options: { rounds?: number } = {}): unknown {
  let v = structuredCloneLike(value);
  const rounds = options.rounds ?? rng.range(1, 3);
  for (let r = 0; r < rounds; r++) v = mutateLeaf(rng, v, 0);
  return v;
}

const oddNumbers = [0, 1, -1, 255, 256, 65535, 65536, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 0.5];

function mutateLeaf(rng: Rng, v: unknown, depth: number): unknown {
  if (v instanceof Uint8Array) return rng.chance(0.2) ? rng.bytes(rng.pick([0, 1, 4, 16, 17, 300])) : mutateBytes(rng, v);
  if (Array.isArray(v)) {
    if (v.length === 0 || depth > 8) return v;
    if (rng.chance(0.1)) return [];
    if (rng.chance(0.1)) return [...v, ...Array.from({ length: rng.pick([1, 100]) }, () => structuredCloneLike(rng.pick(v)))];
    const i = rng.int(v.length);
    v[i] = mutateLeaf(rng, v[i], depth + 1);
    return v;
  }
  if (v instanceof Map) {
    if (v.size === 0) return v;
    const k = rng.pick([...v.keys()]);
    if (rng.chance(0.2)) v.set(typeof k === "string" ? mutateText(rng, k, { rounds: 1 }) : k, v.get(k));
    else v.set(k, mutateLeaf(rng, v.get(k), depth + 1));
    return v;
  }
  if (typeof v === "object" && v !== null) {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o).filter((k) => o[k] !== undefined);
    if (keys.length === 0 || depth > 8) return v;
    const k = rng.pick(keys);
    o[k] = mutateLeaf(rng, o[k], depth + 1);
    return o;
  }
  if (typeof v === "string") return rng.chance(0.3) ? rng.pick(["", "x".repeat(rng.pick([64, 300, 70_000])), ...oddChars]) : mutateText(rng, v, { rounds: 1 });
  if (typeof v === "number") return rng.chance(0.7) ? rng.pick(oddNumbers) : v + rng.range(-2, 2);
  if (typeof v === "boolean") return !v;
  return v;
}

function readEnv(): Record<string, string | undefined> {
  const g = globalThis as { process?: { env: Record<string, string | undefined> } };
  return g.process?.env ?? {};
}
