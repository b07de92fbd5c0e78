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
