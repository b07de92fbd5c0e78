// Lifeguard local health awareness (memberlist awareness.go): a score in
// [0, max-1] that slows our own probing when we seem to be the slow one.

export class Awareness {
  readonly max: number;
  #score = 0;

  constructor(max: number) {
    this.max = Math.max(1, Math.floor(max));
  }

  get score(): number {
    return this.#score;
  }

  /** Add delta (may be negative), clamped to [0, max-1]. */
  applyDelta(delta: number): void {
    this.#score = clampScore(this.#score + delta, this.max);
  }

  /** timeout * (score + 1). */
  scaleTimeout(timeoutMs: number): number {
    return scaleTimeout(timeoutMs, this.#score);
  }
}

export function clampScore(score: number, max: number): number {
  return Math.min(Math.max(score, 0), Math.max(0, max - 1));
}

export function scaleTimeout(timeoutMs: number, score: number): number {
  return timeoutMs * (score + 1);
}
