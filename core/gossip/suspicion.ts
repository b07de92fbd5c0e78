// Lifeguard suspicion (memberlist suspicion.go / util.go), as data plus pure
// functions. memberlist arms a time.AfterFunc and resets it on every
// confirmation; here the deadline is state, and the core checks it on tick.

/** memberlist suspicionTimeout: mult * max(1, log10(max(1, n))) * interval, ms precision. */
export function suspicionTimeoutMs(n: number, options: { suspicionMult: number; probeIntervalMs: number }): number {
  const { suspicionMult, probeIntervalMs: intervalMs } = options;
  const nodeScale = Math.max(1, Math.log10(Math.max(1, n)));
  // Go: Duration(mult) * Duration(nodeScale*1000) * interval / 1000
  return Math.floor((suspicionMult * Math.floor(nodeScale * 1000) * intervalMs) / 1000);
}

/**
 * memberlist remainingSuspicionTime: time left, from `elapsedMs` after the
 * start, given `n` confirmations out of `k` expected. May be negative.
 */
export function remainingSuspicionTimeMs(
  n: number,
  k: number,
  options: { elapsedMs: number; minMs: number; maxMs: number },
): number {
  const { elapsedMs, ...bounds } = options;
  const frac = k <= 0 ? 1 : Math.log(n + 1) / Math.log(k + 1);
  const raw = bounds.maxMs / 1000 - frac * (bounds.maxMs / 1000 - bounds.minMs / 1000);
  let timeout = Math.floor(1000 * raw);
  if (timeout < bounds.minMs) timeout = bounds.minMs;
  return timeout - elapsedMs;
}

/** Expected independent confirmations: mult - 2, or 0 when the cluster is too small. */
export function expectedConfirmations(suspicionMult: number, n: number): number {
  const k = suspicionMult - 2;
  return n - 2 < k ? 0 : Math.max(0, k);
}

/** One running suspicion about one node. */
export class Suspicion {
  readonly startMs: number;
  readonly k: number;
  readonly minMs: number;
  readonly maxMs: number;
  #confirmations = new Set<string>();
  #n = 0;
  #deadlineMs: number;

  constructor(options: { from: string; k: number; minMs: number; maxMs: number; startMs: number }) {
    this.startMs = options.startMs;
    this.k = options.k;
    this.minMs = options.minMs;
    this.maxMs = options.maxMs;
    this.#confirmations.add(options.from);
    this.#deadlineMs = options.startMs + (options.k < 1 ? options.minMs : options.maxMs);
  }

  get confirmations(): number {
    return this.#n;
  }

  get deadlineMs(): number {
    return this.#deadlineMs;
  }

  /** Count `from` as an independent confirmation; true if it was new (rebroadcast then). */
  confirm(from: string): boolean {
    if (this.#n >= this.k) return false;
    if (this.#confirmations.has(from)) return false;
    this.#confirmations.add(from);
    this.#n++;
    const remaining = remainingSuspicionTimeMs(this.#n, this.k, { elapsedMs: 0, minMs: this.minMs, maxMs: this.maxMs });
    this.#deadlineMs = this.startMs + remaining;
    return true;
  }

  isExpired(nowMs: number): boolean {
    return nowMs >= this.#deadlineMs;
  }
}
