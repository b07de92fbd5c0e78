// TTL checks (consul agent/checks CheckTTL): the application reports in
// through /v1/agent/check/pass|warn|fail|update; if nothing arrives within
// the TTL the check turns critical with "TTL expired".
import type { Clock, Timer } from "../clock/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { HealthStatus } from "../service_defs/types.ts";
import { capOutput, defaultOutputMaxSize, type CheckNotify, type CheckRunner } from "./runner.ts";

export class TtlCheck implements CheckRunner {
  readonly checkId: string;
  readonly ttlMs: number;
  readonly #clock: Clock;
  readonly #notify: CheckNotify;
  readonly #logger: Logger;
  readonly #outputMaxSize: number;
  #timer: Timer | undefined;
  #lastOutput = "";
  #running = false;

  constructor(options: { checkId: string; ttlMs: number; clock: Clock; notify: CheckNotify; logger: Logger; outputMaxSize?: number }) {
    this.checkId = options.checkId;
    this.ttlMs = options.ttlMs;
    this.#clock = options.clock;
    this.#notify = options.notify;
    this.#logger = options.logger;
    this.#outputMaxSize = options.outputMaxSize || defaultOutputMaxSize;
  }

  start(): void {
    this.#running = true;
    this.#arm();
  }

  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  #arm(): void {
    this.#timer?.cancel();
    this.#timer = this.#clock.setTimer(this.ttlMs, () => {
      this.#timer = undefined;
      if (!this.#running) return;
      this.#logger.warn("Check missed TTL, is now critical", { check: this.checkId });
      this.#notify.updateCheck(this.checkId, "critical", this.expiredOutput());
    });
  }

  /** consul getExpiredOutput: the last output is kept for the operator. */
  expiredOutput(): string {
    return this.#lastOutput === "" ? "TTL expired" : `TTL expired (last output before timeout follows): ${this.#lastOutput}`;
  }

  /** A report from the application: updates the check and restarts the TTL. Returns the (capped) output stored. */
  setStatus(status: HealthStatus, output: string): string {
    const capped = capOutput(output, this.#outputMaxSize);
    this.#logger.debug("Check status updated", { check: this.checkId, status });
    this.#notify.updateCheck(this.checkId, status, capped);
    this.#lastOutput = capped;
    if (this.#running) this.#arm();
    return capped;
  }
}
