// Byte helpers shared across core (and the CLI). Pure.

/** The chunks end to end in one buffer (a snapshot received in pieces, DER parts, stdin). */
export function concatBytes(chunks: Iterable<Uint8Array>): Uint8Array {
  const list = Array.isArray(chunks) ? (chunks as readonly Uint8Array[]) : [...chunks];
  let n = 0;
  for (const c of list) n += c.length;
  const out = new Uint8Array(n);
  let off = 0;
  for (const c of list) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
