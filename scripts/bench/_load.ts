// Closed-loop load for the benchmarks: `conns` workers over one keep-alive
// agent, each issuing its operations back to back, tallied over one or more
// slices of a phase.
import { Agent } from "node:http";

/** Operation number `i` over `agent` (node:http's, or a benchmark's own client): true when it succeeded. */
export type Op<A = Agent> = (agent: A, i: number) => Promise<boolean>;

export interface LoadResult {
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One phase's figures for one target, summed over its slices. */
export class Tally<A extends { destroy(): void } = Agent> {
  latencies: number[] = [];
  errors = 0;
  seconds = 0;
  /** Each worker's next operation number, carried from slice to slice. */
  readonly next: number[];

  constructor(readonly conns: number, readonly agent: A = new Agent({ keepAlive: true, maxSockets: conns }) as unknown as A) {
    this.next = Array.from({ length: conns }, (_, w) => w);
  }

  /** The figures so far; closes the agent's sockets. */
  result(): LoadResult {
    this.agent.destroy();
    const sorted = Float64Array.from(this.latencies).sort();
    return { opsPerSec: sorted.length / this.seconds, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), errors: this.errors };
  }
}

/** `tally.conns` workers issuing `op` back to back for `secs`. */
export async function slice<A extends { destroy(): void }>(tally: Tally<A>, op: Op<A>, secs: number): Promise<void> {
  const t0 = performance.now();
  const end = t0 + secs * 1000;
  await Promise.all(tally.next.map(async (first, w) => {
    let i = first;
    while (performance.now() < end) {
      const s = performance.now();
      try {
        if (!(await op(tally.agent, i))) tally.errors++;
      } catch {
        tally.errors++;
      }
      tally.latencies.push(performance.now() - s);
      i += tally.conns;
    }
    tally.next[w] = i;
  }));
  tally.seconds += (performance.now() - t0) / 1000;
}
