// /v1/operator/raft, as consul api/operator_raft.go. Use as `new Operator(client)`.
import type { ApiClient, QueryOptions, WriteOptions } from "./client.ts";

/** One server in the Raft configuration (Consul's `RaftServer`). */
export interface RaftServer {
  ID: string;
  Node: string;
  Address: string;
  Leader: boolean;
  ProtocolVersion: string;
  Voter: boolean;
  /** The leader's view of the last log index this server holds. */
  LastIndex: number;
}

export interface RaftConfiguration {
  Servers: RaftServer[];
  Index: number;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(`Invalid JSON from agent for ${what}: ${text.slice(0, 200)}`);
  }
}

export class Operator {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async raftGetConfiguration(q?: QueryOptions): Promise<RaftConfiguration> {
    const r = await this.#c.request({ method: "GET", path: "/v1/operator/raft/configuration", query: q });
    const data = parseJson(r.text, "operator/raft/configuration") as Partial<RaftConfiguration> | null;
    if (typeof data !== "object" || data === null || !Array.isArray(data.Servers)) {
      throw new TypeError("Invalid response from agent for operator/raft/configuration: expected {Servers, Index}");
    }
    return {
      Servers: data.Servers.map((s) => ({
        ID: String(s.ID ?? ""),
        Node: String(s.Node ?? ""),
        Address: String(s.Address ?? ""),
        Leader: s.Leader === true,
        ProtocolVersion: String(s.ProtocolVersion ?? ""),
        Voter: s.Voter === true,
        LastIndex: Number(s.LastIndex ?? 0) || 0,
      })),
      Index: Number(data.Index ?? 0) || 0,
    };
  }

  async raftRemovePeerByID(id: string, w?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "DELETE", path: "/v1/operator/raft/peer", params: { id }, write: w });
  }

  async raftRemovePeerByAddress(address: string, w?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "DELETE", path: "/v1/operator/raft/peer", params: { address }, write: w });
  }

  /** Ask the leader to hand leadership to `id` (or to the most up-to-date voter). */
  async raftLeaderTransfer(id?: string, w?: WriteOptions): Promise<boolean> {
    const r = await this.#c.request({ method: "POST", path: "/v1/operator/raft/transfer-leader", params: { id: id || undefined }, write: w });
    const data = parseJson(r.text, "operator/raft/transfer-leader") as { Success?: unknown } | null;
    return data?.Success === true;
  }
}

// /v1/operator/autopilot, as consul api/operator_autopilot.go. Durations are Go text ("200ms", "10s").

/** Consul's `AutopilotConfiguration` (the Enterprise fields are always empty in cairn). */
export interface AutopilotConfiguration {
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

/** Consul's `ServerHealth`. */
export interface ServerHealth {
  ID: string;
  Name: string;
  Address: string;
  SerfStatus: string;
  Version: string;
  Leader: boolean;
  LastContact: string;
  LastTerm: number;
  LastIndex: number;
  Healthy: boolean;
  Voter: boolean;
  StableSince: string;
}

/** Consul's `OperatorHealthReply`. */
export interface OperatorHealthReply {
  Healthy: boolean;
  FailureTolerance: number;
  Servers: ServerHealth[];
}

/** Consul's `AutopilotServer` (the fields cairn fills). */
export interface AutopilotServer {
  ID: string;
  Name: string;
  Address: string;
  NodeStatus: string;
  Version: string;
  LastContact: string;
  LastTerm: number;
  LastIndex: number;
  Healthy: boolean;
  StableSince: string;
  ReadReplica: boolean;
  Status: string;
  Meta: Record<string, string>;
  NodeType: string;
}

/** Consul's `AutopilotState`. */
export interface AutopilotState {
  Healthy: boolean;
  FailureTolerance: number;
  OptimisticFailureTolerance: number;
  Servers: Record<string, AutopilotServer>;
  Leader: string;
  Voters: string[];
}

function objectOf(text: string, what: string): Record<string, unknown> {
  const data = parseJson(text, what);
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw new TypeError(`Invalid response from agent for ${what}: expected an object`);
  return data as Record<string, unknown>;
}

export class OperatorAutopilot {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async getConfiguration(q?: QueryOptions): Promise<AutopilotConfiguration> {
    const r = await this.#c.request({ method: "GET", path: "/v1/operator/autopilot/configuration", query: q });
    return objectOf(r.text, "operator/autopilot/configuration") as unknown as AutopilotConfiguration;
  }

  /** Replace the configuration. */
  async setConfiguration(conf: Omit<AutopilotConfiguration, "CreateIndex" | "ModifyIndex">, w?: WriteOptions): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/operator/autopilot/configuration", body: JSON.stringify(conf), write: w });
  }

  /** Replace the configuration only if it is still at `conf.ModifyIndex`; false when it changed meanwhile. */
  async casConfiguration(conf: AutopilotConfiguration, w?: WriteOptions): Promise<boolean> {
    const r = await this.#c.request({
      method: "PUT",
      path: "/v1/operator/autopilot/configuration",
      params: { cas: conf.ModifyIndex },
      body: JSON.stringify(conf),
      write: w,
    });
    return parseJson(r.text, "operator/autopilot/configuration") === true;
  }

  /** Every server's health; answered with 429 (accepted here) while any is unhealthy. */
  async serverHealth(q?: QueryOptions): Promise<OperatorHealthReply> {
    const r = await this.#c.request({ method: "GET", path: "/v1/operator/autopilot/health", query: q, accept: [429] });
    return objectOf(r.text, "operator/autopilot/health") as unknown as OperatorHealthReply;
  }

  async state(q?: QueryOptions): Promise<AutopilotState> {
    const r = await this.#c.request({ method: "GET", path: "/v1/operator/autopilot/state", query: q });
    return objectOf(r.text, "operator/autopilot/state") as unknown as AutopilotState;
  }
}
