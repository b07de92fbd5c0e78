// /v1/operator/raft/* (consul agent/operator_endpoint.go): the Raft
// configuration, removing a peer, and leadership transfer. The agent's
// router answers these on the leader (or any server with ?stale).
import { BadRequestError } from "../errors.ts";
import { operatorRaftMethods, type OperatorRaftRpc } from "../rpc/methods.ts";
import type { RaftConfigurationReply } from "../server/operator.ts";
import { parseWriteOptions } from "./blocking.ts";
import { jsonResponse, textResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/**
 * An operator call's args with `?dc` (the router sends a call naming another
 * datacenter to a server there) and the request's token (the server checks
 * operator:read / operator:write itself).
 */
export function withRequestOptions<T extends object>(req: HttpRequest, args: T): T & { datacenter?: string; token?: string } {
  return { ...args, ...parseWriteOptions(req) };
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

export function operatorRaftConfigurationHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const reply = await backend.callRaw(operatorRaftMethods.getConfiguration, withRequestOptions(req, { allowStale: req.query.has("stale") }));
    return jsonResponse(raftConfigurationJson(reply), { pretty: wantsPretty(req) });
  };
}

export function operatorRaftPeerHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const id = req.query.get("id") ?? "";
    const address = req.query.get("address") ?? "";
    if ((id === "") === (address === "")) {
      throw new BadRequestError("Must specify either ?id with the server's ID or ?address with IP:port of peer to remove");
    }
    await backend.callRaw(operatorRaftMethods.removePeer, withRequestOptions(req, id !== "" ? { id } : { address }));
    return textResponse(200, "");
  };
}

export function operatorRaftTransferLeaderHandler(backend: OperatorRaftRpc): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => {
    const id = req.query.get("id") ?? "";
    const reply = (await backend.callRaw(operatorRaftMethods.transferLeader, withRequestOptions(req, id !== "" ? { id } : {}))) as { success?: boolean } | undefined;
    return jsonResponse({ Success: reply?.success === true }, { pretty: wantsPretty(req) });
  };
}
