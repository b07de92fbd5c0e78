// One runner per check with a CheckType: the right kind started, replaced
// on re-registration, stopped on removal. Results go to the local state,
// through the success/failure thresholds for interval checks.
import type { Clock } from "../../clock/mod.ts";
import type { Logger } from "../../log/mod.ts";
import type { Rpc } from "../../rpc/mod.ts";
import type { Rng } from "../../sim/rng.ts";
import type { LocalState } from "../local/state.ts";
import type { CheckKind, LocalCheck } from "../../service_defs/types.ts";
import { AliasCheck } from "./alias.ts";
import { httpProbe } from "./http.ts";
import { defaultOutputMaxSize, IntervalRunner, StatusHandler, type CheckNotify, type CheckRunner, type Probe } from "./runner.ts";
import { defaultScriptTimeoutMs, scriptProbe, scriptTimeoutOutput } from "./script.ts";
import { tcpProbe } from "./tcp.ts";
import { TtlCheck } from "./ttl.ts";

export interface CheckManagerOptions {
  state: LocalState;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** For alias checks of other nodes. */
  rpc?: Rpc;
  /** Replaces the real probes (tests). */
  probes?: Partial<Record<"http" | "tcp" | "script", (check: LocalCheck) => Probe>>;
  /** The agent's check_output_max_size (default 4096). */
  outputMaxSize?: number;
}

/**
 * The output cap of one check (consul agent.go addCheck): the agent's
 * check_output_max_size, lowered (never raised) by the check's own
 * output_max_size.
 */
export function effectiveOutputMaxSize(agentMax: number | undefined, checkMax: number | undefined): number {
  const max = agentMax && agentMax > 0 ? agentMax : defaultOutputMaxSize;
  return checkMax && checkMax > 0 && checkMax < max ? checkMax : max;
}

export class CheckManager {
  readonly #o: CheckManagerOptions;
  readonly #runners = new Map<string, { kind: CheckKind; runner: CheckRunner }>();

  constructor(options: CheckManagerOptions) {
    this.#o = options;
  }

  /** Start (or restart) the runner of a check; checks without a CheckType have none. */
  start(check: LocalCheck): void {
    this.stop(check.checkId);
    const t = check.checkType;
    if (!t) return;
    const { state, clock, rng } = this.#o;
    const outputMaxSize = effectiveOutputMaxSize(this.#o.outputMaxSize, t.outputMaxSize);
    const logger = this.#o.logger.with({ check: check.checkId });
    const direct: CheckNotify = { updateCheck: (id, status, output) => state.updateCheck(id, status, output) };
    let runner: CheckRunner;
    switch (t.kind) {
      case "ttl":
        runner = new TtlCheck({ checkId: check.checkId, ttlMs: t.ttlMs, clock, notify: direct, logger, outputMaxSize });
        break;
      case "alias":
        runner = new AliasCheck({
          checkId: check.checkId,
          aliasNode: t.aliasNode,
          aliasService: t.aliasService,
          localNode: state.nodeName,
          state,
          rpc: this.#o.rpc,
          clock,
          notify: direct,
          logger,
        });
        break;
      case "http":
      case "tcp":
      case "script": {
        const notify = new StatusHandler(direct, {
          logger,
          successBeforePassing: t.successBeforePassing,
          failuresBeforeWarning: t.failuresBeforeWarning,
          failuresBeforeCritical: t.failuresBeforeCritical,
        });
        const override = this.#o.probes?.[t.kind];
        let probe: Probe;
        if (override) probe = override(check);
        else if (t.kind === "http") probe = (signal) => httpProbe({ ...t, outputMaxSize }, signal);
        else if (t.kind === "tcp") probe = (signal) => tcpProbe(t.tcp, signal);
        else probe = (signal) => scriptProbe(t.args, { signal, outputMaxSize, timeoutMs: t.timeoutMs || defaultScriptTimeoutMs });
        runner = new IntervalRunner({
          checkId: check.checkId,
          probe,
          notify,
          clock,
          rng,
          logger,
          intervalMs: t.intervalMs,
          timeoutMs: t.kind === "script" ? t.timeoutMs || defaultScriptTimeoutMs : t.timeoutMs,
          timeoutOutput: t.kind === "script" ? scriptTimeoutOutput : undefined,
        });
        break;
      }
    }
    this.#runners.set(check.checkId, { kind: t.kind, runner });
    runner.start();
  }

  stop(checkId: string): void {
    const r = this.#runners.get(checkId);
    if (!r) return;
    r.runner.stop();
    this.#runners.delete(checkId);
  }

  stopAll(): void {
    for (const id of [...this.#runners.keys()]) this.stop(id);
  }

  /** The TTL runner of a check, for /v1/agent/check/pass|warn|fail|update. */
  ttl(checkId: string): TtlCheck | undefined {
    const r = this.#runners.get(checkId)?.runner;
    return r instanceof TtlCheck ? r : undefined;
  }

  count(kind?: CheckKind): number {
    let n = 0;
    for (const r of this.#runners.values()) if (!kind || r.kind === kind) n++;
    return n;
  }
}
