// The agent sends its own LAN coordinate to the servers (consul agent/agent.go
// sendCoordinate): every sync_coordinate_interval_min at least, more rarely in
// a large pool so that all agents together send about
// sync_coordinate_rate_target updates a second (lib.RateScaledInterval), plus
// a random stagger of up to one interval so agents do not send in step. The
// leader batches what it gets into the catalog (core/server/coordinate.ts).

import type { Clock, Timer } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import type { Logger } from "../log/logger.ts";
import type { Rpc } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";

/** Consul lib.RateScaledInterval: n members at `rate` a second, never below `minMs`. */
export function rateScaledIntervalMs(rate: number, minMs: number, n: number): number {
  if (!(rate > 0)) return minMs;
  const ms = (1000 * n) / rate;
  return ms < minMs ? minMs : ms;
}

export interface CoordinateSyncOptions {
  nodeName: string;
  datacenter: string;
  rpc: Rpc;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** This agent's LAN coordinate (undefined: none yet). */
  coordinate(): Coordinate | undefined;
  /** Members of the LAN pool (the interval grows with it). */
  poolSize(): number;
  intervalMinMs: number;
  rateTarget: number;
}

export class CoordinateSync {
  readonly #o: CoordinateSyncOptions;
  #timer: Timer | undefined;
  #stopped = false;
  /** Updates the servers accepted (for tests). */
  sent = 0;

  constructor(options: CoordinateSyncOptions) {
    this.#o = options;
  }

  start(): void {
    this.#schedule();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** The next wait: the scaled interval plus a stagger of up to one more (Consul RandomStagger). */
  nextDelayMs(): number {
    const intv = rateScaledIntervalMs(this.#o.rateTarget, this.#o.intervalMinMs, this.#o.poolSize());
    return intv + Math.floor(this.#o.rng.float() * intv);
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = this.#o.clock.setTimer(this.nextDelayMs(), () => {
      void this.sendNow().finally(() => this.#schedule());
    });
  }

  /** Send the coordinate once (a failure is logged: the next period tries again). */
  async sendNow(): Promise<void> {
    const coord = this.#o.coordinate();
    if (!coord || this.#stopped) return;
    try {
      await this.#o.rpc.call("Coordinate.Update", {
        node: this.#o.nodeName,
        segment: "",
        coord: { vec: [...coord.vec], error: coord.error, adjustment: coord.adjustment, height: coord.height },
        datacenter: this.#o.datacenter,
      });
      this.sent++;
    } catch (err) {
      this.#o.logger.warn("coordinate update error", { error: errorMessage(err) });
    }
  }
}
