// Alias checks (consul agent/checks CheckAlias): mirror the aggregate health
// of another service (and/or node). A service on this agent is watched in
// local state; anything on another node through the catalog, with blocking
// Health.NodeChecks queries.
import type { Clock, Timer } from "../clock/mod.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import type { QueryOptions, Rpc } from "../rpc/mod.ts";
import type { LocalState } from "../local/state.ts";
import type { HealthStatus } from "../service_defs/types.ts";
import type { CheckNotify, CheckRunner, ProbeResult } from "./runner.ts";

interface AliasedCheck {
  node: string;
  name: string;
  status: HealthStatus;
  output: string;
  serviceId: string;
}

/** consul CheckAlias.processChecks: the worst status of the aliased checks and why. */
export function aliasResult(
  checks: readonly AliasedCheck[],
  target: { node: string; serviceId: string },
  serviceExists: () => boolean,
): ProbeResult {
  let status: HealthStatus = "passing";
  let output = "No checks found.";
  let serviceFound = false;
  for (const c of checks) {
    if (target.node !== "" && c.node !== target.node) continue;
    const serviceMatch = c.serviceId === target.serviceId;
    if (c.serviceId !== "" && !serviceMatch) continue;
    if (serviceMatch && target.serviceId !== "") serviceFound = true;
    if (c.status === "critical" || c.status === "warning") {
      status = c.status;
      output = `Aliased check "${c.name}" failing: ${c.output}`;
      if (c.status === "critical") break;
    } else if (status === "passing") {
      output = "All checks passing.";
    }
  }
  if (!serviceFound && target.serviceId !== "" && !serviceExists()) {
    status = "critical";
    output = `Service ${target.serviceId} could not be found on node ${target.node}`;
  }
  return { status, output };
}

export interface AliasCheckOptions {
  checkId: string;
  aliasNode: string;
  aliasService: string;
  /** This agent's node name: an alias of it is answered from local state. */
  localNode: string;
  state: LocalState;
  rpc?: Rpc;
  clock: Clock;
  notify: CheckNotify;
  logger: Logger;
  /** Longest blocking query (default 5 min) and the wait after an error (default 1 s). */
  blockMs?: number;
  retryMs?: number;
}

export class AliasCheck implements CheckRunner {
  readonly #o: AliasCheckOptions;
  #running = false;
  #unsubscribe: (() => void) | undefined;
  #pending: Timer | undefined;
  #abort: AbortController | undefined;
  #index = 0;

  constructor(options: AliasCheckOptions) {
    this.#o = options;
  }

  get isLocal(): boolean {
    return this.#o.aliasNode === "" || this.#o.aliasNode === this.#o.localNode;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    if (this.isLocal) {
      this.#unsubscribe = this.#o.state.onChange(() => this.#scheduleLocal());
      this.#scheduleLocal();
    } else {
      void this.#remoteLoop();
    }
  }

  stop(): void {
    this.#running = false;
    this.#unsubscribe?.();
    this.#pending?.cancel();
    this.#pending = undefined;
    this.#abort?.abort();
  }

  #scheduleLocal(): void {
    if (this.#pending || !this.#running) return;
    // Deferred so an update made from inside a state listener settles first.
    this.#pending = this.#o.clock.setTimer(0, () => {
      this.#pending = undefined;
      if (!this.#running) return;
      const st = this.#o.state;
      const checks = st.checks().filter((c) => c.checkId !== this.#o.checkId);
      const r = aliasResult(checks, { node: st.nodeName, serviceId: this.#o.aliasService }, () => st.service(this.#o.aliasService) !== undefined);
      this.#o.notify.updateCheck(this.#o.checkId, r.status, r.output);
    });
  }

  async #remoteLoop(): Promise<void> {
    const rpc = this.#o.rpc;
    if (!rpc) {
      this.#o.notify.updateCheck(this.#o.checkId, "critical", `Cannot watch node ${this.#o.aliasNode}: no catalog connection`);
      return;
    }
    while (this.#running) {
      const abort = new AbortController();
      this.#abort = abort;
      const query: QueryOptions = { minQueryIndex: this.#index, maxQueryTimeMs: this.#o.blockMs ?? 300_000, allowStale: true, requireConsistent: false };
      try {
        const reply = await rpc.call("Health.NodeChecks", { node: this.#o.aliasNode, query }, { signal: abort.signal });
        if (!this.#running) return;
        const blocked = this.#index > 0 && reply.meta.index > this.#index;
        const unchanged = this.#index > 0 && reply.meta.index === this.#index;
        // An index that went backwards (snapshot restore) restarts the watch.
        this.#index = reply.meta.index < this.#index ? 0 : reply.meta.index;
        let exists = false;
        if (this.#o.aliasService !== "" && !reply.checks.some((c) => c.serviceId === this.#o.aliasService)) {
          const ns = await rpc.call("Catalog.NodeServices", { node: this.#o.aliasNode, query: { ...query, minQueryIndex: 0 } });
          exists = (ns.nodeServices?.services ?? []).some((s) => s.id === this.#o.aliasService);
        }
        const r = aliasResult(reply.checks, { node: this.#o.aliasNode, serviceId: this.#o.aliasService }, () => exists);
        this.#o.notify.updateCheck(this.#o.checkId, r.status, r.output);
        // A server that answered at once with nothing new did not block: do not spin on it.
        if (unchanged && !blocked) await this.#wait(this.#o.retryMs ?? 1_000);
      } catch (err) {
        if (!this.#running) return;
        this.#o.logger.warn("alias check failed to query the catalog", { check: this.#o.checkId, error: errorMessage(err) });
        this.#index = 0;
        await this.#wait(this.#o.retryMs ?? 1_000);
      }
    }
  }

  #wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#pending = this.#o.clock.setTimer(ms, () => {
        this.#pending = undefined;
        resolve();
      });
    });
  }
}
