// LZW exactly as Go's compress/lzw with order LSB and literal width 8 (the
// GIF flavour), which memberlist uses for its `compress` messages
// (docs/gossip-wire.md section 3.6). The encoder reproduces Go's output bit for
// bit; the decoder follows Go's reader, including the mandatory EOF code.

import type { WireResult } from "./messages.ts";

const clearCode = 256;
const eofCode = 257;
const maxWidth = 12;
const maxCode = (1 << maxWidth) - 1; // 4095

// The encoder's code table: open addressing over (prefix code << 8 | literal)
// keys, as Go's writer does, reused across calls. An entry is live only when
// its stamp equals the current generation, so a reset costs no clearing.
// Allocated on first use (160 KiB): an agent whose peers do not compress
// never needs it.
const tableSize = 1 << 14;
const tableMask = tableSize - 1;
let encodeTables: { keys: Int32Array; codes: Uint16Array; stamps: Uint32Array } | undefined;
let generation = 0;

function nextGeneration(stamps: Uint32Array): void {
  generation = (generation + 1) >>> 0;
  if (generation === 0) {
    stamps.fill(0);
    generation = 1;
  }
}

/** Compress like Go's `lzw.NewWriter(w, lzw.LSB, 8)` + Write + Close. */
export function lzwCompress(input: Uint8Array): Uint8Array {
  // At most 12 bits per input byte, plus clear/EOF codes and the final partial byte.
  const out = new Uint8Array(Math.ceil(input.length * 1.5) + Math.ceil(input.length / 2048) * 2 + 8);
  let o = 0;
  let bits = 0;
  let nBits = 0;
  let width = 9;
  let hi = eofCode;
  let overflow = 1 << 9;
  encodeTables ??= { keys: new Int32Array(tableSize), codes: new Uint16Array(tableSize), stamps: new Uint32Array(tableSize) };
  const { keys: tableKeys, codes: tableCodes, stamps: tableStamps } = encodeTables;
  nextGeneration(tableStamps);

  const write = (code: number): void => {
    bits |= code << nBits;
    nBits += width;
    while (nBits >= 8) {
      out[o++] = bits & 0xff;
      bits >>>= 8;
      nBits -= 8;
    }
  };
  // Returns false when the code space ran out and the state was reset.
  const incHi = (): boolean => {
    hi++;
    if (hi === overflow) {
      width++;
      overflow <<= 1;
    }
    if (hi === maxCode) {
      write(clearCode);
      width = 9;
      hi = eofCode;
      overflow = 1 << 9;
      nextGeneration(tableStamps);
      return false;
    }
    return true;
  };

  write(clearCode);
  if (input.length > 0) {
    let code = input[0]!;
    outer: for (let i = 1; i < input.length; i++) {
      const literal = input[i]!;
      const key = (code << 8) | literal;
      let h = ((key >> 12) ^ key) & tableMask;
      while (tableStamps[h] === generation) {
        if (tableKeys[h] === key) {
          code = tableCodes[h]!;
          continue outer;
        }
        h = (h + 1) & tableMask;
      }
      write(code);
      code = literal;
      if (!incHi()) continue;
      tableStamps[h] = generation;
      tableKeys[h] = key;
      tableCodes[h] = hi;
    }
    write(code);
    incHi();
  }
  write(eofCode);
  if (nBits > 0) out[o++] = bits & 0xff;
  return out.slice(0, o);
}

// The decoder's tables, reused across calls (decompression is synchronous) and
// cleared per call; allocated on first use.
let decodeTables: { prefix: Uint16Array; suffix: Uint8Array; scratch: Uint8Array } | undefined;

/**
 * Decompress a Go LZW (LSB, 8) stream. The stream must end with the EOF code;
 * output beyond `maxBytes` is an error (decompression bombs).
 */
export function lzwDecompress(input: Uint8Array, options: { maxBytes?: number } = {}): WireResult<Uint8Array> {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  decodeTables ??= { prefix: new Uint16Array(1 << maxWidth), suffix: new Uint8Array(1 << maxWidth), scratch: new Uint8Array(1 << maxWidth) };
  const { prefix, suffix, scratch } = decodeTables;
  // A fresh table per stream, as Go's reader has (malformed streams may read unset entries).
  prefix.fill(0);
  suffix.fill(0);
  let out = new Uint8Array(Math.max(64, input.length * 3));
  let o = 0;
  let pos = 0;
  let bits = 0;
  let nBits = 0;
  let width = 9;
  let hi = eofCode;
  let overflow = 1 << 9;
  let last = -1;

  const grow = (n: number): boolean => {
    if (o + n > maxBytes) return false;
    if (o + n <= out.length) return true;
    let size = out.length * 2;
    while (size < o + n) size *= 2;
    const next = new Uint8Array(Math.min(size, Math.max(maxBytes, o + n)));
    next.set(out.subarray(0, o));
    out = next;
    return true;
  };
  const tooLarge = (): WireResult<Uint8Array> => ({
    ok: false,
    error: { code: "too_large", message: `LZW output exceeds ${maxBytes} bytes` },
  });

  for (;;) {
    while (nBits < width) {
      if (pos >= input.length) {
        return { ok: false, error: { code: "lzw", message: "LZW stream ended before the EOF code" } };
      }
      bits |= input[pos++]! << nBits;
      nBits += 8;
    }
    const code = bits & ((1 << width) - 1);
    bits >>>= width;
    nBits -= width;

    if (code < clearCode) {
      if ((o >= out.length || o >= maxBytes) && !grow(1)) return tooLarge();
      out[o++] = code;
      if (last !== -1) {
        suffix[hi] = code;
        prefix[hi] = last;
      }
    } else if (code === clearCode) {
      width = 9;
      hi = eofCode;
      overflow = 1 << 9;
      last = -1;
      continue;
    } else if (code === eofCode) {
      return { ok: true, value: out.slice(0, o) };
    } else if (code <= hi) {
      let c = code;
      let i = scratch.length - 1;
      if (code === hi && last !== -1) {
        c = last;
        while (c >= clearCode) c = prefix[c]!;
        scratch[i--] = c;
        c = last;
      }
      while (c >= clearCode) {
        if (i < 0) return { ok: false, error: { code: "lzw", message: "LZW code chain too long" } };
        scratch[i--] = suffix[c]!;
        c = prefix[c]!;
      }
      if (i < 0) return { ok: false, error: { code: "lzw", message: "LZW code chain too long" } };
      scratch[i] = c;
      const n = scratch.length - i;
      if (!grow(n)) return tooLarge();
      for (let j = i; j < scratch.length; j++) out[o++] = scratch[j]!;
      if (last !== -1) {
        suffix[hi] = c;
        prefix[hi] = last;
      }
    } else {
      return { ok: false, error: { code: "lzw", message: `Invalid LZW code ${code} (next is ${hi})` } };
    }
    last = code;
    hi++;
    if (hi >= overflow) {
      if (width === maxWidth) {
        last = -1;
        hi--;
      } else {
        width++;
        overflow = 1 << width;
      }
    }
  }
}
