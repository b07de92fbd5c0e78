// Random bytes, UUIDs and seeds for the agent without loading node:crypto.
// Importing node:crypto (or touching globalThis.crypto) initialises OpenSSL:
// resident memory in every agent (docs/performance.md) for a node ID written once and a few
// PRNG seeds. The kernel's CSPRNG, read from /dev/urandom, is the source
// OpenSSL itself seeds from; node:crypto is loaded only where there is no
// /dev/urandom (Windows).
import { closeSync, openSync, readSync } from "node:fs";

/** `n` bytes from the kernel's CSPRNG. */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  let fd: number | undefined;
  try {
    fd = openSync("/dev/urandom", "r");
    for (let got = 0; got < n;) {
      const k = readSync(fd, out, got, n - got, null);
      if (k <= 0) throw new Error("short read from /dev/urandom");
      got += k;
    }
    return out;
  } catch {
    process.getBuiltinModule("node:crypto").randomFillSync(out);
    return out;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A random (version 4) UUID, lower-case, as crypto.randomUUID returns. */
export function randomUUID(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  let hex = "";
  for (const x of b) hex += x.toString(16).padStart(2, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A random unsigned 32-bit seed (for core/sim/rng.ts). */
export function randomSeed(): number {
  const b = randomBytes(4);
  return ((b[0]! << 24) | (b[1]! << 16) | (b[2]! << 8) | b[3]!) >>> 0;
}
