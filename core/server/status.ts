// Status endpoint family (consul agent/consul/status_endpoint.go).

import type { RpcHandlers } from "../rpc/methods.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";

export function statusEndpoints(ctx: ServerContext): Pick<RpcHandlers, "Status.Leader" | "Status.Peers"> {
  return withCheckedArgs<"Status.Leader" | "Status.Peers">({
    "Status.Leader"() {
      return Promise.resolve(ctx.consensus.leaderAddr());
    },
    "Status.Peers"() {
      return Promise.resolve(ctx.consensus.peers());
    },
  });
}
