// /v1/operator/autopilot/* (consul agent/operator_endpoint.go): the
// autopilot configuration (GET, PUT with ?cas=), the servers' health
// (Consul's OperatorHealthReply, 429 when unhealthy) and the autopilot
// state (Consul's AutopilotState JSON), rendered from the leader's view.
import { formatDuration, parseDuration } from "../config/duration.ts";
import { BadRequestError } from "../errors.ts";
import { operatorRaftMethods, type OperatorRaftRpc } from "../rpc/methods.ts";
import type { ServerHealthInfo, ServerHealthReply } from "../server/operator_autopilot.ts";
import type { AutopilotConfig, AutopilotSettings } from "../state/autopilot.ts";
import { withRequestOptions } from "./operator_raft.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/** Consul's api.AutopilotConfiguration JSON. */
export interface AutopilotConfigurationJson {
  CleanupDeadServers: boolean;
  LastContactThreshold: string;
  MaxTrailingLogs: number;
  MinQuorum: number;
  ServerStabilizationTime: string;
  RedundancyZoneTag: string;
  DisableUpgradeMigration: boolean;
  UpgradeVersionTag: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export function autopilotConfigurationJson(c: AutopilotConfig): AutopilotConfigurationJson {
  return {
    CleanupDeadServers: c.cleanupDeadServers,
    LastContactThreshold: formatDuration(c.lastContactThresholdMs),
    MaxTrailingLogs: c.maxTrailingLogs,
    MinQuorum: c.minQuorum,
    ServerStabilizationTime: formatDuration(c.serverStabilizationTimeMs),
    RedundancyZoneTag: "",
    DisableUpgradeMigration: false,
    UpgradeVersionTag: "",
    CreateIndex: c.createIndex,
    ModifyIndex: c.modifyIndex,
  };
}

/** A Go ReadableDuration: "10s", or a number of nanoseconds. Missing: 0 (Consul's PUT replaces every field). */
function durationField(body: Record<string, unknown>, name: string): number {
  const v = body[name];
  if (v === undefined || v === null) return 0;
  if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v / 1e6;
  const ms = typeof v === "string" ? parseDuration(v) : undefined;
  if (ms === undefined || ms < 0) throw new BadRequestError(`Error parsing autopilot config: ${name} is not a duration: ${JSON.stringify(v)}`);
  return ms;
}

function countField(body: Record<string, unknown>, name: string): number {
  const v = body[name];
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new BadRequestError(`Error parsing autopilot config: ${name} is not a whole number: ${JSON.stringify(v)}`);
  return v;
}

/** The settings of a PUT body (Consul's api.AutopilotConfiguration). */
export function parseAutopilotConfigurationJson(bytes: Uint8Array): AutopilotSettings {
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new BadRequestError(`Error parsing autopilot config: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new BadRequestError("Error parsing autopilot config: expected a JSON object");
  const b = body as Record<string, unknown>;
  if (b.CleanupDeadServers !== undefined && typeof b.CleanupDeadServers !== "boolean") {
    throw new BadRequestError("Error parsing autopilot config: CleanupDeadServers is not a boolean");
  }
  return {
    cleanupDeadServers: b.CleanupDeadServers === true,
    lastContactThresholdMs: durationField(b, "LastContactThreshold"),
    maxTrailingLogs: countField(b, "MaxTrailingLogs"),
    minQuorum: countField(b, "MinQuorum"),
    serverStabilizationTimeMs: durationField(b, "ServerStabilizationTime"),
  };
}

export function operatorAutopilotConfigurationHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    if (req.method === "GET") {
      const reply = (await backend.callRaw(operatorRaftMethods.autopilotGetConfiguration, withRequestOptions(req, { allowStale: req.query.has("stale") }))) as AutopilotConfig;
      return jsonResponse(autopilotConfigurationJson(reply), { pretty: wantsPretty(req) });
    }
    const config = parseAutopilotConfigurationJson(req.body);
    const casText = req.query.get("cas");
    let cas: number | undefined;
    if (casText !== null) {
      cas = /^\d+$/.test(casText) ? Number(casText) : NaN;
      if (!Number.isSafeInteger(cas)) throw new BadRequestError(`Error parsing cas value: ${JSON.stringify(casText)}`);
    }
    const ok = await backend.callRaw(operatorRaftMethods.autopilotSetConfiguration, withRequestOptions(req, cas !== undefined ? { config, cas } : { config }));
    return jsonResponse(ok === true, { pretty: wantsPretty(req) });
  };
}

function lastContactText(s: ServerHealthInfo): string {
  return s.lastContactMs === undefined ? "-1ns" : formatDuration(s.lastContactMs);
}

function stableSinceText(s: ServerHealthInfo): string {
  return new Date(s.stableSinceMs).toISOString();
}

/** Consul's api.OperatorHealthReply JSON. */
export function operatorHealthJson(r: ServerHealthReply): Record<string, unknown> {
  return {
    Healthy: r.healthy,
    FailureTolerance: r.failureTolerance,
    Servers: r.servers.map((s) => ({
      ID: s.id,
      Name: s.name,
      Address: s.address,
      SerfStatus: s.serfStatus,
      Version: s.version,
      Leader: s.leader,
      LastContact: lastContactText(s),
      LastTerm: s.lastTerm,
      LastIndex: s.lastIndex,
      Healthy: s.healthy,
      Voter: s.voter,
      StableSince: stableSinceText(s),
    })),
  };
}

/** Consul's api.AutopilotState JSON (without the Enterprise redundancy zones, read replicas and upgrade state). */
export function autopilotStateJson(r: ServerHealthReply): Record<string, unknown> {
  const servers: Record<string, unknown> = {};
  for (const s of r.servers) {
    servers[s.id] = {
      ID: s.id,
      Name: s.name,
      Address: s.address,
      NodeStatus: s.serfStatus,
      Version: s.version,
      LastContact: lastContactText(s),
      LastTerm: s.lastTerm,
      LastIndex: s.lastIndex,
      Healthy: s.healthy,
      StableSince: stableSinceText(s),
      ReadReplica: false,
      Status: s.leader ? "leader" : s.voter ? "voter" : "non-voter",
      Meta: {},
      NodeType: "voter",
    };
  }
  return {
    Healthy: r.healthy,
    FailureTolerance: r.failureTolerance,
    OptimisticFailureTolerance: r.failureTolerance,
    Servers: servers,
    Leader: r.servers.find((s) => s.leader)?.id ?? "",
    Voters: r.servers.filter((s) => s.voter).map((s) => s.id),
  };
}

export function operatorAutopilotHealthHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const reply = (await backend.callRaw(operatorRaftMethods.serverHealth, withRequestOptions(req, {}))) as ServerHealthReply;
    // Consul answers 429 while any server is unhealthy, so a load balancer check can use the status alone.
    return jsonResponse(operatorHealthJson(reply), { status: reply.healthy ? 200 : 429, pretty: wantsPretty(req) });
  };
}

export function operatorAutopilotStateHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const reply = (await backend.callRaw(operatorRaftMethods.serverHealth, withRequestOptions(req, {}))) as ServerHealthReply;
    return jsonResponse(autopilotStateJson(reply), { pretty: wantsPretty(req) });
  };
}
