// Health endpoints (Consul agent/consul/health_endpoint.go).
import { CairnError } from "../errors.ts";
import type { RpcHandlers } from "../rpc/methods.ts";
import type { ServerContext } from "./context.ts";

type HealthMethods = "Health.NodeChecks" | "Health.ServiceChecks" | "Health.ServiceNodes" | "Health.ChecksInState";

export function healthEndpoints(_ctx: ServerContext): Pick<RpcHandlers, HealthMethods> {
  const todo = () => Promise.reject(new CairnError("unimplemented", "Health endpoints are not implemented yet"));
  return {
    "Health.NodeChecks": todo,
    "Health.ServiceChecks": todo,
    "Health.ServiceNodes": todo,
    "Health.ChecksInState": todo,
  };
}
