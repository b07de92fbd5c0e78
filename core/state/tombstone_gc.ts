// When tombstones may be reaped (consul agent/consul/state/tombstone_gc.go):
// the leader hints "tombstones up to index I exist now"; once a hint is older
// than the TTL, every blocking reader has had time to see those deletes and
// the leader replicates a reap up to I. Pure: time comes in as `nowMs`.
// Hints are bucketed by granularity so a burst of deletes makes one reap.

export const defaultTombstoneTtlMs = 15 * 60_000;
export const defaultTombstoneGranularityMs = 30_000;

export class TombstoneGc {
  readonly ttlMs: number;
  readonly granularityMs: number;
  /** Expiry bucket time → highest index hinted into it. */
  readonly #buckets = new Map<number, number>();

  constructor(options: { ttlMs?: number; granularityMs?: number } = {}) {
    this.ttlMs = options.ttlMs ?? defaultTombstoneTtlMs;
    this.granularityMs = Math.max(1, options.granularityMs ?? defaultTombstoneGranularityMs);
  }

  /** Tombstones up to index exist as of nowMs (e.g. the store's "tombstones" max index). */
  hint(index: number, nowMs: number): void {
    if (!(index > 0)) return;
    const at = Math.ceil((nowMs + this.ttlMs) / this.granularityMs) * this.granularityMs;
    const prev = this.#buckets.get(at) ?? 0;
    if (index > prev) this.#buckets.set(at, index);
  }

  /** Highest index whose bucket expired by nowMs (0 if none); those buckets are dropped. */
  expire(nowMs: number): number {
    let max = 0;
    for (const [at, idx] of this.#buckets) {
      if (at <= nowMs) {
        if (idx > max) max = idx;
        this.#buckets.delete(at);
      }
    }
    return max;
  }

  /** Next time expire() can return something, or undefined. */
  nextExpiryMs(): number | undefined {
    let next: number | undefined;
    for (const at of this.#buckets.keys()) if (next === undefined || at < next) next = at;
    return next;
  }

  /** Forget every hint (leadership lost: the next leader keeps its own). */
  reset(): void {
    this.#buckets.clear();
  }

  get pendingBuckets(): number {
    return this.#buckets.size;
  }
}
