// Session endpoints (Consul agent/consul/session_endpoint.go).
import { CairnError } from "../errors.ts";
import type { RpcHandlers } from "../rpc/methods.ts";
import type { ServerContext } from "./context.ts";

type SessionMethods = "Session.Apply" | "Session.Get" | "Session.List" | "Session.NodeSessions" | "Session.Renew";

export function sessionEndpoints(_ctx: ServerContext): Pick<RpcHandlers, SessionMethods> {
  const todo = () => Promise.reject(new CairnError("unimplemented", "Session endpoints are not implemented yet"));
  return {
    "Session.Apply": todo,
    "Session.Get": todo,
    "Session.List": todo,
    "Session.NodeSessions": todo,
    "Session.Renew": todo,
  };
}
