// The shape of every RPC method's arguments, checked before a handler runs.
// Arguments from another server arrive as whatever msgpack decoded; a
// handler trusting the TypeScript types would fail deep inside with a
// TypeError (a 500 on the caller's side) or, worse, store a value of the
// wrong type. Each endpoint family wraps its handlers with
// `withCheckedArgs`, so a bad field is a BadRequestError naming the field.
// Only the types are checked here (numbers no stricter than the FSM's own
// checks); the handlers keep their own rules (non-empty names, known ops,
// port ranges, value limits) and Consul's wording for them.
// Unknown keys are allowed (a newer peer may send more).

import { BadRequestError } from "../errors.ts";
import { isKvFlags, type RpcHandlers, type RpcMethod } from "../rpc/methods.ts";

/** Says what is wrong with `v` (a phrase such as "must be a string"), or undefined when it fits. */
type Shape = (v: unknown) => string | { at: string; problem: string } | undefined;

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

const str: Shape = (v) => (typeof v === "string" ? undefined : "must be a string");
const bool: Shape = (v) => (typeof v === "boolean" ? undefined : "must be true or false");
const bytes: Shape = (v) => (v instanceof Uint8Array ? undefined : "must be bytes");
/** A count or index: a non-negative safe integer. */
const uint: Shape = (v) => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? undefined : "must be a non-negative integer");
const kvFlags: Shape = (v) => (isKvFlags(v) ? undefined : "must be a uint64 (a number, or the digits of one above 2^53)");
/** A non-negative finite number (durations in ms, indexes from a lenient parser). */
const nonNegative: Shape = (v) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? undefined : "must be a non-negative number");
const finite: Shape = (v) => (typeof v === "number" && Number.isFinite(v) ? undefined : "must be a number");
const int: Shape = (v) => (typeof v === "number" && Number.isSafeInteger(v) ? undefined : "must be an integer");
const any: Shape = () => undefined;

function optional(shape: Shape): Shape & { optional: true } {
  const f = ((v: unknown) => (v === undefined ? undefined : shape(v))) as Shape & { optional: true };
  f.optional = true;
  return f;
}

function list(item: Shape): Shape {
  return (v) => {
    if (!Array.isArray(v)) return "must be a list";
    for (let i = 0; i < v.length; i++) {
      const p = item(v[i]);
      if (p !== undefined) return nested(`[${i}]`, p);
    }
    return undefined;
  };
}

function map(value: Shape): Shape {
  return (v) => {
    if (!isObject(v)) return "must be a map";
    for (const [k, x] of Object.entries(v)) {
      const p = value(x);
      if (p !== undefined) return nested(`.${k}`, p);
    }
    return undefined;
  };
}

function obj(fields: Record<string, Shape>): Shape {
  return (v) => {
    if (!isObject(v)) return "must be an object";
    for (const [k, shape] of Object.entries(fields)) {
      const p = shape(v[k]);
      if (p !== undefined) return nested(`.${k}`, p);
    }
    return undefined;
  };
}

function nested(at: string, p: string | { at: string; problem: string }): { at: string; problem: string } {
  return typeof p === "string" ? { at, problem: p } : { at: at + p.at, problem: p.problem };
}

const strMap = map(str);
const strList = list(str);

const queryOptions = obj({
  minQueryIndex: nonNegative,
  maxQueryTimeMs: nonNegative,
  allowStale: bool,
  requireConsistent: bool,
  datacenter: optional(str),
  token: optional(str),
});

const routing = { datacenter: optional(str), token: optional(str) };

const listArgs = {
  query: queryOptions,
  filter: optional(str),
  nodeMetaFilters: optional(strMap),
};

const nodeService = obj({
  kind: optional(str),
  id: optional(str),
  service: str,
  tags: optional(strList),
  address: optional(str),
  taggedAddresses: optional(map(obj({ address: str, port: finite }))),
  meta: optional(strMap),
  port: optional(finite),
  weights: optional(obj({ passing: finite, warning: finite })),
  enableTagOverride: optional(bool),
});

const checkDefinition = obj({
  http: optional(str),
  tlsServerName: optional(str),
  tlsSkipVerify: optional(bool),
  header: optional(map(strList)),
  method: optional(str),
  body: optional(str),
  tcp: optional(str),
  grpc: optional(str),
  grpcUseTls: optional(bool),
  intervalMs: optional(finite),
  timeoutMs: optional(finite),
  deregisterCriticalServiceAfterMs: optional(finite),
});

const healthCheck = obj({
  node: optional(str),
  checkId: optional(str),
  name: optional(str),
  status: optional(str),
  notes: optional(str),
  output: optional(str),
  serviceId: optional(str),
  type: optional(str),
  interval: optional(str),
  timeout: optional(str),
  definition: optional(checkDefinition),
});

const preparedQueryFields = {
  id: str,
  name: str,
  session: str,
  token: str,
  template: obj({ type: str, regexp: str, removeEmptyTags: bool }),
  service: obj({
    service: str,
    failover: obj({ nearestN: int, datacenters: strList }),
    ignoreCheckIds: strList,
    onlyPassing: bool,
    near: str,
    tags: strList,
    nodeMeta: strMap,
    serviceMeta: strMap,
    connect: bool,
  }),
  dns: obj({ ttl: str }),
};
const preparedQuery = obj(preparedQueryFields);

const executeArgs = obj({
  queryIdOrName: str,
  limit: optional(int),
  near: optional(str),
  agent: obj({ node: str, datacenter: str }),
  query: queryOptions,
});

const argShapes: { [M in RpcMethod]: Shape } = {
  // ACL arguments are checked field by field in core/server/acl.ts, with Consul's wording.
  "ACL.Bootstrap": obj({ ...routing }),
  "ACL.Write": obj({ kind: str, op: str, item: optional(any), id: optional(str), ...routing }),
  "ACL.Read": obj({ kind: str, op: str, id: optional(str), name: optional(str), policy: optional(str), role: optional(str), includeLocal: optional(bool), query: queryOptions }),
  "ACL.Resolve": obj({ secret: str, scope: optional(str), ...routing }),
  "ACL.ReplicationStatus": obj({ query: queryOptions }),
  "KVS.Apply": obj({
    op: str,
    entry: obj({ key: str, flags: optional(kvFlags), value: optional(bytes), modifyIndex: optional(uint), session: optional(str) }),
    ...routing,
  }),
  "KVS.Get": obj({ key: str, query: queryOptions }),
  "KVS.List": obj({ prefix: str, query: queryOptions }),
  "KVS.ListKeys": obj({ prefix: str, separator: optional(str), query: queryOptions }),
  // Each op's fields are checked by the state store, which answers a bad op with a per-op error, as Consul does.
  "Txn.Apply": obj({ ops: list(any), query: optional(queryOptions), ...routing }),
  "Status.Leader": obj(routing),
  "Status.Peers": obj(routing),
  "Catalog.Register": obj({
    node: str,
    id: optional(str),
    address: optional(str),
    taggedAddresses: optional(strMap),
    nodeMeta: optional(strMap),
    service: optional(nodeService),
    check: optional(healthCheck),
    checks: optional(list(healthCheck)),
    skipNodeUpdate: optional(bool),
    ...routing,
  }),
  "Catalog.Deregister": obj({ node: str, serviceId: optional(str), checkId: optional(str), ...routing }),
  "Catalog.ListDatacenters": obj({}),
  "Catalog.ListNodes": obj(listArgs),
  "Catalog.ListServices": obj({ ...listArgs, withInstanceCounts: optional(bool) }),
  "Catalog.ServiceNodes": obj({ ...listArgs, serviceName: str, serviceTags: optional(strList) }),
  "Catalog.NodeServices": obj({ ...listArgs, node: str }),
  "Health.NodeChecks": obj({ ...listArgs, node: str }),
  "Health.ServiceChecks": obj({ ...listArgs, serviceName: str }),
  "Health.ServiceNodes": obj({ ...listArgs, serviceName: str, serviceTags: optional(strList), passingOnly: optional(bool) }),
  "Health.ChecksInState": obj({ ...listArgs, state: str }),
  "Session.Apply": obj({
    op: str,
    session: obj({
      id: optional(str),
      name: optional(str),
      node: optional(str),
      lockDelayMs: optional(nonNegative),
      behavior: optional(str),
      ttl: optional(str),
      nodeChecks: optional(strList),
      serviceChecks: optional(list(obj({ id: str, namespace: optional(str) }))),
    }),
    ...routing,
  }),
  "Session.Get": obj({ ...listArgs, sessionId: str }),
  "Session.List": obj(listArgs),
  "Session.NodeSessions": obj({ ...listArgs, node: str }),
  "Session.Renew": obj({ sessionId: str, ...routing }),
  "Snapshot.Save": obj({ allowStale: optional(bool), ...routing }),
  // One chunk, in one buffer or as its parts end to end (core/http/snapshot.ts).
  "Snapshot.Restore": obj({ archive: (v) => (Array.isArray(v) ? list(bytes)(v) : bytes(v)), ...routing }),
  "PreparedQuery.Apply": obj({ op: str, query: preparedQuery, ...routing }),
  "PreparedQuery.Get": obj({ ...listArgs, queryId: str }),
  "PreparedQuery.List": obj(listArgs),
  "PreparedQuery.Explain": executeArgs,
  "PreparedQuery.Execute": executeArgs,
  "PreparedQuery.ExecuteRemote": obj({ definition: obj({ ...preparedQueryFields, createIndex: uint, modifyIndex: uint }), limit: optional(int), query: queryOptions }),
  // The coordinate's numbers are checked by the endpoint (Consul's "invalid coordinate").
  "Coordinate.Update": obj({ node: str, segment: optional(str), coord: obj({ vec: list(any), error: any, adjustment: any, height: any }), ...routing }),
  "Coordinate.ListNodes": obj({ query: queryOptions }),
  "Coordinate.Node": obj({ node: str, query: queryOptions }),
};

/** Throws a BadRequestError naming the first field of `args` that has the wrong type for `method`. */
export function checkArgs(method: RpcMethod, args: unknown): void {
  const p = argShapes[method](args);
  if (p === undefined) return;
  const { at, problem } = typeof p === "string" ? { at: "", problem: p } : p;
  throw new BadRequestError(`Invalid arguments to "${method}": ${at === "" ? "the arguments" : `"${at.replace(/^\./, "")}"`} ${problem}`);
}

/** The handlers, each checking its arguments' shape first (a bad one rejects with BadRequestError). */
export function withCheckedArgs<M extends RpcMethod>(handlers: Pick<RpcHandlers, M>): Pick<RpcHandlers, M> {
  const out = {} as Record<string, (args: unknown, options?: { signal?: AbortSignal }) => Promise<unknown>>;
  for (const [method, handler] of Object.entries(handlers) as [M, (args: unknown, options?: { signal?: AbortSignal }) => Promise<unknown>][]) {
    out[method] = (args, options) => {
      try {
        checkArgs(method, args);
      } catch (err) {
        return Promise.reject(err);
      }
      return handler(args, options);
    };
  }
  return out as unknown as Pick<RpcHandlers, M>;
}
