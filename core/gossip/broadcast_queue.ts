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

export class BroadcastQueue<M> {
  #items: QueuedBroadcast<M>[] = [];
  #nextId = 1;

  get length(): number {
    return this.#items.length;
  }

  /** Queue a message; returns its id (see `has`). A same-key message is replaced. */
  push(msg: M, options: { sizeBytes: number; key?: string }): number {
    if (options.key !== undefined) {
      this.#items = this.#items.filter((b) => b.key !== options.key);
    }
    const id = this.#nextId++;
    this.#items.push({ id, key: options.key, msg, sizeBytes: options.sizeBytes, transmits: 0 });
    return id;
  }

  /** Whether the message with this id is still queued (not yet sent to its limit, not replaced). */
  has(id: number): boolean {
    return this.#items.some((b) => b.id === id);
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
    if (this.#items.length === 0) return { msgs: [], bytes: 0 };
    const ordered = [...this.#items].sort(
      (a, b) => a.transmits - b.transmits || b.sizeBytes - a.sizeBytes || b.id - a.id,
    );
    let free = options.limitBytes;
    const out: M[] = [];
    const done = new Set<number>();
    for (const b of ordered) {
      if (free - options.overheadBytes <= 0) break;
      const cost = b.sizeBytes + options.overheadBytes;
      if (cost > free) continue;
      free -= cost;
      out.push(b.msg);
      b.transmits++;
      if (b.transmits >= options.transmitLimit) done.add(b.id);
    }
    if (done.size > 0) this.#items = this.#items.filter((b) => !done.has(b.id));
    return { msgs: out, bytes: options.limitBytes - free };
  }

  /** Keep at most maxDepth messages, dropping the most transmitted (then oldest) first. */
  prune(maxDepth: number): number {
    const excess = this.#items.length - maxDepth;
    if (excess <= 0) return 0;
    const ordered = [...this.#items].sort((a, b) => b.transmits - a.transmits || a.id - b.id);
    const drop = new Set(ordered.slice(0, excess).map((b) => b.id));
    this.#items = this.#items.filter((b) => !drop.has(b.id));
    return excess;
  }

  clear(): void {
    this.#items = [];
  }
}
