// What every check runner shares: the notify seam, output capping, the
// success/failure thresholds (consul agent/checks StatusHandler) and the
// interval loop with a random first-run stagger (consul CheckHTTP.run).
import type { Clock, Timer } from "../clock/mod.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import type { Rng } from "../sim/rng.ts";
import type { HealthStatus } from "../service_defs/types.ts";

/** Default cap on a check's output (consul check_output_max_size, 4 KiB). */
export const defaultOutputMaxSize = 4096;
/** Default timeout of HTTP, TCP and script checks. */
export const defaultCheckTimeoutMs = 10_000;
/** Interval checks run at most this often (consul checks.MinInterval). */
export const minCheckIntervalMs = 1_000;

/** Where runners report (the local state, through a StatusHandler). */
export interface CheckNotify {
  updateCheck(checkId: string, status: HealthStatus, output: string): void;
}

export interface CheckRunner {
  start(): void;
  stop(): void;
}

export interface ProbeResult {
  status: HealthStatus;
  output: string;
}

/** One probe: HTTP request, TCP connect, script run. Must settle soon after `signal` aborts. */
export type Probe = (signal: AbortSignal) => Promise<ProbeResult>;

/** "host:port" or "[v6]:port" of a TCP, UDP or HTTP/2 check. */
export function splitHostPort(address: string): { host: string; port: number } {
  const at = address.lastIndexOf(":");
  return { host: address.slice(0, at).replace(/^\[(.*)\]$/, "$1"), port: Number(address.slice(at + 1)) };
}

/**
 * What every socket probe shares: the first result wins, the abort listener
 * goes, and `run`'s clean-up (closing its socket) runs with that result; an
 * abort settles with `onAbort()`. `run` starts the probe and returns the
 * clean-up.
 */
export function settleOnce<T>(signal: AbortSignal, onAbort: () => T, run: (finish: (value: T) => void) => (value: T) => void): Promise<T> {
  return new Promise((resolve) => {
    let settled: { value: T } | undefined;
    let cleanup: ((value: T) => void) | undefined;
    const finish = (value: T): void => {
      if (settled) return;
      settled = { value };
      signal.removeEventListener("abort", abort);
      cleanup?.(value);
      resolve(value);
    };
    const abort = (): void => finish(onAbort());
    if (signal.aborted) return abort();
    signal.addEventListener("abort", abort, { once: true });
    cleanup = run(finish);
    // `run` may have finished before it handed its clean-up back.
    if (settled) cleanup(settled.value);
  });
}

/** Consul's truncation: the first `max` bytes and a note of how much there was. */
export function capOutput(output: string, max = defaultOutputMaxSize): string {
  const bytes = new TextEncoder().encode(output);
  if (bytes.length <= max) return output;
  const head = new TextDecoder().decode(bytes.subarray(0, max)).replace(/\uFFFD+$/, "");
  return `${head} ... (captured ${max} of ${bytes.length} bytes)`;
}

/**
 * success_before_passing / failures_before_warning / failures_before_critical
 * (consul StatusHandler): a result is passed on only once enough of the
 * same kind arrived in a row.
 */
export class StatusHandler implements CheckNotify {
  readonly #inner: CheckNotify;
  readonly #logger: Logger;
  readonly #successBeforePassing: number;
  readonly #failuresBeforeWarning: number;
  readonly #failuresBeforeCritical: number;
  #successes = 0;
  #failures = 0;

  constructor(inner: CheckNotify, options: { logger: Logger; successBeforePassing: number; failuresBeforeWarning: number; failuresBeforeCritical: number }) {
    this.#inner = inner;
    this.#logger = options.logger;
    this.#successBeforePassing = options.successBeforePassing;
    this.#failuresBeforeWarning = options.failuresBeforeWarning;
    this.#failuresBeforeCritical = options.failuresBeforeCritical;
  }

  updateCheck(checkId: string, status: HealthStatus, output: string): void {
    if (status === "passing" || status === "warning") {
      this.#successes++;
      this.#failures = 0;
      if (this.#successes >= this.#successBeforePassing) return this.#inner.updateCheck(checkId, status, output);
      this.#logger.warn("Check passed but has not reached success threshold", {
        check: checkId, status, success_count: this.#successes, success_threshold: this.#successBeforePassing,
      });
      return;
    }
    this.#failures++;
    this.#successes = 0;
    if (this.#failures >= this.#failuresBeforeCritical) return this.#inner.updateCheck(checkId, status, output);
    if (this.#failures >= this.#failuresBeforeWarning) return this.#inner.updateCheck(checkId, "warning", output);
    this.#logger.warn("Check failed but has not reached failure threshold", {
      check: checkId, status, failure_count: this.#failures, failure_threshold: this.#failuresBeforeCritical,
    });
  }
}

/**
 * Runs a probe every interval: the first run after a random stagger within
 * one interval, each next one an interval after the previous finished; a
 * probe that outlives its timeout is aborted and reported critical.
 */
export class IntervalRunner implements CheckRunner {
  readonly #checkId: string;
  readonly #probe: Probe;
  readonly #notify: CheckNotify;
  readonly #clock: Clock;
  readonly #rng: Rng;
  readonly #logger: Logger;
  readonly #intervalMs: number;
  readonly #timeoutMs: number;
  readonly #timeoutOutput: (timeoutMs: number) => string;
  #timer: Timer | undefined;
  #abort: AbortController | undefined;
  #stopped = true;
  /** Completed probes (tests wait on this). */
  runs = 0;

  constructor(options: {
    checkId: string;
    probe: Probe;
    notify: CheckNotify;
    clock: Clock;
    rng: Rng;
    logger: Logger;
    intervalMs: number;
    timeoutMs: number;
    /** Output when the probe times out. */
    timeoutOutput?: (timeoutMs: number) => string;
  }) {
    this.#checkId = options.checkId;
    this.#probe = options.probe;
    this.#notify = options.notify;
    this.#clock = options.clock;
    this.#rng = options.rng;
    this.#logger = options.logger;
    const interval = Number.isFinite(options.intervalMs) ? options.intervalMs : 0;
    this.#intervalMs = Math.max(interval, minCheckIntervalMs);
    if (interval < minCheckIntervalMs) {
      this.#logger.warn("check has interval below minimum", { check: options.checkId, minimum_interval: `${minCheckIntervalMs}ms` });
    }
    this.#timeoutMs = Number.isFinite(options.timeoutMs) && options.timeoutMs > 0 ? options.timeoutMs : defaultCheckTimeoutMs;
    this.#timeoutOutput = options.timeoutOutput ?? ((ms) => `Timed out (${ms}ms) running check`);
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#timer = this.#clock.setTimer(Math.floor(this.#rng.float() * this.#intervalMs), () => void this.#runOnce());
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#abort?.abort();
  }

  async #runOnce(): Promise<void> {
    if (this.#stopped) return;
    const abort = new AbortController();
    this.#abort = abort;
    let timedOut = false;
    const deadline = this.#clock.setTimer(this.#timeoutMs, () => {
      timedOut = true;
      abort.abort();
    });
    let result: ProbeResult;
    try {
      result = await this.#probe(abort.signal);
    } catch (err) {
      result = { status: "critical", output: errorMessage(err) };
    } finally {
      deadline.cancel();
    }
    if (timedOut) result = { status: "critical", output: this.#timeoutOutput(this.#timeoutMs) };
    this.runs++;
    if (this.#stopped) return;
    this.#notify.updateCheck(this.#checkId, result.status, result.output);
    this.#timer = this.#clock.setTimer(this.#intervalMs, () => void this.#runOnce());
  }
}
