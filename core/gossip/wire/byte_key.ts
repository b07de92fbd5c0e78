// A byte string as a Map key.
import { Buffer } from "node:buffer";

type Slice = (this: Uint8Array, start: number, end: number) => string;

/**
 * One char per byte. The codec keys its caches with it (every part of every
 * packet, every push/pull entry), and TextDecoder("latin1") goes through ICU,
 * several times slower than Node's Buffer#latin1Slice (the documented
 * Buffer#toString path, which other runtimes get, lies between; figures in
 * docs/performance.md).
 */
export const byteKey: (bytes: Uint8Array) => string = pickByteKey();

function pickByteKey(): (bytes: Uint8Array) => string {
  const slice = (Buffer.prototype as unknown as { latin1Slice?: Slice }).latin1Slice;
  if (typeof slice === "function") {
    try {
      // An internal method: use it only if it does what Node's does.
      if (slice.call(Uint8Array.of(0x41, 0xe9, 0x80), 0, 3) === "A\u00e9\u0080") return (b) => slice.call(b, 0, b.length);
    } catch {
      // fall through
    }
  }
  return (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
}
