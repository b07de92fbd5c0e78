// /v1/status/leader and /v1/status/peers (consul agent/status_endpoint.go).
import type { Rpc } from "../rpc/mod.ts";
import { parseDatacenter } from "./blocking.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

function dcArgs(req: HttpRequest): { datacenter?: string } {
  const dc = parseDatacenter(req);
  return dc ? { datacenter: dc } : {};
}

/** `"127.0.0.1:8300"`, or `""` when no leader is known. */
export function statusLeaderHandler(options: { rpc: Rpc }): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => jsonResponse(await options.rpc.call("Status.Leader", dcArgs(req)), { pretty: wantsPretty(req) });
}

/** `["127.0.0.1:8300", ...]`: the Raft peers' server RPC addresses. */
export function statusPeersHandler(options: { rpc: Rpc }): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => jsonResponse(await options.rpc.call("Status.Peers", dcArgs(req)) ?? [], { pretty: wantsPretty(req) });
}
