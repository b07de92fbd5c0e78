// A transmit-limited broadcast queue (memberlist queue.go
// TransmitLimitedQueue). Each message is sent a bounded number of times in
// total; fresher (less transmitted) messages go first, then the largest that
// fits, then the newest. Messages with the same `key` replace each other
// (memberlist keys its own broadcasts by node name; Serf's have no key).

export interface QueuedBroadcast<M> {
  readonly id: number;
  readonly key: string | undefined;
  readonly msg: M;
  readonly sizeBytes: number;
  transmits: number;
}

/** memberlist retransmitLimit: mult * ceil(log10(n + 1)). */
export function retransmitLimit(retransmitMult: number, n: number): number {
  const nodeScale = Math.ceil(Math.log10(n + 1));
  return retransmitMult * nodeScale;
}

/** Queue order: fewer transmits first, then larger, then newer. */
function before<M>(a: QueuedBroadcast<M>, b: QueuedBroadcast<M>): boolean {
  if (a.transmits !== b.transmits) return a.transmits < b.transmits;
  if (a.sizeBytes !== b.sizeBytes) return a.sizeBytes > b.sizeBytes;
  return a.id > b.id;
}

export class BroadcastQueue<M> {
  // Kept in queue order (memberlist keeps a btree): a packet is filled from
  // the front. Sorting the whole queue for every packet (plus once more for
  // Serf's own queues) was the single largest item of a node's CPU in a
  // 50-node join storm, where each queue holds ~100 alives and intents.
  #items: QueuedBroadcast<M>[] = [];
  #byKey = new Map<string, QueuedBroadcast<M>>();
  #ids = new Set<number>();
  #nextId = 1;
  /** How many queued messages have each size (the smallest bounds a packet's fill). */
  #sizes = new Map<number, number>();

  get length(): number {
    return this.#items.length;
  }

  /** Queue a message; returns its id (see `has`). A same-key message is replaced. */
  push(msg: M, options: { sizeBytes: number; key?: string }): number {
    if (options.key !== undefined) {
      const old = this.#byKey.get(options.key);
      if (old) this.#remove(old);
    }
    const id = this.#nextId++;
    const b: QueuedBroadcast<M> = { id, key: options.key, msg, sizeBytes: options.sizeBytes, transmits: 0 };
    this.#insert(b);
    return id;
  }

  /** Whether the message with this id is still queued (not yet sent to its limit, not replaced). */
  has(id: number): boolean {
    return this.#ids.has(id);
  }

  /**
   * Take messages that fit into `limitBytes`, each costing `overheadBytes`
   * extra. Every inclusion is a transmission; at `transmitLimit` a message is
   * dropped from the queue.
   */
  take(options: { overheadBytes: number; limitBytes: number; transmitLimit: number }): M[] {
    return this.takeSized(options).msgs;
  }

  /** Like take, and also reports the bytes used (sizes plus overheads). */
  takeSized(options: { overheadBytes: number; limitBytes: number; transmitLimit: number }): { msgs: M[]; bytes: number } {
    const items = this.#items;
    if (items.length === 0) return { msgs: [], bytes: 0 };
    let free = options.limitBytes;
    const out: M[] = [];
    const taken: QueuedBroadcast<M>[] = [];
    const at: number[] = [];
    // Nothing smaller than the smallest queued message can fit: stop there
    // instead of walking the rest of a long queue (thousands of alives after
    // a large pool's join) for every packet.
    const smallest = this.#smallest() + options.overheadBytes;
    let i = 0;
    for (; i < items.length; i++) {
      if (free - options.overheadBytes <= 0 || free < smallest) break;
      const b = items[i]!;
      const cost = b.sizeBytes + options.overheadBytes;
      if (cost > free) continue;
      free -= cost;
      out.push(b.msg);
      taken.push(b);
      at.push(i);
    }
    if (taken.length > 0) {
      // Each taken message moves back by its new transmit count (or leaves at the limit).
      // They all lie in the walked prefix: close their gaps there, not over the whole queue.
      let j = at[0]!;
      for (let k = at[0]!, t = 0; k < i; k++) {
        if (t < at.length && at[t] === k) {
          t++;
          continue;
        }
        items[j++] = items[k]!;
      }
      items.splice(j, i - j);
      for (const b of taken) {
        b.transmits++;
        if (b.transmits >= options.transmitLimit) this.#forget(b);
        else this.#insert(b, false);
      }
    }
    return { msgs: out, bytes: options.limitBytes - free };
  }

  /** Keep at most maxDepth messages, dropping the most transmitted (then oldest) first. */
  prune(maxDepth: number): number {
    const excess = this.#items.length - maxDepth;
    if (excess <= 0) return 0;
    const ordered = [...this.#items].sort((a, b) => b.transmits - a.transmits || a.id - b.id);
    const drop = new Set(ordered.slice(0, excess));
    this.#items = this.#items.filter((b) => !drop.has(b));
    for (const b of drop) this.#forget(b);
    return excess;
  }

  clear(): void {
    this.#items = [];
    this.#byKey.clear();
    this.#ids.clear();
    this.#sizes.clear();
  }

  #smallest(): number {
    let min = Infinity;
    for (const size of this.#sizes.keys()) if (size < min) min = size;
    return min;
  }

  #insert(b: QueuedBroadcast<M>, index = true): void {
    const items = this.#items;
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (before(items[mid]!, b)) lo = mid + 1;
      else hi = mid;
    }
    items.splice(lo, 0, b);
    if (!index) return;
    this.#ids.add(b.id);
    this.#sizes.set(b.sizeBytes, (this.#sizes.get(b.sizeBytes) ?? 0) + 1);
    if (b.key !== undefined) this.#byKey.set(b.key, b);
  }

  #remove(b: QueuedBroadcast<M>): void {
    const i = this.#items.indexOf(b);
    if (i >= 0) this.#items.splice(i, 1);
    this.#forget(b);
  }

  #forget(b: QueuedBroadcast<M>): void {
    if (!this.#ids.delete(b.id)) return;
    const left = (this.#sizes.get(b.sizeBytes) ?? 1) - 1;
    if (left > 0) this.#sizes.set(b.sizeBytes, left);
    else this.#sizes.delete(b.sizeBytes);
    if (b.key !== undefined && this.#byKey.get(b.key) === b) this.#byKey.delete(b.key);
  }
}
