// One runner per check with a CheckType: the right kind started, replaced
// on re-registration, stopped on removal. Results go to the local state,
// through the success/failure thresholds for interval checks.
import type { Clock } from "../clock/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { Rpc } from "../rpc/mod.ts";
import type { Rng } from "../sim/rng.ts";
import type { LocalState } from "../local/state.ts";
import type { CheckKind, LocalCheck } from "../service_defs/types.ts";
import { AliasCheck } from "./alias.ts";
import { httpProbe, type AgentCheckTls } from "./http.ts";
import { defaultCheckTimeoutMs, defaultOutputMaxSize, IntervalRunner, StatusHandler, type CheckNotify, type CheckRunner, type Probe } from "./runner.ts";
import { defaultScriptTimeoutMs, scriptProbe, scriptTimeoutOutput } from "./script.ts";
import { tcpProbe } from "./tcp.ts";
import { grpcProbe, h2pingProbe } from "./h2.ts";
import { udpProbe } from "./udp.ts";
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
  /** enable_agent_tls_for_checks: HTTPS checks present the agent's certificate and trust its CAs. */
  agentTls?: AgentCheckTls;
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
      case "docker":
      case "os_service": {
        // Accepted so a Consul config loads unchanged, named in a warning, never run.
        const what = t.kind === "docker" ? "Docker" : "OS service";
        const output = `${what} checks are not run by cairn: this check stays critical`;
        logger.warn(`${what} checks are not run by cairn; the check is registered and stays critical`, { check: check.checkId });
        runner = { start: () => state.updateCheck(check.checkId, "critical", output), stop: () => {} };
        break;
      }
      case "http":
      case "tcp":
      case "udp":
      case "h2ping":
      case "grpc":
      case "script": {
        const notify = new StatusHandler(direct, {
          logger,
          successBeforePassing: t.successBeforePassing,
          failuresBeforeWarning: t.failuresBeforeWarning,
          failuresBeforeCritical: t.failuresBeforeCritical,
        });
        const override = t.kind === "http" || t.kind === "tcp" || t.kind === "script" ? this.#o.probes?.[t.kind] : undefined;
        const tls = { tlsSkipVerify: t.tlsSkipVerify, tlsServerName: t.tlsServerName };
        // A UDP check waits its whole timeout for an answer that may never come; the
        // runner's own deadline sits just after it.
        const udpWaitMs = t.timeoutMs > 0 ? t.timeoutMs : defaultCheckTimeoutMs;
        let probe: Probe;
        if (override) probe = override(check);
        else if (t.kind === "http") probe = (signal) => httpProbe({ ...t, outputMaxSize, ...(this.#o.agentTls ? { agentTls: this.#o.agentTls } : {}) }, signal);
        else if (t.kind === "tcp") probe = (signal) => tcpProbe(t.tcp, signal);
        else if (t.kind === "udp") probe = (signal) => udpProbe(t.udp ?? "", udpWaitMs, signal);
        else if (t.kind === "h2ping") probe = (signal) => h2pingProbe({ address: t.h2ping ?? "", useTls: t.h2pingUseTls ?? true, ...tls }, signal);
        else if (t.kind === "grpc") probe = (signal) => grpcProbe(t.grpc ?? "", { useTls: t.grpcUseTls ?? false, ...tls }, signal);
        else probe = (signal) => scriptProbe(t.args, { signal, outputMaxSize, timeoutMs: t.timeoutMs || defaultScriptTimeoutMs });
        runner = new IntervalRunner({
          checkId: check.checkId,
          probe,
          notify,
          clock,
          rng,
          logger,
          intervalMs: t.intervalMs,
          timeoutMs: t.kind === "script" ? t.timeoutMs || defaultScriptTimeoutMs : t.kind === "udp" ? udpWaitMs + 1_000 : t.timeoutMs,
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
