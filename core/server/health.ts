// Health endpoints (consul agent/consul/health_endpoint.go): blocking reads
// of checks and of service instances with their checks, filtered by
// `?filter=` over Consul's JSON field names.

import { BadRequestError } from "../errors.ts";
import type { CheckServiceNode, RpcHandlers } from "../rpc/methods.ts";
import { checksInStateTxn, isCheckStatus, nodeChecksTxn, serviceChecksTxn } from "../state/catalog.ts";
import { checkServiceNodeToJson, healthCheckToJson } from "../state/catalog_json.ts";
import { filterOf } from "./catalog.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { read } from "./context.ts";
import { sharedCheckServiceNodes } from "./read_cache.ts";

type HealthMethods = "Health.NodeChecks" | "Health.ServiceChecks" | "Health.ServiceNodes" | "Health.ChecksInState";

export function healthEndpoints(ctx: ServerContext): Pick<RpcHandlers, HealthMethods> {
  return withCheckedArgs<HealthMethods>({
    async "Health.NodeChecks"(args, options) {
      if (typeof args.node !== "string" || args.node === "") throw new BadRequestError("Must provide node");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = nodeChecksTxn(state, ws, args.node);
        return { index: r.index, value: filter ? r.value.filter((c) => filter.match(healthCheckToJson(c))) : r.value };
      }, options);
      return { checks: value, meta };
    },

    async "Health.ServiceChecks"(args, options) {
      if (typeof args.serviceName !== "string" || args.serviceName === "") throw new BadRequestError("Must provide service name");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = serviceChecksTxn(state, ws, args.serviceName, args.nodeMetaFilters);
        return { index: r.index, value: filter ? r.value.filter((c) => filter.match(healthCheckToJson(c))) : r.value };
      }, options);
      return { checks: value, meta };
    },

    async "Health.ServiceNodes"(args, options) {
      if (typeof args.serviceName !== "string" || args.serviceName === "") throw new BadRequestError("Must provide service name");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        // One frozen answer per service, parameters and index, shared by every reader (read_cache.ts).
        const r = sharedCheckServiceNodes(state, ws, {
          name: args.serviceName,
          tags: args.serviceTags,
          nodeMeta: args.nodeMetaFilters,
          passingOnly: args.passingOnly,
        });
        return { index: r.index, value: filter ? r.value.filter((x) => filter.match(checkServiceNodeToJson(x))) : r.value };
      }, options);
      // Frozen when shared: readers copy (filter, sort), never edit in place.
      return { nodes: value as CheckServiceNode[], meta };
    },

    async "Health.ChecksInState"(args, options) {
      if (args.state !== "any" && !isCheckStatus(args.state)) {
        throw new BadRequestError(`Invalid check state ${JSON.stringify(String(args.state))}: must be any, passing, warning or critical`);
      }
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = checksInStateTxn(state, ws, args.state, args.nodeMetaFilters);
        return { index: r.index, value: filter ? r.value.filter((c) => filter.match(healthCheckToJson(c))) : r.value };
      }, options);
      return { checks: value, meta };
    },
  });
}
