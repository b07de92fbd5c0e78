// The anti-entropy scheduler (consul agent/ae/ae.go StateSyncer): a full
// sync at start, then every interval (scaled with the cluster size, plus a
// random stagger so a thousand agents do not hit the leader together); a
// partial sync whenever local state changes; a retry after a failure (no
// leader, lost connection); a staggered full sync when asked (a new leader,
// a server came up). One pass at a time; requests during a pass coalesce
// into the next one.
import type { Clock, Timer } from "../clock/mod.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { Rng } from "../sim/rng.ts";
import type { CatalogClient } from "./catalog_client.ts";
import type { LocalState } from "./state.ts";

/** Above this many nodes the interval grows (consul ae.scaleThreshold). */
export const scaleThreshold = 128;

/** consul ae.scaleFactor: 1 up to 128 nodes, then +1 per doubling. */
export function scaleFactor(nodes: number): number {
  if (nodes <= scaleThreshold) return 1;
  return Math.ceil(Math.log2(nodes) - Math.log2(scaleThreshold) + 1);
}

export interface AntiEntropyOptions {
  state: LocalState;
  catalog: CatalogClient;
  clock: Clock;
  rng: Rng;
  logger?: Logger;
  /** Full sync period before scaling (consul ae_interval, default 1m). */
  intervalMs?: number;
  /** Wait after a failed pass (consul retryFailIntv, 15s), plus stagger. */
  retryFailMs?: number;
  /** Largest stagger before a requested full sync (consul serverUpIntv, 3s). */
  serverUpMs?: number;
  /** LAN members, for the interval's scale factor. */
  clusterSize?: () => number;
}

export class AntiEntropy {
  readonly #state: LocalState;
  readonly #catalog: CatalogClient;
  readonly #clock: Clock;
  readonly #rng: Rng;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #retryFailMs: number;
  readonly #serverUpMs: number;
  readonly #clusterSize: () => number;
  #timer: Timer | undefined;
  #kickTimer: Timer | undefined;
  #running = false;
  #started = false;
  #stopped = false;
  #wantFull = false;
  #wantPartial = false;
  #waiters: Array<() => void> = [];
  #unsubscribe: (() => void) | undefined;
  /** Passes that failed since the last success. */
  failures = 0;
  /** Completed passes: for tests and stats. */
  passes = { full: 0, partial: 0, failed: 0 };

  constructor(options: AntiEntropyOptions) {
    this.#state = options.state;
    this.#catalog = options.catalog;
    this.#clock = options.clock;
    this.#rng = options.rng;
    this.#logger = options.logger ?? nullLogger();
    this.#intervalMs = options.intervalMs ?? 60_000;
    this.#retryFailMs = options.retryFailMs ?? 15_000;
    this.#serverUpMs = options.serverUpMs ?? 3_000;
    this.#clusterSize = options.clusterSize ?? (() => 1);
  }

  /** Random wait in [0, d·scale) (consul staggerFn). */
  #stagger(ms: number): number {
    return this.#rng.float() * ms * scaleFactor(this.#clusterSize());
  }

  /** Full sync at once, then on the schedule; local changes trigger partial syncs. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#unsubscribe = this.#state.onChange(() => this.#requestPartial());
    this.#wantFull = true;
    this.#kick();
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#kickTimer?.cancel();
    this.#unsubscribe?.();
    for (const w of this.#waiters.splice(0)) w();
  }

  /**
   * Push pending changes now and resolve when that pass is over (whatever
   * its outcome: a failure is logged and retried later, as Consul's HTTP
   * handlers do). Used by the agent endpoints so a registration is in the
   * catalog when the PUT returns.
   */
  syncChanges(): Promise<void> {
    if (this.#stopped || !this.#started) return Promise.resolve();
    this.#wantPartial = true;
    const done = new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#kick();
    return done;
  }

  /** A full sync after a short random wait (a leader was elected, a server joined). */
  syncFullSoon(): void {
    if (this.#stopped) return;
    this.#schedule(this.#stagger(this.#serverUpMs));
  }

  /** A full sync now; resolves when it is over. For tests and `reload`. */
  syncFull(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#wantFull = true;
    const done = new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#kick();
    return done;
  }

  #requestPartial(): void {
    if (this.#stopped) return;
    this.#wantPartial = true;
    // Coalesce a burst of changes (a service and its checks) into one pass.
    if (!this.#kickTimer) {
      this.#kickTimer = this.#clock.setTimer(0, () => {
        this.#kickTimer = undefined;
        this.#kick();
      });
    }
  }

  #schedule(ms: number): void {
    this.#timer?.cancel();
    this.#timer = this.#clock.setTimer(ms, () => {
      this.#timer = undefined;
      this.#wantFull = true;
      this.#kick();
    });
  }

  #kick(): void {
    if (this.#running || this.#stopped) return;
    if (!this.#wantFull && !this.#wantPartial) return;
    this.#running = true;
    void this.#run();
  }

  async #run(): Promise<void> {
    try {
      while ((this.#wantFull || this.#wantPartial) && !this.#stopped) {
        const full = this.#wantFull;
        this.#wantFull = false;
        this.#wantPartial = false;
        const waiters = this.#waiters.splice(0);
        try {
          const summary = full ? await this.#state.syncFull(this.#catalog) : await this.#state.syncChanges(this.#catalog);
          if (full) this.passes.full++;
          else this.passes.partial++;
          this.failures = 0;
          if (summary.registered.length || summary.deregistered.length || summary.nodeUpdated) {
            this.#logger.debug(full ? "synced node info" : "synced changes", { ...summary });
          }
          if (full) this.#schedule(this.#intervalMs + this.#stagger(this.#intervalMs));
        } catch (err) {
          this.passes.failed++;
          this.failures++;
          this.#logger.error(full ? "failed to sync remote state" : "failed to sync changes", { error: errorMessage(err) });
          // Retry with a full pass: after an error we do not know what the catalog holds.
          if (!this.#stopped) this.#schedule(this.#retryFailMs + this.#stagger(this.#retryFailMs));
        }
        for (const w of waiters) w();
      }
    } finally {
      this.#running = false;
    }
  }
}
