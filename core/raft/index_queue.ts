// Values keyed by Raft index, nearly always added in increasing order and
// removed from the front: a ring buffer instead of a Map.
//
// Why not a Map: V8 rebuilds a Map's hash table every so often when keys
// keep coming and going, and the old table keeps both its entries and a
// link to the new table (for live iterators). Once one table of such a Map
// has reached the old generation, each dead table keeps the next one, and
// every value they held, alive through young-generation GCs until the next
// full GC, so all of them get promoted. For the leader's pending proposals
// that was every request's promise chain. Here a removed value's slot is
// cleared, and the buffer is only replaced when it is full.

export class IndexQueue<T> {
  #keys: number[];
  #vals: (T | undefined)[];
  #mask: number;
  /** Physical position of the first slot in use. */
  #head = 0;
  /** Slots in use, from head, including removed ones between live values. */
  #len = 0;
  /** Live values. */
  #size = 0;

  constructor(capacity = 64) {
    let cap = 8;
    while (cap < capacity) cap *= 2;
    this.#keys = new Array<number>(cap).fill(0);
    this.#vals = new Array<T | undefined>(cap).fill(undefined);
    this.#mask = cap - 1;
  }

  get size(): number {
    return this.#size;
  }

  /** Lowest index held, or undefined when empty. */
  firstKey(): number | undefined {
    return this.#size === 0 ? undefined : this.#keys[this.#head];
  }

  /** Highest index held, or undefined when empty. */
  lastKey(): number | undefined {
    return this.#size === 0 ? undefined : this.#keys[(this.#head + this.#len - 1) & this.#mask];
  }

  get(index: number): T | undefined {
    const at = this.#find(index);
    return at < 0 ? undefined : this.#vals[(this.#head + at) & this.#mask];
  }

  has(index: number): boolean {
    return this.get(index) !== undefined;
  }

  /** Add or replace. Indices above the last one are the fast path; others are placed in order. */
  set(index: number, value: T): void {
    if (value === undefined) throw new TypeError("IndexQueue values cannot be undefined");
    if (this.#len === 0 || index > this.#keys[(this.#head + this.#len - 1) & this.#mask]!) {
      if (this.#len === this.#keys.length) this.#grow();
      const p = (this.#head + this.#len) & this.#mask;
      this.#keys[p] = index;
      this.#vals[p] = value;
      this.#len++;
      this.#size++;
      return;
    }
    const at = this.#find(index);
    if (at >= 0) {
      const p = (this.#head + at) & this.#mask;
      if (this.#vals[p] === undefined) this.#size++;
      this.#vals[p] = value;
      return;
    }
    // Out of order (rare): rebuild in order.
    const entries = [...this.entries(), [index, value] as [number, T]].sort((a, b) => a[0] - b[0]);
    this.clear();
    for (const [k, v] of entries) this.set(k, v);
  }

  /** Removes index; returns whether it was present. */
  delete(index: number): boolean {
    const at = this.#find(index);
    if (at < 0) return false;
    const p = (this.#head + at) & this.#mask;
    if (this.#vals[p] === undefined) return false;
    this.#vals[p] = undefined;
    this.#size--;
    this.#trim();
    return true;
  }

  /** Removes every index <= upTo. */
  deleteUpTo(upTo: number): void {
    while (this.#len > 0 && this.#keys[this.#head]! <= upTo) this.#dropHead();
    this.#trim();
  }

  /** Removes every index >= from. */
  deleteFrom(from: number): void {
    while (this.#len > 0) {
      const p = (this.#head + this.#len - 1) & this.#mask;
      if (this.#keys[p]! < from) break;
      if (this.#vals[p] !== undefined) this.#size--;
      this.#vals[p] = undefined;
      this.#len--;
    }
    this.#trim();
  }

  /** Removes the lowest index; returns its value. */
  shift(): T | undefined {
    if (this.#size === 0) return undefined;
    const v = this.#vals[this.#head];
    this.#dropHead();
    this.#trim();
    return v;
  }

  clear(): void {
    for (let i = 0; i < this.#len; i++) this.#vals[(this.#head + i) & this.#mask] = undefined;
    this.#head = 0;
    this.#len = 0;
    this.#size = 0;
  }

  /** Live [index, value] pairs in index order (a snapshot: safe to modify the queue meanwhile). */
  entries(): [number, T][] {
    const out: [number, T][] = [];
    for (let i = 0; i < this.#len; i++) {
      const p = (this.#head + i) & this.#mask;
      const v = this.#vals[p];
      if (v !== undefined) out.push([this.#keys[p]!, v]);
    }
    return out;
  }

  /** Live values in index order (a snapshot). */
  values(): T[] {
    return this.entries().map((e) => e[1]);
  }

  /** Slots the buffer has (for tests). */
  get capacity(): number {
    return this.#keys.length;
  }

  #dropHead(): void {
    if (this.#vals[this.#head] !== undefined) this.#size--;
    this.#vals[this.#head] = undefined;
    this.#head = (this.#head + 1) & this.#mask;
    this.#len--;
  }

  /** Drops removed slots at both ends. */
  #trim(): void {
    while (this.#len > 0 && this.#vals[this.#head] === undefined) {
      this.#head = (this.#head + 1) & this.#mask;
      this.#len--;
    }
    while (this.#len > 0 && this.#vals[(this.#head + this.#len - 1) & this.#mask] === undefined) this.#len--;
    if (this.#len === 0) this.#head = 0;
  }

  /** Logical position of index among the slots in use, or -1. */
  #find(index: number): number {
    let lo = 0;
    let hi = this.#len - 1;
    // The front is the common case (applying in order).
    if (hi >= 0 && this.#keys[this.#head] === index) return 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const k = this.#keys[(this.#head + mid) & this.#mask]!;
      if (k === index) return mid;
      if (k < index) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  #grow(): void {
    const cap = this.#keys.length * 2;
    const keys = new Array<number>(cap).fill(0);
    const vals = new Array<T | undefined>(cap).fill(undefined);
    for (let i = 0; i < this.#len; i++) {
      const p = (this.#head + i) & this.#mask;
      keys[i] = this.#keys[p]!;
      vals[i] = this.#vals[p];
      this.#vals[p] = undefined;
    }
    this.#keys = keys;
    this.#vals = vals;
    this.#mask = cap - 1;
    this.#head = 0;
  }
}
