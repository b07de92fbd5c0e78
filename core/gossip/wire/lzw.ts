// LZW exactly as Go's compress/lzw with order LSB and literal width 8 (the
// GIF flavour), which memberlist uses for its `compress` messages
// (gossip-wire.md section 3.6). The encoder reproduces Go's output bit for
// bit; the decoder follows Go's reader, including the mandatory EOF code.

import type { WireResult } from "./messages.ts";

const clearCode = 256;
const eofCode = 257;
const maxWidth = 12;
const maxCode = (1 << maxWidth) - 1; // 4095

/** Compress like Go's `lzw.NewWriter(w, lzw.LSB, 8)` + Write + Close. */
export function lzwCompress(input: Uint8Array): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let nBits = 0;
  let width = 9;
  let hi = eofCode;
  let overflow = 1 << 9;
  let table = new Map<number, number>();

  const write = (code: number): void => {
    bits |= code << nBits;
    nBits += width;
    while (nBits >= 8) {
      out.push(bits & 0xff);
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
      table = new Map();
      return false;
    }
    return true;
  };

  write(clearCode);
  if (input.length > 0) {
    let code = input[0]!;
    for (let i = 1; i < input.length; i++) {
      const literal = input[i]!;
      const key = (code << 8) | literal;
      const hit = table.get(key);
      if (hit !== undefined) {
        code = hit;
        continue;
      }
      write(code);
      code = literal;
      if (!incHi()) continue;
      table.set(key, hi);
    }
    write(code);
    incHi();
  }
  write(eofCode);
  if (nBits > 0) out.push(bits & 0xff);
  return Uint8Array.from(out);
}

/**
 * Decompress a Go LZW (LSB, 8) stream. The stream must end with the EOF code;
 * output beyond `maxBytes` is an error (decompression bombs).
 */
export function lzwDecompress(input: Uint8Array, options: { maxBytes?: number } = {}): WireResult<Uint8Array> {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const prefix = new Uint16Array(1 << maxWidth);
  const suffix = new Uint8Array(1 << maxWidth);
  const scratch = new Uint8Array(1 << maxWidth);
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
      if (!grow(1)) return tooLarge();
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
      out.set(scratch.subarray(i), o);
      o += n;
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
