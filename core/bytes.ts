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

/** A byte stream re-cut into pieces of `size` bytes, the last maybe shorter (an upload into RPC-sized pushes, a download into pieces worth a file write). */
export async function* pieces(source: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<Uint8Array> {
  // Buffer.concat, not concatBytes: a piece is megabytes and is filled whole, so zeroing it first is waste.
  let parts: Uint8Array[] = [];
  let have = 0;
  for await (const chunk of source) {
    let c = chunk;
    while (have + c.length >= size) {
      const take = size - have;
      parts.push(c.subarray(0, take));
      yield parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
      parts = [];
      have = 0;
      c = c.subarray(take);
    }
    if (c.length > 0) {
      parts.push(c);
      have += c.length;
    }
  }
  if (have > 0) yield parts.length === 1 ? parts[0]! : Buffer.concat(parts, have);
}
