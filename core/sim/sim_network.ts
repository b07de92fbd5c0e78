import type { SimClock } from "./sim_clock.ts";
import type { Rng } from "./rng.ts";

/** Faults applied to one direction of a link (or to all links by default). */
export interface LinkFaults {
  /** Probability a message is lost. */
  loss: number;
  /** Delivery delay range in virtual ms, inclusive; a range reorders messages. */
  delayMs: [number, number];
  /** Probability a message is delivered twice. */
  duplicate: number;
  /** Messages in flight on the link before new ones are dropped (0 = unlimited). */
  capacity: number;
}

export const noFaults: LinkFaults = { loss: 0, delayMs: [1, 1], duplicate: 0, capacity: 0 };

export interface NetStats {
  sent: number;
  delivered: number;
  dropped: number;
  duplicated: number;
}

export type Deliver<M> = (from: string, msg: M) => void;

/**
 * A fake network between named endpoints, driven by a SimClock and one Rng.
 * Messages are values (bytes or objects); delivery is a timer on the clock.
 */
export class SimNetwork<M> {
  readonly stats: NetStats = { sent: 0, delivered: 0, dropped: 0, duplicated: 0 };
  #clock: SimClock;
  #rng: Rng;
  #defaults: LinkFaults;
  #links = new Map<string, Partial<LinkFaults>>();
  #handlers = new Map<string, Deliver<M>>();
  #cut = new Set<string>();
  #isolated = new Set<string>();
  #refusing = new Set<string>();
  #inFlight = new Map<string, number>();

  constructor(clock: SimClock, rng: Rng, faults: Partial<LinkFaults> = {}) {
    this.#clock = clock;
    this.#rng = rng;
    this.#defaults = { ...noFaults, ...faults };
  }

  /** Attach an endpoint; replaces any earlier handler (a restarted node). */
  attach(id: string, deliver: Deliver<M>): void {
    this.#handlers.set(id, deliver);
  }

  /** Detach an endpoint: messages to it are dropped (a crashed node). */
  detach(id: string): void {
    this.#handlers.delete(id);
  }

  /**
   * While `id` is detached, answer what arrives for it over a connected link
   * with a reset: send's `onRefused` runs one link delay later, like a live
   * host where nothing listens on the port. Otherwise (the default, or
   * `refuse` false) such messages vanish, like a host that is down.
   */
  refuseWhenDetached(id: string, refuse = true): void {
    if (refuse) this.#refusing.add(id);
    else this.#refusing.delete(id);
  }

  setDefaults(faults: Partial<LinkFaults>): void {
    this.#defaults = { ...this.#defaults, ...faults };
  }

  /** Faults for messages from `from` to `to` only. */
  setLink(from: string, to: string, faults: Partial<LinkFaults>): void {
    this.#links.set(linkKey(from, to), { ...this.#links.get(linkKey(from, to)), ...faults });
  }

  /** No message crosses between group a and group b, either way. */
  partition(a: readonly string[], b: readonly string[]): void {
    for (const x of a) {
      for (const y of b) {
        this.#cut.add(linkKey(x, y));
        this.#cut.add(linkKey(y, x));
      }
    }
  }

  /** Cut one direction only (asymmetric partition). */
  cutOneWay(from: string, to: string): void {
    this.#cut.add(linkKey(from, to));
  }

  /** No message reaches or leaves id. */
  isolate(id: string): void {
    this.#isolated.add(id);
  }

  /** Remove every partition and isolation (link faults stay). */
  heal(): void {
    this.#cut.clear();
    this.#isolated.clear();
  }

  isConnected(from: string, to: string): boolean {
    return !this.#isolated.has(from) && !this.#isolated.has(to) && !this.#cut.has(linkKey(from, to));
  }

  send(from: string, to: string, msg: M, onRefused?: () => void): void {
    this.stats.sent++;
    const f = this.#faults(from, to);
    const key = linkKey(from, to);
    if (!this.isConnected(from, to) || this.#rng.chance(f.loss)) {
      this.stats.dropped++;
      return;
    }
    const inFlight = this.#inFlight.get(key) ?? 0;
    if (f.capacity > 0 && inFlight >= f.capacity) {
      this.stats.dropped++;
      return;
    }
    const copies = this.#rng.chance(f.duplicate) ? 2 : 1;
    if (copies === 2) this.stats.duplicated++;
    for (let i = 0; i < copies; i++) {
      this.#inFlight.set(key, (this.#inFlight.get(key) ?? 0) + 1);
      const delay = this.#rng.range(f.delayMs[0], f.delayMs[1]);
      this.#clock.setTimer(delay, () => {
        this.#inFlight.set(key, (this.#inFlight.get(key) ?? 1) - 1);
        // A partition that starts while a message is in flight also drops it.
        const handler = this.#handlers.get(to);
        if (!handler || !this.isConnected(from, to)) {
          this.stats.dropped++;
          if (!handler && onRefused && this.#refusing.has(to) && this.isConnected(to, from)) {
            this.#clock.setTimer(this.#rng.range(f.delayMs[0], f.delayMs[1]), onRefused);
          }
          return;
        }
        this.stats.delivered++;
        handler(from, msg);
      });
    }
  }

  #faults(from: string, to: string): LinkFaults {
    const link = this.#links.get(linkKey(from, to));
    return link ? { ...this.#defaults, ...link } : this.#defaults;
  }
}

function linkKey(from: string, to: string): string {
  return `${from}\u0000${to}`;
}
