// /v1/operator/raft/* (consul agent/operator_endpoint.go): the Raft
// configuration, removing a peer, and leadership transfer. The agent's
// router answers these on the leader (or any server with ?stale).
import { BadRequestError } from "../errors.ts";
import type { RaftConfigurationReply } from "../server/operator.ts";
import { jsonResponse, textResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/** Operator method names on the server RPC (core/agent/server_node.ts serves them). */
export const operatorRaftMethods = {
  getConfiguration: "Operator.RaftGetConfiguration",
  removePeer: "Operator.RaftRemovePeer",
  transferLeader: "Operator.RaftTransferLeader",
} as const;

/** Routes a call by method name (core/rpc/forward.ts `RpcRouter` fits). */
export interface OperatorRaftBackend {
  callRaw(method: string, args: unknown, options?: { signal?: AbortSignal }): Promise<unknown>;
}

/** Consul's `structs.RaftConfigurationResponse` JSON. */
export interface RaftConfigurationJson {
  Servers: Array<{ ID: string; Node: string; Address: string; Leader: boolean; ProtocolVersion: string; Voter: boolean; LastIndex: number }>;
  Index: number;
}

export function raftConfigurationJson(reply: unknown): RaftConfigurationJson {
  const r = (reply ?? {}) as Partial<RaftConfigurationReply>;
  return {
    Servers: (r.servers ?? []).map((s) => ({
      ID: s.id,
      Node: s.node,
      Address: s.address,
      Leader: s.leader,
      ProtocolVersion: s.protocolVersion,
      Voter: s.voter,
      LastIndex: s.lastIndex,
    })),
    Index: r.index ?? 1,
  };
}

export function operatorRaftConfigurationHandler(backend: OperatorRaftBackend): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const reply = await backend.callRaw(operatorRaftMethods.getConfiguration, { allowStale: req.query.has("stale") });
    return jsonResponse(raftConfigurationJson(reply), { pretty: wantsPretty(req) });
  };
}

export function operatorRaftPeerHandler(backend: OperatorRaftBackend): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const id = req.query.get("id") ?? "";
    const address = req.query.get("address") ?? "";
    if ((id === "") === (address === "")) {
      throw new BadRequestError("Must specify either ?id with the server's ID or ?address with IP:port of peer to remove");
    }
    await backend.callRaw(operatorRaftMethods.removePeer, id !== "" ? { id } : { address });
    return textResponse(200, "");
  };
}

export function operatorRaftTransferLeaderHandler(backend: OperatorRaftBackend): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const id = req.query.get("id") ?? "";
    const reply = (await backend.callRaw(operatorRaftMethods.transferLeader, id !== "" ? { id } : {})) as { success?: boolean } | undefined;
    return jsonResponse({ Success: reply?.success === true }, { pretty: wantsPretty(req) });
  };
}

/** Route entries for the agent's Router (`router.add(...)` each). */
export function operatorRaftRoutes(backend: OperatorRaftBackend): Array<{ pattern: string; methods: readonly string[]; handler: (req: HttpRequest) => Promise<HttpResponse> }> {
  return [
    { pattern: "/v1/operator/raft/configuration", methods: ["GET"], handler: operatorRaftConfigurationHandler(backend) },
    { pattern: "/v1/operator/raft/peer", methods: ["DELETE"], handler: operatorRaftPeerHandler(backend) },
    { pattern: "/v1/operator/raft/transfer-leader", methods: ["POST"], handler: operatorRaftTransferLeaderHandler(backend) },
  ];
}
