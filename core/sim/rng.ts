// Seeded pseudo-random numbers (sfc32 seeded through splitmix32). Every bit
// of randomness in a simulation comes from one Rng so a seed replays exactly.

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Rng {
  readonly seed: number;
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    const mix = splitmix32(this.seed);
    this.#a = mix();
    this.#b = mix();
    this.#c = mix();
    this.#d = mix();
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  uint32(): number {
    const t = (((this.#a + this.#b) >>> 0) + this.#d) >>> 0;
    this.#d = (this.#d + 1) >>> 0;
    this.#a = this.#b ^ (this.#b >>> 9);
    this.#b = (this.#c + (this.#c << 3)) >>> 0;
    this.#c = ((this.#c << 21) | (this.#c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.uint32() / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    if (n <= 0) return 0;
    return Math.floor(this.float() * n);
  }

  /** An integer in [lo, hi] inclusive. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("Cannot pick from an empty list");
    return items[this.int(items.length)]!;
  }

  /** Fisher–Yates shuffle in place; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const t = items[i]!;
      items[i] = items[j]!;
      items[j] = t;
    }
    return items;
  }

  /** An independent generator derived from this one (for per-node streams). */
  fork(): Rng {
    return new Rng(this.uint32());
  }

  /** Fill a buffer with random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += 4) {
      const v = this.uint32();
      for (let k = 0; k < 4 && i + k < n; k++) out[i + k] = (v >>> (8 * k)) & 0xff;
    }
    return out;
  }
}

/**
 * Seeds for a simulation test: SIM_SEED=n replays one seed, SIM_SEEDS=n runs
 * n seeds starting at SIM_SEED_BASE (default 1). `count` is the default.
 */
export function seeds(count: number, env: Record<string, string | undefined> = readEnv()): number[] {
  if (env.SIM_SEED !== undefined && env.SIM_SEED !== "") return [Number(env.SIM_SEED) >>> 0];
  const n = env.SIM_SEEDS ? Number(env.SIM_SEEDS) : count;
  const base = env.SIM_SEED_BASE ? Number(env.SIM_SEED_BASE) : 1;
  return Array.from({ length: n }, (_, i) => (base + i) >>> 0);
}

function readEnv(): Record<string, string | undefined> {
  const g = globalThis as { process?: { env: Record<string, string | undefined> } };
  return g.process?.env ?? {};
}
