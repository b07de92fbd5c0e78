// Byte helpers shared across core (and the CLI). Pure.

/** The chunks end to end in one buffer (a snapshot received in pieces, DER parts, stdin). */
export function concatBytes(chunks: Iterable<Uint8Array>): Uint8Array {
  const list = Array.isArray(chunks) ? (chunks as readonly Uint8Array[]) : [...chunks];
  const out = new Uint8Array(byteLength(list));
  let off = 0;
  for (const c of list) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}

/** Bytes in all of `chunks`. */
export function byteLength(chunks: readonly Uint8Array[]): number {
  let n = 0;
  for (const c of chunks) n += c.length;
  return n;
}

/** Bytes given in one buffer or as parts end to end, as parts. */
export function partsOf(bytes: Uint8Array | readonly Uint8Array[]): readonly Uint8Array[] {
  return bytes instanceof Uint8Array ? [bytes] : bytes;
}

/**
 * A byte stream re-cut into pieces of `size` bytes (the first `firstSize`,
 * the last maybe shorter), each given as the chunks that make it up (views
 * where a chunk is cut, never copied): an upload into RPC-sized pushes.
 * Joining a piece is left to whoever needs it in one buffer (the RPC encoder
 * copies the parts into its frame anyway; a call in the same process takes
 * them as they are).
 */
export async function* pieces(source: AsyncIterable<Uint8Array>, size: number, firstSize = size): AsyncGenerator<Uint8Array[]> {
  let parts: Uint8Array[] = [];
  let have = 0;
  let want = firstSize;
  for await (const chunk of source) {
    let c = chunk;
    while (have + c.length >= want) {
      const take = want - have;
      parts.push(c.subarray(0, take));
      yield parts;
      parts = [];
      have = 0;
      want = size;
      c = c.subarray(take);
    }
    if (c.length > 0) {
      parts.push(c);
      have += c.length;
    }
  }
  if (have > 0) yield parts;
}
