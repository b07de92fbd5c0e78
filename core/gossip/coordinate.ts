// Vivaldi network coordinates (serf/coordinate: client.go, coordinate.go),
// pure: RTTs come in, the client's coordinate moves. Serf carries the
// coordinate in UDP acks (docs/gossip-wire.md §8.9). The random direction used
// when two coordinates coincide comes from the injected Rng.

import type { Rng } from "../sim/rng.ts";

export interface Coordinate {
  readonly vec: readonly number[];
  readonly error: number;
  readonly adjustment: number;
  readonly height: number;
}

export interface VivaldiConfig {
  dimensionality: number;
  errorMax: number;
  ce: number;
  cc: number;
  adjustmentWindowSize: number;
  heightMin: number;
  latencyFilterSize: number;
  gravityRho: number;
}

export const defaultVivaldiConfig: Readonly<VivaldiConfig> = Object.freeze({
  dimensionality: 8,
  errorMax: 1.5,
  ce: 0.25,
  cc: 0.25,
  adjustmentWindowSize: 20,
  heightMin: 10e-6,
  latencyFilterSize: 3,
  gravityRho: 150,
});

const zeroThreshold = 1e-6;
const maxRttSeconds = 10;

export function newCoordinate(config: VivaldiConfig = defaultVivaldiConfig): Coordinate {
  return { vec: new Array<number>(config.dimensionality).fill(0), error: config.errorMax, adjustment: 0, height: config.heightMin };
}

export function isValidCoordinate(c: Coordinate): boolean {
  return [...c.vec, c.error, c.adjustment, c.height].every((v) => Number.isFinite(v));
}

export function isCompatible(a: Coordinate, b: Coordinate): boolean {
  return a.vec.length === b.vec.length;
}

function magnitude(v: readonly number[]): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}

function diff(a: readonly number[], b: readonly number[]): number[] {
  return a.map((x, i) => x - b[i]!);
}

/** Height-augmented distance in seconds, without adjustments. */
export function rawDistanceSeconds(a: Coordinate, b: Coordinate): number {
  return magnitude(diff(a.vec, b.vec)) + a.height + b.height;
}

/** Estimated RTT in seconds (Go DistanceTo, truncated to whole nanoseconds). */
export function distanceSeconds(a: Coordinate, b: Coordinate): number {
  let dist = rawDistanceSeconds(a, b);
  const adjusted = dist + a.adjustment + b.adjustment;
  if (adjusted > 0) dist = adjusted;
  return Math.trunc(dist * 1e9) / 1e9;
}

function unitVectorAt(a: readonly number[], b: readonly number[], rng: Rng): { unit: number[]; mag: number } {
  let ret = diff(a, b);
  const mag = magnitude(ret);
  if (mag > zeroThreshold) return { unit: ret.map((x) => x / mag), mag };
  ret = ret.map(() => rng.float() - 0.5);
  const m2 = magnitude(ret);
  if (m2 > zeroThreshold) return { unit: ret.map((x) => x / m2), mag: 0 };
  ret = ret.map(() => 0);
  ret[0] = 1;
  return { unit: ret, mag: 0 };
}

export function applyForce(
  c: Coordinate,
  options: { force: number; other: Coordinate; heightMin: number; rng: Rng },
): Coordinate {
  const { unit, mag } = unitVectorAt(c.vec, options.other.vec, options.rng);
  const vec = c.vec.map((x, i) => x + unit[i]! * options.force);
  let height = c.height;
  if (mag > zeroThreshold) {
    height = Math.max((c.height + options.other.height) * options.force / mag + c.height, options.heightMin);
  }
  return { vec, error: c.error, adjustment: c.adjustment, height };
}

/** One node's Vivaldi state: its coordinate, latency filters, adjustment window. */
export class VivaldiClient {
  readonly config: VivaldiConfig;
  #rng: Rng;
  #coord: Coordinate;
  #origin: Coordinate;
  #samples: number[];
  #sampleIndex = 0;
  #latency = new Map<string, number[]>();
  resets = 0;

  constructor(rng: Rng, config: VivaldiConfig = defaultVivaldiConfig) {
    this.config = config;
    this.#rng = rng;
    this.#coord = newCoordinate(config);
    this.#origin = newCoordinate(config);
    this.#samples = new Array<number>(config.adjustmentWindowSize).fill(0);
  }

  get coordinate(): Coordinate {
    return this.#coord;
  }

  /** Forget a node's latency samples (it left). */
  forgetNode(node: string): void {
    this.#latency.delete(node);
  }

  /** Median of the last few RTTs to this node, including this one. */
  #filter(node: string, rttSeconds: number): number {
    const samples = this.#latency.get(node) ?? [];
    samples.push(rttSeconds);
    if (samples.length > this.config.latencyFilterSize) samples.shift();
    this.#latency.set(node, samples);
    const sorted = [...samples].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  }

  /** Feed one RTT observation; returns an error text (and changes nothing) on bad input. */
  update(node: string, other: Coordinate, rttMs: number): Coordinate | string {
    if (!isCompatible(this.#coord, other)) return "Dimensions aren't compatible";
    if (!isValidCoordinate(other)) return "Invalid coordinate";
    if (!Number.isFinite(rttMs) || rttMs < 0 || rttMs / 1000 > maxRttSeconds) {
      return `Round trip time not in valid range: "${rttMs}" ms`;
    }
    const rtt = this.#filter(node, rttMs / 1000);
    this.#updateVivaldi(other, rtt);
    this.#updateAdjustment(other, rtt);
    this.#updateGravity();
    if (!isValidCoordinate(this.#coord)) {
      this.resets++;
      this.#coord = newCoordinate(this.config);
    }
    return this.#coord;
  }

  /** Estimated RTT to another coordinate, in seconds. */
  distanceTo(other: Coordinate): number {
    return distanceSeconds(this.#coord, other);
  }

  #updateVivaldi(other: Coordinate, rttSeconds: number): void {
    const dist = distanceSeconds(this.#coord, other);
    const rtt = Math.max(rttSeconds, zeroThreshold);
    const wrongness = Math.abs(dist - rtt) / rtt;
    const totalError = Math.max(this.#coord.error + other.error, zeroThreshold);
    const weight = this.#coord.error / totalError;
    const error = Math.min(
      this.config.ce * weight * wrongness + this.#coord.error * (1 - this.config.ce * weight),
      this.config.errorMax,
    );
    const force = this.config.cc * weight * (rtt - dist);
    this.#coord = applyForce({ ...this.#coord, error }, { force, other, heightMin: this.config.heightMin, rng: this.#rng });
  }

  #updateAdjustment(other: Coordinate, rttSeconds: number): void {
    const n = this.config.adjustmentWindowSize;
    if (n === 0) return;
    this.#samples[this.#sampleIndex] = rttSeconds - rawDistanceSeconds(this.#coord, other);
    this.#sampleIndex = (this.#sampleIndex + 1) % n;
    const sum = this.#samples.reduce((a, b) => a + b, 0);
    this.#coord = { ...this.#coord, adjustment: sum / (2 * n) };
  }

  #updateGravity(): void {
    const dist = distanceSeconds(this.#origin, this.#coord);
    const force = -1 * Math.pow(dist / this.config.gravityRho, 2);
    this.#coord = applyForce(this.#coord, { force, other: this.#origin, heightMin: this.config.heightMin, rng: this.#rng });
  }
}
