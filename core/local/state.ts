// Local state (consul agent/local/state.go): the services and checks this
// agent owns, each with a sync status — in sync, needs push, needs delete —
// and the two halves of anti-entropy that compare it with the catalog:
// updateSyncState (read the catalog's view, mark drift) and syncChanges
// (push or delete whatever is out of sync). The agent is authoritative for
// its node: the catalog is made to match, never the other way around.
import type { Clock, Timer } from "../clock/mod.ts";
import { AclNotFoundError, PermissionDeniedError } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { CatalogClient, NodeInfo, RemoteCheck } from "./catalog_client.ts";
import {
  consulServiceId,
  serfCheckId,
  type HealthStatus,
  type LocalCheck,
  type LocalService,
} from "../service_defs/types.ts";

/** Who registered an entry: its own ACL token ("" for none) and whether it came from a config file. */
export interface EntryOwner {
  token?: string;
  /** From a config file (consul IsLocallyDefined): without a token of its own it syncs with config_file_service_registration. */
  isLocal?: boolean;
}

/**
 * The agent's ACL tokens as anti-entropy uses them (consul token.Store),
 * read at each sync so `PUT /v1/agent/token/...` applies to the next one.
 */
export interface SyncTokens {
  /** acl.tokens.agent (else the default token): node info, reading the catalog, and every deregistration. */
  agent(): string;
  /** acl.tokens.default: services and checks without a token of their own (consul UserToken). */
  user(): string;
  /** acl.tokens.config_file_service_registration: config-file services and checks without a token of their own. */
  configFile(): string;
}

interface ServiceState {
  service: LocalService;
  inSync: boolean;
  deleted: boolean;
  token: string;
  isLocal: boolean;
}

interface CheckState {
  check: LocalCheck;
  inSync: boolean;
  deleted: boolean;
  token: string;
  isLocal: boolean;
  /** Monotonic ms when the check became critical, for deregister_critical_service_after. */
  criticalSince?: number;
  /** Pending push of an output-only change (check_update_interval). */
  deferTimer?: Timer;
}

export interface LocalStateOptions {
  node: NodeInfo;
  clock: Clock;
  logger?: Logger;
  /**
   * Output-only changes wait this long before they are pushed, so chatty
   * checks do not write to Raft on every run (consul check_update_interval,
   * default 5m). 0 pushes them at once.
   */
  checkUpdateIntervalMs?: number;
  /** Keep no check output at all (consul discard_check_output): every output is stored and synced as "". */
  discardCheckOutput?: boolean;
  /**
   * A random wait in [0, ms): a deferred output is pushed after half the
   * interval plus stagger(interval), as Consul's UpdateCheck does
   * (`d/2 + lib.RandomStagger(d)`). Absent: after exactly the interval.
   */
  stagger?: (ms: number) => number;
  /** With ACLs on: the tokens each sync carries. Absent: syncs carry no token of their own. */
  tokens?: SyncTokens;
}

/** What a sync pass did; for logs and tests. */
export interface SyncSummary {
  registered: string[];
  deregistered: string[];
  /** Refused by ACLs: counted as synced until the next full sync (consul "blocked by ACLs"). */
  blocked: string[];
  nodeUpdated: boolean;
}

export class LocalState {
  readonly #services = new Map<string, ServiceState>();
  readonly #checks = new Map<string, CheckState>();
  readonly #listeners = new Set<() => void>();
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #checkUpdateIntervalMs: number;
  readonly #discardCheckOutput: boolean;
  readonly #stagger: ((ms: number) => number) | undefined;
  readonly #tokens: SyncTokens | undefined;
  #node: NodeInfo;
  #nodeInSync = false;

  constructor(options: LocalStateOptions) {
    this.#node = { ...options.node };
    this.#clock = options.clock;
    this.#logger = options.logger ?? nullLogger();
    this.#checkUpdateIntervalMs = options.checkUpdateIntervalMs ?? 5 * 60_000;
    this.#discardCheckOutput = options.discardCheckOutput ?? false;
    this.#stagger = options.stagger;
    this.#tokens = options.tokens;
  }

  get nodeName(): string {
    return this.#node.node;
  }

  /** Called after every change that needs a push (the anti-entropy syncer listens). */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  #changed(): void {
    for (const fn of this.#listeners) fn();
  }

  setNodeInfo(node: NodeInfo): void {
    this.#node = { ...node };
    this.#nodeInSync = false;
    this.#changed();
  }

  // ---- services ----

  addService(service: LocalService, owner: EntryOwner = {}): void {
    const prev = this.#services.get(service.id);
    // Re-registering the same definition (a reload) is not a change for the catalog.
    const unchanged = prev !== undefined && !prev.deleted && prev.inSync && sameService(prev.service, service);
    this.#services.set(service.id, { service: structuredClone(service), inSync: unchanged, deleted: false, token: owner.token ?? "", isLocal: owner.isLocal ?? false });
    if (!unchanged) this.#changed();
  }

  /** Marks the service for deletion from the catalog; false when unknown. */
  removeService(id: string): boolean {
    const s = this.#services.get(id);
    if (!s || s.deleted) return false;
    s.deleted = true;
    s.inSync = false;
    this.#changed();
    return true;
  }

  service(id: string): LocalService | undefined {
    const s = this.#services.get(id);
    return s && !s.deleted ? s.service : undefined;
  }

  /** Live services by ID, sorted by ID. */
  services(): LocalService[] {
    return [...this.#services.values()].filter((s) => !s.deleted).map((s) => s.service).sort((a, b) => cmp(a.id, b.id));
  }

  servicesByName(name: string): LocalService[] {
    return this.services().filter((s) => s.service === name);
  }

  // ---- checks ----

  /** The token a service was registered with ("" for none), as Consul's ServiceToken. */
  serviceToken(id: string): string {
    const s = this.#services.get(id);
    return s && !s.deleted ? s.token : "";
  }

  addCheck(check: LocalCheck, owner: EntryOwner = {}): void {
    const c = structuredClone(check);
    if (c.serviceId) {
      const svc = this.service(c.serviceId);
      if (svc) {
        c.serviceName = svc.service;
        c.serviceTags = [...svc.tags];
      }
    }
    c.node = this.#node.node;
    if (this.#discardCheckOutput) c.output = "";
    const prev = this.#checks.get(c.checkId);
    prev?.deferTimer?.cancel();
    const live = prev && !prev.deleted ? prev : undefined;
    const criticalSince = c.status === "critical" ? (live?.check.status === "critical" ? live.criticalSince : this.#clock.now()) : undefined;
    const unchanged = live !== undefined && live.inSync && sameLocalCheck(live.check, c);
    this.#checks.set(c.checkId, { check: c, inSync: unchanged, deleted: false, criticalSince, token: owner.token ?? "", isLocal: owner.isLocal ?? false });
    if (!unchanged) this.#changed();
  }

  removeCheck(id: string): boolean {
    const c = this.#checks.get(id);
    if (!c || c.deleted) return false;
    c.deferTimer?.cancel();
    c.deferTimer = undefined;
    c.deleted = true;
    c.inSync = false;
    this.#changed();
    return true;
  }

  check(id: string): LocalCheck | undefined {
    const c = this.#checks.get(id);
    return c && !c.deleted ? c.check : undefined;
  }

  checks(): LocalCheck[] {
    return [...this.#checks.values()].filter((c) => !c.deleted).map((c) => c.check).sort((a, b) => cmp(a.checkId, b.checkId));
  }

  /** A service's checks, plus the node's own checks when includeNode (consul ChecksForService). */
  checksForService(serviceId: string, includeNode: boolean): LocalCheck[] {
    return this.checks().filter((c) => c.serviceId === serviceId || (includeNode && c.serviceId === ""));
  }

  /** Ms the check has been critical without a break, or undefined when it is not critical. */
  criticalForMs(id: string): number | undefined {
    const c = this.#checks.get(id);
    if (!c || c.deleted || c.criticalSince === undefined) return undefined;
    return this.#clock.now() - c.criticalSince;
  }

  /**
   * A runner's (or the TTL API's) result. A status change is pushed at once;
   * an output-only change waits checkUpdateIntervalMs (consul UpdateCheck).
   */
  updateCheck(id: string, status: HealthStatus, output: string): void {
    const c = this.#checks.get(id);
    if (!c || c.deleted) return;
    if (this.#discardCheckOutput) output = "";
    if (c.check.status === status && c.check.output === output) return;
    if (status === "critical" && c.check.status !== "critical") c.criticalSince = this.#clock.now();
    if (status !== "critical") c.criticalSince = undefined;
    const statusChanged = c.check.status !== status;
    c.check = { ...c.check, status, output };
    if (!statusChanged && this.#checkUpdateIntervalMs > 0) {
      if (!c.deferTimer && c.inSync) {
        const d = this.#checkUpdateIntervalMs;
        c.deferTimer = this.#clock.setTimer(this.#stagger ? Math.floor(d / 2) + this.#stagger(d) : d, () => {
          c.deferTimer = undefined;
          if (c.deleted) return;
          c.inSync = false;
          this.#changed();
        });
      }
      return;
    }
    c.deferTimer?.cancel();
    c.deferTimer = undefined;
    c.inSync = false;
    this.#changed();
  }

  /** Everything needs a push again (after a leader change or a full-sync request). */
  markAllOutOfSync(): void {
    this.#nodeInSync = false;
    for (const s of this.#services.values()) s.inSync = false;
    for (const c of this.#checks.values()) c.inSync = false;
  }

  /** Whether anything waits for a push or delete. */
  hasPendingChanges(): boolean {
    if (!this.#nodeInSync) return true;
    for (const s of this.#services.values()) if (!s.inSync) return true;
    for (const c of this.#checks.values()) if (!c.inSync) return true;
    return false;
  }

  /** For tests and the agent's stats: counts of entries by sync status. */
  syncStatus(): { services: Record<string, "in_sync" | "push" | "delete">; checks: Record<string, "in_sync" | "push" | "delete"> } {
    const label = (e: { inSync: boolean; deleted: boolean }) => (e.inSync ? "in_sync" : e.deleted ? "delete" : "push");
    const services: Record<string, "in_sync" | "push" | "delete"> = {};
    const checks: Record<string, "in_sync" | "push" | "delete"> = {};
    for (const [id, s] of this.#services) services[id] = label(s);
    for (const [id, c] of this.#checks) checks[id] = label(c);
    return { services, checks };
  }

  // ---- anti-entropy ----

  /**
   * Read the catalog's view of this node and mark what differs (consul
   * updateSyncState): remote entries we do not have are marked for delete,
   * except server-owned ones (serfHealth, the consul service); ours that are
   * missing or different are marked for push.
   */
  async updateSyncState(catalog: CatalogClient): Promise<void> {
    const remote = await catalog.nodeState(this.#node.node);
    this.#nodeInSync = remote.node !== undefined && sameNode(remote.node, this.#node);

    const remoteServices = new Map(remote.services.map((s) => [s.id, s]));
    for (const [id, rs] of remoteServices) {
      const ls = this.#services.get(id);
      if (!ls) {
        if (id === consulServiceId) continue;
        this.#services.set(id, { service: rs, inSync: false, deleted: true, token: "", isLocal: false });
        continue;
      }
      if (ls.deleted) {
        // Still in the catalog: try the deletion again (one refused by ACLs was counted as synced).
        ls.inSync = false;
        continue;
      }
      ls.inSync = sameService(ls.service, rs);
    }
    for (const [id, ls] of this.#services) {
      if (remoteServices.has(id)) continue;
      if (ls.deleted) {
        // Already gone from the catalog.
        this.#services.delete(id);
        continue;
      }
      ls.inSync = false;
    }

    const remoteChecks = new Map(remote.checks.map((c) => [c.checkId, c]));
    for (const [id, rc] of remoteChecks) {
      const lc = this.#checks.get(id);
      if (!lc) {
        if (id === serfCheckId || rc.serverOwned) continue;
        this.#checks.set(id, { check: remoteToLocal(rc), inSync: false, deleted: true, token: "", isLocal: false });
        continue;
      }
      if (lc.deleted) {
        lc.inSync = false;
        continue;
      }
      // A pending output-only change stays deferred: compare without output then.
      lc.inSync = sameCheck(lc.check, rc, lc.deferTimer !== undefined);
    }
    for (const [id, lc] of this.#checks) {
      if (remoteChecks.has(id)) continue;
      if (lc.deleted) {
        this.#checks.delete(id);
        continue;
      }
      lc.inSync = false;
    }
  }

  /**
   * Push or delete everything out of sync (consul SyncChanges): deletes
   * first, then services with their checks, then node-level checks, then
   * the node itself if nothing else carried it. Stops at the first error
   * (the caller retries); entries already synced stay synced. With ACLs,
   * a service or check syncs with its own token (else a config file's,
   * else the default token), deletions and the node with the agent token,
   * and an entry the servers refuse is logged and skipped, not retried
   * until the next full sync (consul syncService, "blocked by ACLs").
   */
  async syncChanges(catalog: CatalogClient): Promise<SyncSummary> {
    const summary: SyncSummary = { registered: [], deregistered: [], blocked: [], nodeUpdated: false };
    const agentToken = this.#tokens?.agent();
    for (const [id, s] of [...this.#services]) {
      if (!s.deleted || s.inSync) continue;
      if (await this.#refused(summary, `service:${id}`, () => catalog.deregister({ node: this.#node.node, serviceId: id, token: agentToken }))) {
        s.inSync = true;
        continue;
      }
      // A re-registration may have replaced the entry while we waited.
      if (this.#services.get(id) === s) this.#services.delete(id);
      for (const [cid, c] of [...this.#checks]) if (c.deleted && c.check.serviceId === id && this.#checks.get(cid) === c) this.#checks.delete(cid);
      summary.deregistered.push(`service:${id}`);
    }
    for (const [id, c] of [...this.#checks]) {
      if (!c.deleted || c.inSync) continue;
      if (await this.#refused(summary, `check:${id}`, () => catalog.deregister({ node: this.#node.node, checkId: id, token: agentToken }))) {
        c.inSync = true;
        continue;
      }
      if (this.#checks.get(id) === c) this.#checks.delete(id);
      summary.deregistered.push(`check:${id}`);
    }
    for (const [id, s] of [...this.#services]) {
      if (s.deleted || s.inSync) continue;
      const token = this.#syncToken(s);
      // Checks ride along only with the same token, so they gain nothing from the service's.
      const checks = [...this.#checks.values()].filter((c) => !c.deleted && c.check.serviceId === id && this.#syncToken(c) === token);
      const snapshot = { service: s.service, checks: checks.map((c) => ({ state: c, check: c.check })) };
      const refused = await this.#refused(summary, `service:${id}`, () =>
        catalog.register({
          node: this.#node,
          skipNodeUpdate: this.#nodeInSync,
          service: snapshot.service,
          checks: snapshot.checks.map((x) => x.check),
          token,
        }));
      if (this.#services.get(id) === s && s.service === snapshot.service) s.inSync = true;
      for (const x of snapshot.checks) {
        if (x.state.check === x.check && !x.state.deleted) {
          x.state.inSync = true;
          x.state.deferTimer?.cancel();
          x.state.deferTimer = undefined;
        }
      }
      if (refused) continue;
      this.#nodeInSync = true;
      summary.registered.push(`service:${id}`);
    }
    for (const [id, c] of [...this.#checks]) {
      if (c.deleted || c.inSync) continue;
      if (c.check.serviceId && !this.service(c.check.serviceId)) {
        // A check for a service that is gone: nothing to attach it to.
        this.#logger.warn("check has no service, not syncing it", { check: id, service: c.check.serviceId });
        continue;
      }
      const check = c.check;
      const svc = check.serviceId ? this.#services.get(check.serviceId)?.service : undefined;
      const refused = await this.#refused(summary, `check:${id}`, () =>
        catalog.register({ node: this.#node, skipNodeUpdate: this.#nodeInSync, service: svc, checks: [check], token: this.#syncToken(c) }));
      if (c.check === check && !c.deleted) {
        c.inSync = true;
        c.deferTimer?.cancel();
        c.deferTimer = undefined;
      }
      if (refused) continue;
      this.#nodeInSync = true;
      summary.registered.push(`check:${id}`);
    }
    if (!this.#nodeInSync) {
      const refused = await this.#refused(summary, "node", () => catalog.register({ node: this.#node, skipNodeUpdate: false, checks: [], token: agentToken }));
      this.#nodeInSync = true;
      summary.nodeUpdated = !refused;
    }
    return summary;
  }

  /** The token a service's or check's sync carries (consul aclTokenForServiceSync); undefined with ACLs off. */
  #syncToken(e: { token: string; isLocal: boolean }): string | undefined {
    const t = this.#tokens;
    if (!t) return undefined;
    return e.token || (e.isLocal ? t.configFile() : "") || t.user();
  }

  /** Runs one catalog write; true when the servers' ACLs refused it (logged and counted), other errors are thrown. */
  async #refused(summary: SyncSummary, what: string, write: () => Promise<void>): Promise<boolean> {
    try {
      await write();
      return false;
    } catch (err) {
      if (!(err instanceof PermissionDeniedError || err instanceof AclNotFoundError)) throw err;
      this.#logger.warn("catalog sync blocked by ACLs", { entry: what, error: err.message });
      summary.blocked.push(what);
      return true;
    }
  }

  /** Full sync: read the catalog, then repair. */
  async syncFull(catalog: CatalogClient): Promise<SyncSummary> {
    await this.updateSyncState(catalog);
    return await this.syncChanges(catalog);
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameNode(a: NodeInfo, b: NodeInfo): boolean {
  return a.node === b.node && a.address === b.address && (a.id === "" || b.id === "" || a.id === b.id) &&
    JSON.stringify(sortKeys(a.taggedAddresses)) === JSON.stringify(sortKeys(b.taggedAddresses)) &&
    JSON.stringify(sortKeys(a.meta)) === JSON.stringify(sortKeys(b.meta));
}

function sortKeys<T>(o: Record<string, T>): Array<[string, T]> {
  return Object.entries(o).sort(([a], [b]) => cmp(a, b));
}

/** consul NodeService.IsSame: every field the catalog stores. */
export function sameService(a: LocalService, b: LocalService): boolean {
  return a.id === b.id && a.service === b.service && a.kind === b.kind && a.address === b.address && a.port === b.port &&
    a.enableTagOverride === b.enableTagOverride &&
    JSON.stringify(a.tags) === JSON.stringify(b.tags) &&
    JSON.stringify(sortKeys(a.meta)) === JSON.stringify(sortKeys(b.meta)) &&
    JSON.stringify(sortKeys(a.taggedAddresses)) === JSON.stringify(sortKeys(b.taggedAddresses)) &&
    a.weights.passing === b.weights.passing && a.weights.warning === b.weights.warning;
}

function sameLocalCheck(a: LocalCheck, b: LocalCheck): boolean {
  return a.name === b.name && a.status === b.status && a.notes === b.notes && a.output === b.output && a.serviceId === b.serviceId &&
    a.serviceName === b.serviceName && a.type === b.type && JSON.stringify(a.serviceTags) === JSON.stringify(b.serviceTags) &&
    JSON.stringify(a.checkType) === JSON.stringify(b.checkType);
}

/** consul HealthCheck.IsSame (output ignored when a deferred update is pending). */
function sameCheck(l: LocalCheck, r: RemoteCheck, ignoreOutput: boolean): boolean {
  return l.checkId === r.checkId && l.name === r.name && l.status === r.status && l.notes === r.notes &&
    l.serviceId === r.serviceId && l.serviceName === r.serviceName && (ignoreOutput || l.output === r.output) &&
    (r.type === undefined || r.type === l.type);
}

function remoteToLocal(r: RemoteCheck): LocalCheck {
  return {
    node: r.node,
    checkId: r.checkId,
    name: r.name,
    status: r.status,
    notes: r.notes,
    output: r.output,
    serviceId: r.serviceId,
    serviceName: r.serviceName,
    serviceTags: r.serviceTags ?? [],
    type: r.type ?? "",
  };
}
