// Catalog endpoints (consul agent/consul/catalog_endpoint.go): Register and
// Deregister go through Raft on the leader (with the leader's wall clock in
// the command, for lock delays of sessions they invalidate); the reads are
// blocking queries over the catalog tables, filtered by `?filter=` over
// Consul's JSON field names.

import { BadRequestError } from "../errors.ts";
import { compileFilter } from "../filter/filter.ts";
import type { Filter } from "../filter/filter.ts";
import type {
  CatalogRegisterArgs,
  HealthCheckInput,
  NodeServiceInput,
  RpcHandlers,
  ServiceNode,
} from "../rpc/methods.ts";
import { nodeServicesTxn, nodesTxn, servicesTxn } from "../state/catalog.ts";
import { isCheckStatus } from "../state/catalog.ts";
import { nodeServiceToJson, nodeToJson, serviceNodeToJson } from "../state/catalog_json.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { sharedServiceNodes } from "./read_cache.ts";

type CatalogMethods =
  | "Catalog.Register" | "Catalog.Deregister" | "Catalog.ListDatacenters" | "Catalog.ListNodes"
  | "Catalog.ListServices" | "Catalog.ServiceNodes" | "Catalog.NodeServices";

/** Compile `filter` (400 on a syntax error); undefined when absent or blank. */
export function filterOf(args: { filter?: string }): Filter | undefined {
  const f = args.filter;
  if (f === undefined || f === null || f.trim() === "") return undefined;
  if (typeof f !== "string") throw new BadRequestError("Filter must be a string");
  return compileFilter(f);
}

function isStr(v: unknown): v is string {
  return typeof v === "string";
}

function checkStrMap(v: unknown, what: string): void {
  if (v === undefined) return;
  if (typeof v !== "object" || v === null || Array.isArray(v) || !Object.values(v).every(isStr)) {
    throw new BadRequestError(`Invalid ${what}: must be a map of strings`);
  }
}

function checkService(s: NodeServiceInput): void {
  if (typeof s !== "object" || s === null) throw new BadRequestError("Invalid service");
  if (!isStr(s.service) || s.service === "") throw new BadRequestError("Must provide service name");
  if (s.id !== undefined && !isStr(s.id)) throw new BadRequestError("Invalid service ID");
  if (s.tags !== undefined && (!Array.isArray(s.tags) || !s.tags.every(isStr))) throw new BadRequestError("Invalid service tags");
  if (s.port !== undefined && !(Number.isInteger(s.port) && s.port >= 0 && s.port <= 65535)) {
    throw new BadRequestError(`Invalid service port ${JSON.stringify(s.port)}`);
  }
  checkStrMap(s.meta, "service meta");
}

function checkCheck(c: HealthCheckInput): void {
  if (typeof c !== "object" || c === null) throw new BadRequestError("Invalid check");
  if (!isStr(c.name) && !isStr(c.checkId)) throw new BadRequestError("Must provide check name or ID");
  if (c.status !== undefined && (c.status as string) !== "" && !isCheckStatus(c.status)) {
    throw new BadRequestError(`Invalid check status ${JSON.stringify(c.status)}: must be passing, warning or critical`);
  }
}

/** Consul's Catalog.Register fix-ups: service ID defaults to its name, check ID to its name, check node to the node. */
export function normalizeRegister(args: CatalogRegisterArgs): CatalogRegisterArgs {
  if (!isStr(args.node) || args.node === "") throw new BadRequestError("Must provide node");
  if ((!isStr(args.address) || args.address === "") && !args.skipNodeUpdate) throw new BadRequestError("Must provide address");
  checkStrMap(args.taggedAddresses, "tagged addresses");
  checkStrMap(args.nodeMeta, "node meta");
  const out: CatalogRegisterArgs = { ...args, address: args.address ?? "" };
  if (args.service) {
    checkService(args.service);
    out.service = { ...args.service, id: args.service.id || args.service.service };
  }
  const checks = [...(args.check ? [args.check] : []), ...(args.checks ?? [])].map((c) => {
    checkCheck(c);
    const status = (c.status as string) === "" ? undefined : c.status;
    return { ...c, status, name: c.name ?? c.checkId ?? "", checkId: c.checkId || c.name, node: c.node || args.node };
  });
  delete out.check;
  out.checks = checks;
  return out;
}

export function catalogEndpoints(ctx: ServerContext): Pick<RpcHandlers, CatalogMethods> {
  const dc = ctx.datacenter ?? "dc1";
  return withCheckedArgs<CatalogMethods>({
    async "Catalog.Register"(args, options) {
      const req = normalizeRegister(args);
      requireLeader(ctx);
      const { token: _t, datacenter: _d, ...body } = req;
      const command = encodeCommand(MessageType.Register, { ...body, datacenter: dc, nowMs: ctx.clock.wallNow() });
      const { index } = await raftApply(ctx, command, options);
      return { index };
    },

    async "Catalog.Deregister"(args, options) {
      if (!isStr(args.node) || args.node === "") throw new BadRequestError("Must provide node");
      if (args.serviceId !== undefined && !isStr(args.serviceId)) throw new BadRequestError("Invalid service ID");
      if (args.checkId !== undefined && !isStr(args.checkId)) throw new BadRequestError("Invalid check ID");
      requireLeader(ctx);
      const command = encodeCommand(MessageType.Deregister, {
        node: args.node,
        serviceId: args.serviceId || undefined,
        checkId: args.checkId || undefined,
        nowMs: ctx.clock.wallNow(),
      });
      const { index } = await raftApply(ctx, command, options);
      return { index };
    },

    async "Catalog.ListDatacenters"() {
      const list = ctx.datacenters?.() ?? [];
      return list.length > 0 ? list : [dc];
    },

    async "Catalog.ListNodes"(args, options) {
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = nodesTxn(state, ws, args.nodeMetaFilters);
        return { index: r.index, value: filter ? r.value.filter((n) => filter.match(nodeToJson(n))) : r.value };
      }, options);
      return { nodes: value, meta };
    },

    async "Catalog.ListServices"(args, options) {
      const filter = filterOf(args);
      let instances: Record<string, number> | undefined;
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        // Counted in the same scan, for the web UI's services list (reset on each rerun of a blocking read).
        instances = args.withInstanceCounts ? {} : undefined;
        return servicesTxn(state, ws, args.nodeMetaFilters, filter ? (sn) => filter.match(serviceNodeToJson(sn)) : undefined, instances);
      }, options);
      return instances ? { services: value, instances, meta } : { services: value, meta };
    },

    async "Catalog.ServiceNodes"(args, options) {
      if (!isStr(args.serviceName) || args.serviceName === "") throw new BadRequestError("Must provide service name");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        // One frozen answer per service, parameters and index, shared by every reader (read_cache.ts).
        const r = sharedServiceNodes(state, ws, { name: args.serviceName, tags: args.serviceTags, nodeMeta: args.nodeMetaFilters });
        return { index: r.index, value: filter ? r.value.filter((sn) => filter.match(serviceNodeToJson(sn))) : r.value };
      }, options);
      // Frozen when shared: readers copy (filter, sort), never edit in place.
      return { serviceNodes: value as ServiceNode[], meta };
    },

    async "Catalog.NodeServices"(args, options) {
      if (!isStr(args.node) || args.node === "") throw new BadRequestError("Must provide node");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = nodeServicesTxn(state, ws, args.node);
        if (!filter || !r.value) return r;
        return { index: r.index, value: { node: r.value.node, services: r.value.services.filter((s) => filter.match(nodeServiceToJson(s))) } };
      }, options);
      return { nodeServices: value, meta };
    },
  });
}

/** Consul's serfHealth check ID, name and outputs (agent/structs SerfCheck*). */
export const serfCheckId = "serfHealth";
export const serfCheckName = "Serf Health Status";
export const serfCheckAliveOutput = "Agent alive and reachable";
export const serfCheckFailedOutput = "Agent not live or unreachable";

/**
 * The Catalog.Register args the leader applies when reconciling a gossip
 * member (Consul leader.go handleAliveMember / handleFailedMember): the node
 * with its serfHealth check, passing when alive, critical when failed.
 */
export function serfHealthRegistration(member: { name: string; id?: string; address: string; alive: boolean; meta?: Record<string, string> }): CatalogRegisterArgs {
  return {
    node: member.name,
    ...(member.id ? { id: member.id } : {}),
    address: member.address,
    ...(member.meta ? { nodeMeta: member.meta } : {}),
    check: {
      node: member.name,
      checkId: serfCheckId,
      name: serfCheckName,
      status: member.alive ? "passing" : "critical",
      output: member.alive ? serfCheckAliveOutput : serfCheckFailedOutput,
    },
  };
}
