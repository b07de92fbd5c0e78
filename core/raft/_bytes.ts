// Byte helpers shared inside core/raft. Pure.

/** Join chunks into one buffer (a snapshot received or stored in pieces, wanted whole). */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const c of chunks) n += c.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
