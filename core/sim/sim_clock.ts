import type { Clock, Timer } from "../clock/clock.ts";

interface Scheduled {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * Virtual time. Timers fire in (time, insertion) order when the test advances
 * the clock; nothing happens on its own.
 */
export class SimClock implements Clock {
  #now: number;
  #seq = 0;
  #heap: Scheduled[] = [];
  readonly wallOffsetMs: number;

  constructor(options: { startMs?: number; wallOffsetMs?: number } = {}) {
    this.#now = options.startMs ?? 0;
    this.wallOffsetMs = options.wallOffsetMs ?? 1_700_000_000_000;
  }

  now(): number {
    return this.#now;
  }

  wallNow(): number {
    return this.wallOffsetMs + this.#now;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const item: Scheduled = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn, cancelled: false };
    this.#push(item);
    return { cancel: () => { item.cancelled = true; } };
  }

  /** Number of timers not yet fired or cancelled. */
  pending(): number {
    return this.#heap.filter((t) => !t.cancelled).length;
  }

  /** Time of the next live timer, or undefined. */
  nextAt(): number | undefined {
    this.#dropCancelled();
    return this.#heap[0]?.at;
  }

  /** Fire every timer due at or before now + ms, synchronously, then set now to that time. */
  advance(ms: number): void {
    const until = this.#now + ms;
    for (;;) {
      const next = this.#popDue(until);
      if (!next) break;
      this.#now = next.at;
      next.fn();
    }
    this.#now = until;
  }

  /**
   * Like advance, but lets promise chains settle after every timer, so async
   * drivers (await logStore.append …) make progress inside virtual time.
   */
  async runFor(ms: number): Promise<void> {
    const until = this.#now + ms;
    await drainMicrotasks();
    for (;;) {
      const next = this.#popDue(until);
      if (!next) break;
      this.#now = next.at;
      next.fn();
      await drainMicrotasks();
    }
    this.#now = until;
  }

  /** Run until pred() holds (checked after every timer), or throw after maxMs of virtual time. */
  async runUntil(pred: () => boolean, options: { maxMs: number; what?: string }): Promise<void> {
    const until = this.#now + options.maxMs;
    await drainMicrotasks();
    if (pred()) return;
    for (;;) {
      const next = this.#popDue(until);
      if (!next) break;
      this.#now = next.at;
      next.fn();
      await drainMicrotasks();
      if (pred()) return;
    }
    this.#now = until;
    if (!pred()) {
      throw new Error(`Condition not reached within ${options.maxMs} virtual ms${options.what ? `: ${options.what}` : ""}`);
    }
  }

  /** Synchronous runUntil for drivers that never await. Returns whether pred held. */
  advanceUntil(pred: () => boolean, maxMs: number): boolean {
    const until = this.#now + maxMs;
    if (pred()) return true;
    for (;;) {
      const next = this.#popDue(until);
      if (!next) break;
      this.#now = next.at;
      next.fn();
      if (pred()) return true;
    }
    this.#now = until;
    return pred();
  }

  #popDue(until: number): Scheduled | undefined {
    this.#dropCancelled();
    const top = this.#heap[0];
    if (!top || top.at > until) return undefined;
    return this.#pop();
  }

  #dropCancelled(): void {
    while (this.#heap.length > 0 && this.#heap[0]!.cancelled) this.#pop();
  }

  #less(a: Scheduled, b: Scheduled): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #push(item: Scheduled): void {
    const h = this.#heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.#less(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #pop(): Scheduled {
    const h = this.#heap;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.#less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.#less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

/** Let every queued promise continuation run (no real I/O may be pending). */
export async function drainMicrotasks(rounds = 1): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await new Promise<void>((resolve) => defer(resolve));
  }
}

const defer: (fn: () => void) => void = typeof setImmediate === "function"
  ? (fn) => { setImmediate(fn); }
  : (fn) => { setTimeout(fn, 0); };
