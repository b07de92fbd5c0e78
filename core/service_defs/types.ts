// The agent's local view of its own services and checks (consul
// agent/local/state.go, agent/structs NodeService / HealthCheck / CheckType).
// Field names are camelCase; HTTP renders Consul's PascalCase JSON.

export type HealthStatus = "passing" | "warning" | "critical";
/** What /v1/agent/health/service reports: also "maintenance". */
export type AggregatedStatus = HealthStatus | "maintenance";

export const healthStatuses: readonly HealthStatus[] = ["passing", "warning", "critical"];

export function isHealthStatus(s: unknown): s is HealthStatus {
  return s === "passing" || s === "warning" || s === "critical";
}

/** CheckID of the node maintenance check (consul structs.NodeMaint). */
export const nodeMaintCheckId = "_node_maintenance";
/** Prefix of service maintenance check IDs (consul structs.ServiceMaintPrefix). */
export const serviceMaintPrefix = "_service_maintenance:";
/** The check the leader keeps for every member; never deleted by anti-entropy. */
export const serfCheckId = "serfHealth";
/** The service servers register for themselves; never deleted by anti-entropy. */
export const consulServiceId = "consul";

export interface ServiceAddress {
  address: string;
  port: number;
}

export interface ServiceWeights {
  passing: number;
  warning: number;
}

/** A service instance on this node (consul structs.NodeService). */
export interface LocalService {
  kind: string;
  id: string;
  service: string;
  tags: string[];
  meta: Record<string, string>;
  address: string;
  port: number;
  taggedAddresses: Record<string, ServiceAddress>;
  weights: ServiceWeights;
  enableTagOverride: boolean;
}

export type CheckKind = "ttl" | "http" | "tcp" | "udp" | "h2ping" | "grpc" | "script" | "alias" | "docker" | "os_service";

/** How a check runs (consul structs.CheckType); all durations in ms. */
export interface CheckType {
  kind: CheckKind;
  intervalMs: number;
  timeoutMs: number;
  ttlMs: number;
  http: string;
  method: string;
  header: Record<string, string[]>;
  body: string;
  tlsSkipVerify: boolean;
  tlsServerName: string;
  /** Do not follow HTTP redirects (consul disable_redirects). */
  disableRedirects: boolean;
  tcp: string;
  /** host:port of a UDP check. */
  udp?: string;
  /** host:port of an H2PING check. */
  h2ping?: string;
  /** H2PING over TLS (consul h2ping_use_tls, default true). */
  h2pingUseTls?: boolean;
  /** host:port[/service] of a gRPC health check. */
  grpc?: string;
  grpcUseTls?: boolean;
  /** Docker checks: the container (cairn does not run these; they stay critical). */
  dockerContainerId?: string;
  /** OS service checks: the service name (not run by cairn either). */
  osService?: string;
  args: string[];
  aliasNode: string;
  aliasService: string;
  /** 0: never. */
  deregisterCriticalServiceAfterMs: number;
  successBeforePassing: number;
  failuresBeforeWarning: number;
  failuresBeforeCritical: number;
  /** 0: the agent default (4 KiB). */
  outputMaxSize: number;
}

/** A check on this node (consul structs.HealthCheck) plus how it runs. */
export interface LocalCheck {
  node: string;
  checkId: string;
  name: string;
  status: HealthStatus;
  notes: string;
  output: string;
  serviceId: string;
  serviceName: string;
  serviceTags: string[];
  /** "ttl", "http", ...; "" for checks that no runner drives (maintenance). */
  type: string;
  /** Undefined for maintenance checks. */
  checkType?: CheckType;
}

/** Where a definition came from: the HTTP API (persisted) or config files (reloaded). */
export type DefinitionSource = "remote" | "local";

/** A service definition after decoding: the service and its checks, not yet given IDs. */
export interface ServiceDefinition {
  service: LocalService;
  checks: CheckDefinition[];
  /** The definition's own ACL token (`token`): its catalog syncs, and its checks', use it; "" when not given. */
  token: string;
}

/** A check definition after decoding (consul structs.CheckDefinition). */
export interface CheckDefinition {
  /** "" when not given: derived from the service or the name. */
  id: string;
  name: string;
  notes: string;
  serviceId: string;
  /** Initial status; undefined means critical. */
  status?: HealthStatus;
  checkType: CheckType;
  /** A standalone check definition's own ACL token (`token`); "" when not given or embedded in a service. */
  token: string;
}

export function aggregateStatus(checks: readonly Pick<LocalCheck, "checkId" | "status">[]): AggregatedStatus {
  let warning = false;
  let critical = false;
  let maintenance = false;
  for (const c of checks) {
    if (c.checkId === nodeMaintCheckId || c.checkId.startsWith(serviceMaintPrefix)) {
      maintenance = true;
      continue;
    }
    if (c.status === "critical") critical = true;
    else if (c.status === "warning") warning = true;
  }
  if (maintenance) return "maintenance";
  if (critical) return "critical";
  if (warning) return "warning";
  return "passing";
}
