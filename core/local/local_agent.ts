// The agent's service and check management (consul agent.go AddService,
// RemoveService, AddCheck, RemoveCheck, updateTTLCheck, maintenance, the
// critical-service reaper, config load and reload): local state + check
// runners + persistence + anti-entropy, behind one object the HTTP agent
// endpoints call.
import type { Clock, Timer } from "../clock/mod.ts";
import { CairnError, ConfigError, errorMessage, NotFoundError } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { Rpc } from "../rpc/mod.ts";
import type { Rng } from "../sim/rng.ts";
import { CheckManager, type CheckManagerOptions } from "../checks/manager.ts";
import { AntiEntropy } from "./anti_entropy.ts";
import { catalogClientFromRpc, type CatalogClient, type NodeInfo } from "./catalog_client.ts";
import { decodeCheckDefinition, decodeServiceDefinition, serviceCheckDefinitions } from "../service_defs/definition.ts";
import { MemoryDefinitionStore, type DefinitionStore } from "./persist.ts";
import { LocalState, type SyncTokens } from "./state.ts";
import {
  nodeMaintCheckId,
  serviceMaintPrefix,
  type CheckDefinition,
  type DefinitionSource,
  type HealthStatus,
  type LocalCheck,
  type ServiceDefinition,
} from "../service_defs/types.ts";

export const defaultNodeMaintReason = "Maintenance mode is enabled for this node, but no reason was provided. This is a default message.";
export const defaultServiceMaintReason = "Maintenance mode is enabled for this service, but no reason was provided. This is a default message.";

/** Script checks refused by the agent's settings (Consul answers 500 with this text). */
export class ScriptChecksDisabledError extends CairnError {
  constructor(message: string) {
    super("script_checks_disabled", message);
  }
}

export interface LocalAgentOptions {
  node: NodeInfo;
  clock: Clock;
  rng: Rng;
  logger?: Logger;
  /** The catalog connection; without one nothing is synced (and remote alias checks cannot run). */
  rpc?: Rpc;
  /** Overrides the CatalogClient built from rpc (tests). */
  catalog?: CatalogClient;
  /** Where API registrations persist; default in memory (dev mode). */
  store?: DefinitionStore;
  enableScriptChecks?: boolean;
  enableLocalScriptChecks?: boolean;
  /** How often critical checks are looked at for deregister_critical_service_after (consul 30s). */
  checkReapIntervalMs?: number;
  /** deregister_critical_service_after is at least this (consul check_deregister_interval_min, 1m). */
  checkDeregisterIntervalMinMs?: number;
  /** Output-only check changes are pushed at most this often (consul check_update_interval, default 5m). */
  checkUpdateIntervalMs?: number;
  /** Checks keep no output (consul discard_check_output). */
  discardCheckOutput?: boolean;
  /** Agent-wide cap on check output (consul check_output_max_size, default 4096); a check's output_max_size may only lower it. */
  checkOutputMaxSize?: number;
  /** enable_agent_tls_for_checks. */
  checkTls?: CheckManagerOptions["agentTls"];
  aeIntervalMs?: number;
  aeRetryFailMs?: number;
  clusterSize?: () => number;
  probes?: CheckManagerOptions["probes"];
  /** With ACLs on: the agent's tokens, which anti-entropy syncs with. */
  tokens?: SyncTokens;
}

export interface AddOptions {
  source?: DefinitionSource;
  /** Remove the service's checks that the new definition does not name (`?replace-existing-checks`). */
  replaceExistingChecks?: boolean;
  /** The registering request's token: the entry syncs with it unless the definition names its own (consul AddServiceRequest.token). */
  token?: string;
}

/** Raw `services`/`checks` objects from the config files. */
export interface ConfigDefinitions {
  services: readonly Record<string, unknown>[];
  checks: readonly Record<string, unknown>[];
}

/** Decode config-file definitions, collecting every problem (for `validate` and reload). */
export function decodeConfigDefinitions(raw: ConfigDefinitions): { services: ServiceDefinition[]; checks: CheckDefinition[]; errors: ConfigError[] } {
  const services: ServiceDefinition[] = [];
  const checks: CheckDefinition[] = [];
  const errors: ConfigError[] = [];
  raw.services.forEach((s, i) => {
    try {
      services.push(decodeServiceDefinition(s));
    } catch (err) {
      const name = typeof s === "object" && s ? String((s as Record<string, unknown>).name ?? (s as Record<string, unknown>).Name ?? "") : "";
      errors.push(new ConfigError(`services[${i}]${name ? ` ("${name}")` : ""}: ${errorMessage(err)}`, { field: `services[${i}]` }));
    }
  });
  raw.checks.forEach((c, i) => {
    try {
      checks.push(decodeCheckDefinition(c));
    } catch (err) {
      errors.push(new ConfigError(`checks[${i}]: ${errorMessage(err)}`, { field: `checks[${i}]` }));
    }
  });
  const ids = new Set<string>();
  for (const s of services) {
    if (ids.has(s.service.id)) errors.push(new ConfigError(`Service ID "${s.service.id}" is defined more than once`, { field: "services" }));
    ids.add(s.service.id);
  }
  return { services, checks, errors };
}

export class LocalAgent {
  readonly state: LocalState;
  readonly checkManager: CheckManager;
  readonly antiEntropy: AntiEntropy | undefined;
  readonly #o: LocalAgentOptions;
  readonly #logger: Logger;
  readonly #store: DefinitionStore;
  /** IDs that came from config files (reloaded, never persisted). */
  readonly #configServices = new Set<string>();
  readonly #configChecks = new Set<string>();
  #reaper: Timer | undefined;
  #stopped = false;

  constructor(options: LocalAgentOptions) {
    this.#o = options;
    this.#logger = options.logger ?? nullLogger();
    this.#store = options.store ?? new MemoryDefinitionStore();
    this.state = new LocalState({
      node: options.node,
      clock: options.clock,
      logger: this.#logger.named("local"),
      checkUpdateIntervalMs: options.checkUpdateIntervalMs,
      discardCheckOutput: options.discardCheckOutput,
      stagger: (ms) => deferRng.int(ms),
      tokens: options.tokens,
    });
    this.checkManager = new CheckManager({
      state: this.state,
      clock: options.clock,
      rng: options.rng.fork(),
      logger: this.#logger.named("checks"),
      rpc: options.rpc,
      probes: options.probes,
      outputMaxSize: options.checkOutputMaxSize,
      ...(options.checkTls ? { agentTls: options.checkTls } : {}),
    });
    const catalog = options.catalog ?? (options.rpc ? catalogClientFromRpc(options.rpc) : undefined);
    this.antiEntropy = catalog
      ? new AntiEntropy({
        state: this.state,
        catalog,
        clock: options.clock,
        rng: options.rng.fork(),
        logger: this.#logger.named("anti_entropy"),
        intervalMs: options.aeIntervalMs,
        retryFailMs: options.aeRetryFailMs,
        clusterSize: options.clusterSize,
      })
      : undefined;
    // Forked last, so the checks' and anti-entropy's sequences stay what they were.
    const deferRng = options.rng.fork();
  }

  get nodeName(): string {
    return this.state.nodeName;
  }

  /**
   * Load config-file definitions, then what the API persisted (a config
   * definition wins over a persisted one with the same ID), start the runners,
   * the reaper and anti-entropy. Throws ConfigError for bad config
   * definitions; unreadable persisted files are logged and skipped.
   */
  start(config: ConfigDefinitions = { services: [], checks: [] }, options: { sync?: boolean } = {}): void {
    this.#loadConfig(config);
    const persisted = this.#store.load();
    for (const e of persisted.errors) this.#logger.warn("skipping persisted definition", { error: e });
    for (const { value: s, token } of persisted.services) {
      if (this.state.service(s.id)) continue;
      this.state.addService(s, { token });
    }
    for (const { value: c, token } of persisted.checks) {
      if (this.state.check(c.checkId)) continue;
      if (c.serviceId && !this.state.service(c.serviceId)) {
        this.#logger.warn("dropping persisted check of a service that is gone", { check: c.checkId, service: c.serviceId });
        this.#store.removeCheck(c.checkId);
        continue;
      }
      // Restored checks start critical until they report (consul loadChecks), except a
      // TTL check whose last result has not expired yet (consul loadCheckState).
      const check: LocalCheck = { ...c, status: c.checkType ? "critical" : c.status, output: "" };
      const saved = c.checkType?.kind === "ttl" ? this.#store.loadCheckState(c.checkId) : undefined;
      if (saved && saved.expiresWallMs > this.#o.clock.wallNow()) {
        check.status = saved.status;
        check.output = saved.output;
      }
      this.state.addCheck(check, { token });
      this.checkManager.start(check);
    }
    this.#scheduleReap();
    if (options.sync !== false) this.antiEntropy?.start();
  }

  /** Start anti-entropy when `start` was told not to (the agent does once it is up). */
  startSync(): void {
    this.antiEntropy?.start();
  }

  stop(): void {
    this.#stopped = true;
    this.#reaper?.cancel();
    this.checkManager.stopAll();
    this.antiEntropy?.stop();
  }

  /** Push pending changes now (resolves when done or failed; failures retry later). */
  async syncChanges(): Promise<void> {
    await this.antiEntropy?.syncChanges();
  }

  // ---- services ----

  addService(def: ServiceDefinition, options: AddOptions = {}): void {
    const source = options.source ?? "remote";
    const checks = serviceCheckDefinitions(def);
    for (const c of checks) this.#vetScript(c, source);
    const id = def.service.id;
    const previous = new Map(this.state.checksForService(id, false).map((c) => [c.checkId, c]));
    // The definition's own token, else the registering request's; the service's checks share it (consul AddServiceWithChecks).
    const token = def.token || options.token || "";
    this.state.addService(def.service, { token, isLocal: source === "local" });
    if (source === "remote") {
      this.#store.saveService(def.service, token);
      this.#configServices.delete(id);
    } else this.#configServices.add(id);
    const keep = new Set(checks.map((c) => c.id));
    for (const c of checks) this.#addCheckInternal(c, source, previous.get(c.id), token);
    if (options.replaceExistingChecks) {
      for (const [cid] of previous) {
        if (!keep.has(cid) && !cid.startsWith(serviceMaintPrefix)) this.#removeCheckInternal(cid);
      }
    }
  }

  removeService(id: string): void {
    if (!this.state.service(id)) {
      throw new NotFoundError(`Unknown service ID "${id}". Ensure that the service ID is passed, not the service name.`);
    }
    for (const c of this.state.checksForService(id, false)) this.#removeCheckInternal(c.checkId);
    this.state.removeService(id);
    this.#store.removeService(id);
    this.#configServices.delete(id);
    this.#logger.debug("removed service", { service: id });
  }

  // ---- checks ----

  addCheck(def: CheckDefinition, options: AddOptions = {}): void {
    const source = options.source ?? "remote";
    const check = { ...def, id: def.id || def.name };
    if (check.serviceId && !this.state.service(check.serviceId)) {
      throw new NotFoundError(`ServiceID "${check.serviceId}" does not exist`);
    }
    this.#vetScript(check, source);
    this.#addCheckInternal(check, source, this.state.check(check.id), def.token || options.token || "");
  }

  removeCheck(id: string): void {
    if (!this.state.check(id)) {
      throw new NotFoundError(`Unknown check ID "${id}". Ensure that the check ID is passed, not the check name.`);
    }
    this.#removeCheckInternal(id);
  }

  /** pass/warn/fail/update of a TTL check (consul updateTTLCheck). */
  updateTtlCheck(id: string, status: HealthStatus, output: string): void {
    if (!this.state.check(id)) {
      throw new NotFoundError(`Unknown check ID "${id}". Ensure that the check ID is passed, not the check name.`);
    }
    const ttl = this.checkManager.ttl(id);
    if (!ttl) throw new CairnError("not_ttl", `CheckID "${id}" does not have associated TTL`);
    const stored = ttl.setStatus(status, output);
    if (!this.#configChecks.has(id)) {
      try {
        this.#store.saveCheckState({ checkId: id, status, output: stored, expiresWallMs: this.#o.clock.wallNow() + ttl.ttlMs });
      } catch (err) {
        this.#logger.warn("failed to persist TTL check state", { check: id, error: errorMessage(err) });
      }
    }
  }

  #vetScript(c: CheckDefinition, source: DefinitionSource): void {
    if (c.checkType.kind !== "script") return;
    const remoteOk = this.#o.enableScriptChecks === true;
    const localOk = remoteOk || this.#o.enableLocalScriptChecks === true;
    if (source === "local" && !localOk) {
      throw new ScriptChecksDisabledError("Scripts are disabled on this agent; to enable, configure 'enable_script_checks' or 'enable_local_script_checks' to true");
    }
    if (source === "remote" && !remoteOk) {
      throw new ScriptChecksDisabledError("Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true");
    }
  }

  #addCheckInternal(def: CheckDefinition, source: DefinitionSource, previous: LocalCheck | undefined, token: string): void {
    const t = def.checkType;
    const minDeregisterMs = this.#o.checkDeregisterIntervalMinMs ?? 60_000;
    if (t.deregisterCriticalServiceAfterMs > 0 && t.deregisterCriticalServiceAfterMs < minDeregisterMs) {
      this.#logger.warn("check has deregister interval below minimum", { check: def.id, minimum_interval: `${minDeregisterMs}ms` });
    }
    const check: LocalCheck = {
      node: this.nodeName,
      checkId: def.id,
      name: def.name,
      status: def.status ?? "critical",
      notes: def.notes,
      output: "",
      serviceId: def.serviceId,
      serviceName: "",
      serviceTags: [],
      type: t.kind,
      checkType: t,
    };
    // A re-registration keeps the current result instead of flapping (consul addServiceInternal snapshot).
    if (previous && previous.type === check.type && def.status === undefined) {
      check.status = previous.status;
      check.output = previous.output;
    }
    this.state.addCheck(check, { token, isLocal: source === "local" });
    if (source === "remote") {
      this.#store.saveCheck(check, token);
      this.#configChecks.delete(check.checkId);
    } else this.#configChecks.add(check.checkId);
    this.checkManager.start(check);
  }

  #removeCheckInternal(id: string): void {
    this.checkManager.stop(id);
    this.state.removeCheck(id);
    this.#store.removeCheck(id);
    this.#configChecks.delete(id);
  }

  // ---- maintenance ----

  enableNodeMaintenance(reason: string): void {
    if (this.state.check(nodeMaintCheckId)) return;
    const check: LocalCheck = {
      node: this.nodeName,
      checkId: nodeMaintCheckId,
      name: "Node Maintenance Mode",
      status: "critical",
      notes: reason || defaultNodeMaintReason,
      output: "",
      serviceId: "",
      serviceName: "",
      serviceTags: [],
      type: "maintenance",
    };
    this.state.addCheck(check);
    this.#store.saveCheck(check);
    this.#logger.info("Node entered maintenance mode");
  }

  disableNodeMaintenance(): void {
    if (!this.state.check(nodeMaintCheckId)) return;
    this.#removeCheckInternal(nodeMaintCheckId);
    this.#logger.info("Node left maintenance mode");
  }

  enableServiceMaintenance(serviceId: string, reason: string): void {
    const svc = this.state.service(serviceId);
    if (!svc) throw new NotFoundError(`No service registered with ID "${serviceId}"`);
    const id = `${serviceMaintPrefix}${serviceId}`;
    if (this.state.check(id)) return;
    const check: LocalCheck = {
      node: this.nodeName,
      checkId: id,
      name: "Service Maintenance Mode",
      status: "critical",
      notes: reason || defaultServiceMaintReason,
      output: "",
      serviceId,
      serviceName: svc.service,
      serviceTags: [...svc.tags],
      type: "maintenance",
    };
    // It needs service:write on the service, as the service's own sync does: the same token.
    const token = this.state.serviceToken(serviceId);
    this.state.addCheck(check, { token });
    this.#store.saveCheck(check, token);
    this.#logger.info("Service entered maintenance mode", { service: serviceId });
  }

  disableServiceMaintenance(serviceId: string): void {
    if (!this.state.service(serviceId)) throw new NotFoundError(`No service registered with ID "${serviceId}"`);
    const id = `${serviceMaintPrefix}${serviceId}`;
    if (!this.state.check(id)) return;
    this.#removeCheckInternal(id);
    this.#logger.info("Service left maintenance mode", { service: serviceId });
  }

  // ---- config files ----

  #loadConfig(config: ConfigDefinitions): void {
    const decoded = decodeConfigDefinitions(config);
    if (decoded.errors.length > 0) {
      throw new ConfigError(`Invalid service or check definition: ${decoded.errors.map((e) => e.message).join("; ")}`);
    }
    // Vet script gating before touching anything, so a refusal changes nothing.
    for (const s of decoded.services) for (const c of serviceCheckDefinitions(s)) this.#vetScriptAsConfig(c);
    for (const c of decoded.checks) this.#vetScriptAsConfig(c);
    for (const s of decoded.services) this.addService(s, { source: "local" });
    for (const c of decoded.checks) this.addCheck(c, { source: "local" });
  }

  #vetScriptAsConfig(c: CheckDefinition): void {
    try {
      this.#vetScript(c, "local");
    } catch (err) {
      throw new ConfigError(`Check "${c.name || c.id}": ${errorMessage(err)}`);
    }
  }

  /**
   * `cairn reload` / SIGHUP: drop what the previous config defined, load the
   * new definitions. Checks that stay keep their current status. Throws
   * ConfigError (and changes nothing) when a definition is invalid.
   */
  reload(config: ConfigDefinitions): void {
    const decoded = decodeConfigDefinitions(config);
    if (decoded.errors.length > 0) {
      throw new ConfigError(`Invalid service or check definition: ${decoded.errors.map((e) => e.message).join("; ")}`);
    }
    for (const s of decoded.services) for (const c of serviceCheckDefinitions(s)) this.#vetScriptAsConfig(c);
    for (const c of decoded.checks) this.#vetScriptAsConfig(c);
    const newServiceIds = new Set(decoded.services.map((s) => s.service.id));
    const newCheckIds = new Set([
      ...decoded.checks.map((c) => c.id || c.name),
      ...decoded.services.flatMap((s) => serviceCheckDefinitions(s).map((c) => c.id)),
    ]);
    for (const id of [...this.#configChecks]) if (!newCheckIds.has(id) && this.state.check(id)) this.#removeCheckInternal(id);
    for (const id of [...this.#configServices]) if (!newServiceIds.has(id) && this.state.service(id)) this.removeService(id);
    for (const s of decoded.services) this.addService(s, { source: "local", replaceExistingChecks: true });
    for (const c of decoded.checks) this.addCheck(c, { source: "local" });
    this.#logger.info("reloaded service and check definitions", { services: decoded.services.length, checks: decoded.checks.length });
  }

  // ---- reaper ----

  #scheduleReap(): void {
    if (this.#stopped) return;
    this.#reaper = this.#o.clock.setTimer(this.#o.checkReapIntervalMs ?? 30_000, () => {
      this.reapCriticalServices();
      this.#scheduleReap();
    });
  }

  /** Deregister services whose check has been critical longer than its deregister_critical_service_after. */
  reapCriticalServices(): string[] {
    const reaped: string[] = [];
    for (const c of this.state.checks()) {
      const given = c.checkType?.deregisterCriticalServiceAfterMs ?? 0;
      if (given <= 0 || !c.serviceId || !this.state.service(c.serviceId)) continue;
      const after = Math.max(given, this.#o.checkDeregisterIntervalMinMs ?? 60_000);
      const critical = this.state.criticalForMs(c.checkId);
      if (critical === undefined || critical <= after) continue;
      this.#logger.info("Check for service has been critical for too long; deregistered service", { service: c.serviceId, check: c.checkId });
      this.removeService(c.serviceId);
      reaped.push(c.serviceId);
    }
    if (reaped.length > 0) void this.syncChanges();
    return reaped;
  }

  /** Counts for /v1/agent/self Stats.agent. */
  stats(): Record<string, string> {
    return {
      check_monitors: String(this.checkManager.count("script")),
      check_ttls: String(this.checkManager.count("ttl")),
      checks: String(this.state.checks().length),
      services: String(this.state.services().length),
    };
  }

  /** A service definition from the API or config (throws BadRequestError with Consul's wording). */
  static decodeService(raw: unknown): ServiceDefinition {
    return decodeServiceDefinition(raw);
  }

  static decodeCheck(raw: unknown): CheckDefinition {
    return decodeCheckDefinition(raw);
  }
}

