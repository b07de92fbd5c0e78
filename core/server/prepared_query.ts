// Prepared query endpoints (consul agent/consul/prepared_query_endpoint.go).
// Apply checks the query (Consul parseQuery) and the state store's rules on
// the leader, picks a new query's UUID from the injected Rng, then proposes;
// the FSM checks the state rules again. Execute runs the health query of the
// (rendered) service, drops unhealthy instances and filters by tags and meta,
// then shuffles with the Rng or sorts by RTT from `near` (the agent's LAN
// coordinates), and applies the limit. When that leaves no instance, the
// query fails over (consul queryFailover): the NearestN other datacenters by
// RTT, then the Failover Datacenters the WAN pool knows, in the given order,
// each tried once with PreparedQuery.ExecuteRemote (the definition travels,
// the other datacenter needs no copy of the query) until one has instances.
//
// ACLs as Consul applies them to queries: a query with a name (or a
// template) is guarded by query:write / query:read on that name, for the
// definition given and for the one stored; a query without one is anyone's
// who knows its ID, and only management (acl:write) sees it in a listing.
// The query's token is hidden from all but acl:write. Executing needs no
// query rule: the instances are filtered by the query's own token, else the
// caller's (node:read and service:read).

import type { Authorizer } from "../acl/authorizer.ts";
import { BadRequestError, CairnError, errorMessage, NotFoundError, PermissionDeniedError, StateError } from "../errors.ts";
import { parseDuration } from "../config/duration.ts";
import { sortNear, type CoordinateSource } from "../gossip/near.ts";
import type {
  CheckServiceNode,
  PreparedQuery,
  PreparedQueryBody,
  PreparedQueryExecuteArgs,
  PreparedQueryExecuteReply,
  QueryOptions,
  RpcHandlers,
  ServiceQuery,
} from "../rpc/methods.ts";
import { checkServiceNodesTxn } from "../state/catalog.ts";
import {
  preparedQueryGetTxn,
  preparedQueryListTxn,
  preparedQueryResolveTxn,
  preparedQuerySetProblem,
  queryNotFoundMessage,
} from "../state/prepared_query.ts";
import { preparedQueryToJson } from "../state/prepared_query_json.ts";
import { aclIdentity, type AclIdentity } from "./acl.ts";
import { filterOf } from "./catalog.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { uuidFromRng } from "./session.ts";

type PreparedQueryMethods =
  | "PreparedQuery.Apply"
  | "PreparedQuery.Get"
  | "PreparedQuery.List"
  | "PreparedQuery.Explain"
  | "PreparedQuery.Execute"
  | "PreparedQuery.ExecuteRemote";

/** What Consul shows instead of a query's token to a caller without acl:write. */
export const redactedToken = "<hidden>";

/** The name query rules guard (consul PreparedQuery.GetACLPrefix): a query with a name or a template has one; "" is a valid prefix. */
function aclPrefix(q: { name: string; template: { type: string } }): string | undefined {
  return q.name !== "" || q.template.type !== "" ? q.name : undefined;
}

/** Consul answers prepared-query refusals with the bare acl.ErrPermissionDenied. */
function needQueryWrite(id: AclIdentity | undefined, q: { name: string; template: { type: string } }): void {
  const prefix = aclPrefix(q);
  if (id && prefix !== undefined && !id.authz.allowed("query", "write", prefix)) throw new PermissionDeniedError();
}

/** A query as `authz` may see it: its token hidden unless acl:write. */
function redacted(authz: Authorizer, q: PreparedQuery): PreparedQuery {
  return q.token !== "" && !authz.allowed("acl", "write") ? { ...q, token: redactedToken } : q;
}

/**
 * The queries a listing shows (consul filterPreparedQueries): all of them to
 * acl:write; else those with a name the token may read, tokens hidden.
 * `filtered` says whether a named one was left out (unnamed ones never count).
 */
export function visibleQueries(authz: Authorizer, queries: readonly PreparedQuery[]): { queries: readonly PreparedQuery[]; filtered: boolean } {
  if (authz.allowed("acl", "write")) return { queries, filtered: false };
  let filtered = false;
  const out: PreparedQuery[] = [];
  for (const q of queries) {
    const prefix = aclPrefix(q);
    if (prefix === undefined) continue;
    if (!authz.allowed("query", "read", prefix)) {
      filtered = true;
      continue;
    }
    out.push(redacted(authz, q));
  }
  return { queries: out, filtered };
}

/** Instances the token may see (node:read and service:read), the same array when it may see all. */
function visibleInstances(authz: Authorizer, nodes: CheckServiceNode[]): CheckServiceNode[] {
  const ok = (n: CheckServiceNode) => authz.allowed("node", "read", n.node.node) && authz.allowed("service", "read", n.service.service);
  return nodes.every(ok) ? nodes : nodes.filter(ok);
}

/** Consul's node meta limits (structs.ValidateNodeMetadata). */
const metaMaxPairs = 64;
const metaKeyMaxLength = 128;
const metaValueMaxLength = 512;
const metaKeyPattern = /^[a-zA-Z0-9_-]+$/;

function validateMetaFilters(meta: Record<string, string>): void {
  const keys = Object.keys(meta);
  if (keys.length > metaMaxPairs) throw new BadRequestError(`Node metadata cannot contain more than ${metaMaxPairs} key/value pairs`);
  for (const k of keys) {
    if (k === "") throw new BadRequestError("Key cannot be blank");
    if (!metaKeyPattern.test(k)) throw new BadRequestError(`Key contains invalid characters: ${k}`);
    if (k.length > metaKeyMaxLength) throw new BadRequestError(`Key is too long (limit: ${metaKeyMaxLength} characters)`);
    if (meta[k]!.length > metaValueMaxLength) throw new BadRequestError(`Value is too long (limit: ${metaValueMaxLength} characters)`);
  }
}

/** Consul parseQuery: refuses with "Invalid prepared query: …" (a 400 here). */
export function validatePreparedQuery(q: PreparedQueryBody): void {
  const bad = (why: string): never => {
    throw new BadRequestError(`Invalid prepared query: ${why}`);
  };
  if (q.name === "" && q.template.type === "" && q.session === "") bad("Must be bound to a session");
  if (q.token === redactedToken) bad(`Bad Token '${q.token}', it looks like a query definition with a redacted token was submitted`);
  if (q.service.service === "") bad("Must provide a Service name to query");
  if (q.service.failover.nearestN < 0) bad(`Bad NearestN '${q.service.failover.nearestN}', must be >= 0`);
  try {
    validateMetaFilters(q.service.nodeMeta);
  } catch (err) {
    bad(err instanceof Error ? err.message : String(err));
  }
  if (q.dns.ttl !== "") {
    const ms = parseDuration(q.dns.ttl);
    if (ms === undefined) bad(`Bad DNS TTL '${q.dns.ttl}': time: invalid duration "${q.dns.ttl}"`);
    if (ms! < 0) bad(`DNS TTL '${q.dns.ttl}', must be >=0`);
  }
}

/** Consul CheckServiceNodes.FilterIgnore: critical drops an instance, and so does warning with onlyPassing; ignored check IDs do not count. */
export function filterHealthy(nodes: readonly CheckServiceNode[], onlyPassing: boolean, ignoreCheckIds: readonly string[]): CheckServiceNode[] {
  const ignore = new Set(ignoreCheckIds);
  return nodes.filter((n) =>
    n.checks.every((c) => ignore.has(c.checkId) || (c.status !== "critical" && (!onlyPassing || c.status === "passing")))
  );
}

/** Consul tagFilter: every tag required, `!tag` excluded, without regard to case. */
export function filterTags(nodes: readonly CheckServiceNode[], tags: readonly string[]): CheckServiceNode[] {
  const must: string[] = [], not: string[] = [];
  for (const t of tags) {
    const l = t.toLowerCase();
    if (l.startsWith("!")) not.push(l.slice(1));
    else must.push(l);
  }
  return nodes.filter((n) => {
    const have = new Set(n.service.tags.map((t) => t.toLowerCase()));
    return must.every((t) => have.has(t)) && !not.some((t) => have.has(t));
  });
}

function satisfiesMeta(meta: Record<string, string>, filters: Record<string, string>): boolean {
  return Object.entries(filters).every(([k, v]) => Object.hasOwn(meta, k) && meta[k] === v);
}

/** The instances a query's Service selects (Consul PreparedQuery.execute, local datacenter), before ordering. */
export function selectInstances(nodes: readonly CheckServiceNode[], s: ServiceQuery): CheckServiceNode[] {
  // cairn has no Connect: no instance is Connect-capable.
  if (s.connect) return [];
  let out = filterHealthy(nodes, s.onlyPassing, s.ignoreCheckIds);
  if (Object.keys(s.nodeMeta).length > 0) out = out.filter((n) => satisfiesMeta(n.node.meta, s.nodeMeta));
  if (Object.keys(s.serviceMeta).length > 0) out = out.filter((n) => satisfiesMeta(n.service.meta, s.serviceMeta));
  if (s.tags.length > 0) out = filterTags(out, s.tags);
  return out;
}

/**
 * The datacenters a failover tries, in order (consul queryFailover): the
 * first `nearestN` of the others by RTT, then those of `datacenters` the WAN
 * pool knows and that are not already listed. `nearest` excludes ours.
 */
export function failoverTargets(failover: { nearestN: number; datacenters: readonly string[] }, nearest: readonly string[]): string[] {
  const out = nearest.slice(0, Math.max(0, failover.nearestN));
  const known = new Set(nearest);
  for (const dc of failover.datacenters) if (known.has(dc) && !out.includes(dc)) out.push(dc);
  return out;
}

/** A request that reached this server for another datacenter was routed wrongly (the router forwards those). */
function requireLocalDatacenter(ctx: ServerContext, dc: string | undefined): void {
  if (dc && ctx.datacenter && dc.toLowerCase() !== ctx.datacenter.toLowerCase()) throw new CairnError("no_path", "No path to datacenter");
}

export function preparedQueryEndpoints(
  ctx: ServerContext,
  options: { coordinates?: CoordinateSource } = {},
): Pick<RpcHandlers, PreparedQueryMethods> {
  function resolve(args: PreparedQueryExecuteArgs) {
    if (typeof args.queryIdOrName !== "string" || args.queryIdOrName === "") throw new BadRequestError("Missing Query ID");
    requireLocalDatacenter(ctx, args.query.datacenter);
    return read(ctx, { ...args.query, minQueryIndex: 0 }, (state) => {
      const r = preparedQueryResolveTxn(state, args.queryIdOrName);
      if (!r.value) return { index: r.index, value: undefined };
      const rendered: PreparedQuery = r.value;
      const nodes = checkServiceNodesTxn(state, undefined, { name: rendered.service.service });
      return { index: Math.max(r.index, nodes.index), value: { query: rendered, nodes: selectInstances(nodes.value, rendered.service) } };
    });
  }

  return withCheckedArgs<PreparedQueryMethods>({
    async "PreparedQuery.Apply"(args, callOptions) {
      const op = args.op;
      if (op !== "create" && op !== "update" && op !== "delete") throw new BadRequestError(`Unknown prepared query operation: ${String(op)}`);
      requireLocalDatacenter(ctx, args.datacenter);
      const q = args.query;
      if (typeof q !== "object" || q === null) throw new BadRequestError("Missing prepared query");
      if (op === "create") {
        if (q.id !== "") throw new BadRequestError("ID must be empty when creating a new prepared query");
      } else if (typeof q.id !== "string" || q.id === "") {
        throw new BadRequestError("Missing Query ID");
      }
      // The token resolves first: an unknown one is refused before anything else.
      const who = aclIdentity(ctx, args.token);
      // Write on the name proposed (a delete names none: only the stored query counts).
      if (op !== "delete") needQueryWrite(who, q);
      if (op !== "delete") validatePreparedQuery(q);
      requireLeader(ctx);
      const state = ctx.fsm.state;
      // And write on the name of the query changed or deleted.
      const stored = op === "create" ? undefined : state.tables.prepared_queries.get(q.id);
      if (stored) needQueryWrite(who, stored);
      if (op === "delete") {
        if (!stored) throw new NotFoundError(`Cannot modify non-existent prepared query: '${q.id}'`);
        const { index } = await raftApply(ctx, encodeCommand(MessageType.PreparedQuery, { op, id: q.id }), callOptions);
        return { id: q.id, index };
      }
      let id = q.id;
      if (op === "create") {
        id = uuidFromRng(ctx.rng);
        while (state.tables.prepared_queries.get(id)) id = uuidFromRng(ctx.rng);
      } else if (!stored) {
        throw new NotFoundError(`Cannot modify non-existent prepared query: '${id}'`);
      }
      const query: PreparedQueryBody = { ...q, id };
      const problem = preparedQuerySetProblem(state, op, query);
      if (problem) throw new BadRequestError(problem);
      const { index, result } = await raftApply(ctx, encodeCommand(MessageType.PreparedQuery, { op, query }), callOptions);
      // A repeat of a create already applied answers with the query it made then.
      return { id: typeof result === "string" ? result : id, index };
    },

    async "PreparedQuery.Get"(args, callOptions) {
      if (typeof args.queryId !== "string" || args.queryId === "") throw new BadRequestError("Missing Query ID");
      requireLocalDatacenter(ctx, args.query.datacenter);
      const who = aclIdentity(ctx, args.query.token);
      const { value, meta } = await read(ctx, args.query, (state, ws) => preparedQueryGetTxn(state, ws, args.queryId), callOptions);
      if (!value) throw new NotFoundError(queryNotFoundMessage);
      if (!who) return { queries: [value], meta };
      // A query without a name is anyone's who has its ID; a named one needs query:read on it.
      const prefix = aclPrefix(value);
      if (prefix !== undefined && !who.authz.allowed("acl", "write") && !who.authz.allowed("query", "read", prefix)) throw new PermissionDeniedError();
      return { queries: [redacted(who.authz, value)], meta };
    },

    async "PreparedQuery.List"(args, callOptions) {
      requireLocalDatacenter(ctx, args.query.datacenter);
      const who = aclIdentity(ctx, args.query.token);
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = preparedQueryListTxn(state, ws);
        return { index: r.index, value: filter ? r.value.filter((q) => filter.match(preparedQueryToJson(q))) : r.value };
      }, callOptions);
      if (!who) return { queries: value, meta };
      const shown = visibleQueries(who.authz, value);
      return { queries: shown.queries as PreparedQuery[], meta: shown.filtered ? { ...meta, resultsFilteredByAcls: true } : meta };
    },

    async "PreparedQuery.Explain"(args) {
      const who = aclIdentity(ctx, args.query.token);
      const { value, meta } = await resolveOrThrow(args);
      if (!who) return { query: value.query, meta };
      // The standard listing filter on the one query: left out means refused (an unnamed query too).
      const [shown] = visibleQueries(who.authz, [value.query]).queries;
      if (!shown) throw new PermissionDeniedError();
      return { query: shown, meta };
    },

    async "PreparedQuery.Execute"(args) {
      const limit = args.limit ?? 0;
      if (!Number.isSafeInteger(limit)) throw new BadRequestError(`Bad limit: ${JSON.stringify(limit)}`);
      // The caller's token must be known even when the query brings its own.
      const caller = aclIdentity(ctx, args.query.token);
      const { value, meta } = await resolveOrThrow(args);
      const { query } = value;
      const who = caller && query.token !== "" ? aclIdentity(ctx, query.token) : caller;
      let nodes = ctx.rng.shuffle([...(who ? visibleInstances(who.authz, value.nodes) : value.nodes)]);
      // Source: the caller's `near`, else the query's Near; `_agent` is the agent that asked.
      let near = args.near || query.service.near;
      if (near === "_agent") near = args.agent.node;
      // `_ip` needs the caller's address, which cairn does not carry: no sort (Consul does the same without one).
      if (near === "_ip") near = "";
      if (near !== "" && options.coordinates) {
        nodes = sortNear(nodes, (n) => n.node.node, near, { coordinates: options.coordinates, agentNode: () => args.agent.node });
      }
      if (near !== "") {
        // The node asked about goes first when it is among the first ten (Consul).
        const i = nodes.slice(0, 10).findIndex((n) => n.node.node === near);
        if (i > 0) [nodes[0], nodes[i]] = [nodes[i]!, nodes[0]!];
      }
      if (limit > 0 && nodes.length > limit) nodes = nodes.slice(0, limit);
      const reply: PreparedQueryExecuteReply = {
        service: query.service.service,
        nodes,
        dns: { ttl: query.dns.ttl },
        datacenter: ctx.datacenter ?? "",
        failovers: 0,
        meta,
      };
      return nodes.length > 0 ? reply : await failover(query, { limit, query: args.query }, reply);
    },

    async "PreparedQuery.ExecuteRemote"(args, callOptions) {
      const limit = args.limit ?? 0;
      if (!Number.isSafeInteger(limit)) throw new BadRequestError(`Bad limit: ${JSON.stringify(limit)}`);
      requireLocalDatacenter(ctx, args.query.datacenter);
      const query = args.definition;
      const caller = aclIdentity(ctx, args.query.token);
      const who = caller && query.token !== "" ? aclIdentity(ctx, query.token) : caller;
      const { value, meta } = await read(ctx, { ...args.query, minQueryIndex: 0 }, (state) => {
        const r = checkServiceNodesTxn(state, undefined, { name: query.service.service });
        return { index: r.index, value: selectInstances(r.value, query.service) };
      }, callOptions);
      let nodes = ctx.rng.shuffle([...(who ? visibleInstances(who.authz, value) : value)]);
      if (limit > 0 && nodes.length > limit) nodes = nodes.slice(0, limit);
      return { service: query.service.service, nodes, dns: { ttl: query.dns.ttl }, datacenter: ctx.datacenter ?? "", failovers: 0, meta };
    },
  });

  /** No instance here: try the failover datacenters in turn; the first with instances answers. */
  async function failover(query: PreparedQuery, o: { limit: number; query: QueryOptions }, empty: PreparedQueryExecuteReply): Promise<PreparedQueryExecuteReply> {
    const rpc = ctx.remote?.();
    const f = query.service.failover;
    if (!rpc || (f.nearestN <= 0 && f.datacenters.length === 0)) return empty;
    const ours = ctx.datacenter ?? "";
    const nearest = (ctx.datacenters?.() ?? []).filter((dc) => dc !== ours);
    const targets = failoverTargets(f, nearest);
    let failovers = 0;
    let last: PreparedQueryExecuteReply = empty;
    for (const dc of targets) {
      failovers++;
      try {
        last = await rpc.call("PreparedQuery.ExecuteRemote", {
          definition: query,
          limit: o.limit > 0 ? o.limit : undefined,
          query: { ...o.query, minQueryIndex: 0, datacenter: dc },
        });
      } catch (err) {
        ctx.logger.warn("Failed querying for service in datacenter", { service: query.service.service, datacenter: dc, error: errorMessage(err) });
        continue;
      }
      if (last.nodes.length > 0) break;
    }
    return { ...last, nodes: last.nodes.length > 0 ? last.nodes : [], failovers };
  }

  async function resolveOrThrow(args: PreparedQueryExecuteArgs) {
    let r;
    try {
      r = await resolve(args);
    } catch (err) {
      // A template looked up by ID, or one that fails to render: Consul's words, a 400 here.
      if (err instanceof StateError) throw new BadRequestError(err.message);
      throw err;
    }
    if (!r.value) throw new NotFoundError(queryNotFoundMessage);
    return { value: r.value, meta: r.meta };
  }
}
