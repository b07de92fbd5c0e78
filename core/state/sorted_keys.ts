// An ordered set of strings as a list of sorted blocks (at most blockSize
// keys each). Insert and delete cost O(log n + blockSize) instead of the
// O(n) splice of one big sorted array, and prefix scans walk blocks in order.

const blockSize = 512;

export class SortedKeys {
  /** Non-empty sorted blocks; every key in block i sorts before every key in block i+1. */
  #blocks: string[][] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Insert key (caller guarantees it is absent). */
  insert(key: string): void {
    const blocks = this.#blocks;
    this.#size++;
    if (blocks.length === 0) {
      blocks.push([key]);
      return;
    }
    const b = this.#blockFor(key);
    const block = blocks[b]!;
    const n = block.length;
    if (block[n - 1]! < key) block.push(key);
    else block.splice(lowerBound(block, key), 0, key);
    if (block.length > blockSize) blocks.splice(b + 1, 0, block.splice(blockSize >> 1));
  }

  /** Delete key if present; returns whether it was. */
  delete(key: string): boolean {
    if (this.#blocks.length === 0) return false;
    const b = this.#blockFor(key);
    const block = this.#blocks[b]!;
    const i = lowerBound(block, key);
    if (block[i] !== key) return false;
    block.splice(i, 1);
    this.#size--;
    if (block.length === 0) this.#blocks.splice(b, 1);
    return true;
  }

  /** Replace everything with these keys (any order, no duplicates). */
  load(keys: string[]): void {
    keys.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.#blocks = [];
    for (let i = 0; i < keys.length; i += blockSize >> 1) this.#blocks.push(keys.slice(i, i + (blockSize >> 1)));
    this.#size = keys.length;
  }

  /** Calls fn for each key starting with prefix, in order; fn returning false stops. */
  scan(prefix: string, fn: (key: string) => boolean | void): void {
    const blocks = this.#blocks;
    if (blocks.length === 0) return;
    let b = prefix === "" ? 0 : this.#blockFor(prefix);
    let i = prefix === "" ? 0 : lowerBound(blocks[b]!, prefix);
    for (; b < blocks.length; b++, i = 0) {
      const block = blocks[b]!;
      for (; i < block.length; i++) {
        const k = block[i]!;
        if (!k.startsWith(prefix)) return;
        if (fn(k) === false) return;
      }
    }
  }

  /** Index of the block where key belongs: the last block whose first key is ≤ key (or 0). */
  #blockFor(key: string): number {
    const blocks = this.#blocks;
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (blocks[mid]![0]! <= key) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }
}

/** First index i with keys[i] >= key. */
export function lowerBound(keys: readonly string[], key: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
