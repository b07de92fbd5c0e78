// /v1/query (consul agent/prepared_query_endpoint.go): POST creates, GET
// lists; /v1/query/<id> GET, PUT (update; the ID comes from the URL),
// DELETE; /v1/query/<id-or-name>/execute and /explain. Field names are read
// without regard to case, as Go's JSON decoder does (python-consul sends
// lower-case ones). Without ACLs Consul shows a query's Token as stored.
import { BadRequestError } from "../errors.ts";
import type { PreparedQueryBody, PreparedQueryExecuteArgs, Rpc } from "../rpc/mod.ts";
import { checkServiceNodeToJson } from "../state/catalog_json.ts";
import { preparedQueryToJson } from "../state/prepared_query_json.ts";
import { parseWriteOptions } from "./blocking.ts";
import { callOptions, field, isJsonObject, listArgs, parseJsonBody, readResponse, str, strList, type JsonObject } from "./catalog.ts";
import { HttpError } from "./http_error.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

type H = (req: HttpRequest) => Promise<HttpResponse>;

export const queryPrefix = "/v1/query/";

function decodeError(where: string, want: string): never {
  throw new BadRequestError(`Request decode failed: ${where}: expected ${want}`);
}

function bool(o: JsonObject, name: string, where: string): boolean {
  const v = field(o, name);
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") decodeError(`${where}.${name}`, "a boolean");
  return v;
}

function int(o: JsonObject, name: string, where: string): number {
  const v = field(o, name);
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) decodeError(`${where}.${name}`, "an integer");
  return v;
}

function strMap(o: JsonObject, name: string, where: string): Record<string, string> {
  const v = field(o, name);
  if (v === undefined || v === null) return {};
  if (!isJsonObject(v) || !Object.values(v).every((x) => typeof x === "string")) decodeError(`${where}.${name}`, "a map of strings");
  return { ...(v as Record<string, string>) };
}

function sub(o: JsonObject, name: string, where: string): JsonObject {
  const v = field(o, name);
  if (v === undefined || v === null) return {};
  if (!isJsonObject(v)) decodeError(`${where}.${name}`, "an object");
  return v;
}

/** A /v1/query body → a query with every field defaulted (Go zero values). */
export function decodePreparedQuery(body: unknown): PreparedQueryBody {
  const o: JsonObject = body === undefined || body === null ? {} : isJsonObject(body) ? body : decodeError("PreparedQuery", "a JSON object");
  const w = "PreparedQuery";
  const t = sub(o, "Template", w);
  const s = sub(o, "Service", w);
  const f = sub(s, "Failover", "Service");
  const d = sub(o, "DNS", w);
  return {
    id: str(o, "ID", w) ?? "",
    name: str(o, "Name", w) ?? "",
    session: str(o, "Session", w) ?? "",
    token: str(o, "Token", w) ?? "",
    template: { type: str(t, "Type", "Template") ?? "", regexp: str(t, "Regexp", "Template") ?? "", removeEmptyTags: bool(t, "RemoveEmptyTags", "Template") },
    service: {
      service: str(s, "Service", "Service") ?? "",
      failover: { nearestN: int(f, "NearestN", "Failover"), datacenters: strList(f, "Datacenters", "Failover") ?? [] },
      ignoreCheckIds: strList(s, "IgnoreCheckIDs", "Service") ?? [],
      onlyPassing: bool(s, "OnlyPassing", "Service"),
      near: str(s, "Near", "Service") ?? "",
      tags: strList(s, "Tags", "Service") ?? [],
      nodeMeta: strMap(s, "NodeMeta", "Service"),
      serviceMeta: strMap(s, "ServiceMeta", "Service"),
      connect: bool(s, "Connect", "Service"),
    },
    dns: { ttl: str(d, "TTL", "DNS") ?? "" },
  };
}

/** `?limit` as Go strconv.Atoi reads it; 0 when absent. */
export function parseLimit(req: HttpRequest): number {
  const v = req.query.get("limit");
  if (v === null || v === "") return 0;
  if (!/^[+-]?\d+$/.test(v) || !Number.isSafeInteger(Number(v))) {
    throw new BadRequestError(`Bad limit: strconv.Atoi: parsing ${JSON.stringify(v)}: invalid syntax`);
  }
  return Number(v);
}

function emptyOk(): HttpResponse {
  return { status: 200, headers: {}, body: "" };
}

export interface QueryHandlerDeps {
  rpc: Rpc;
  nodeName: () => string;
  datacenter: string;
}

function executeArgs(req: HttpRequest, id: string, deps: QueryHandlerDeps): PreparedQueryExecuteArgs {
  const { query } = listArgs(req);
  return {
    queryIdOrName: id,
    limit: parseLimit(req),
    near: req.query.get("near") ?? "",
    agent: { node: deps.nodeName(), datacenter: deps.datacenter },
    query,
  };
}

export function queryGeneralHandler(deps: QueryHandlerDeps): H {
  return async (req) => {
    if (req.method === "POST") {
      const query = decodePreparedQuery(parseJsonBody(req, "PreparedQuery"));
      const reply = await deps.rpc.call("PreparedQuery.Apply", { op: "create", query, ...parseWriteOptions(req) }, callOptions(req));
      return jsonResponse({ ID: reply.id }, { pretty: wantsPretty(req) });
    }
    const reply = await deps.rpc.call("PreparedQuery.List", listArgs(req), callOptions(req));
    return readResponse(req, reply.meta, reply.queries.map(preparedQueryToJson));
  };
}

function onlyGet(req: HttpRequest): void {
  if (req.method !== "GET") throw new HttpError(405, `method ${req.method} not allowed`, { headers: { Allow: "OPTIONS,GET" } });
}

export function querySpecificHandler(deps: QueryHandlerDeps): H {
  const { rpc } = deps;
  return async (req) => {
    let id = req.path.slice(queryPrefix.length);
    if (id.endsWith("/execute")) {
      onlyGet(req);
      id = id.slice(0, -"/execute".length);
      const r = await rpc.call("PreparedQuery.Execute", executeArgs(req, id, deps), callOptions(req));
      return readResponse(req, r.meta, {
        Service: r.service,
        Nodes: r.nodes.map(checkServiceNodeToJson),
        DNS: { TTL: r.dns.ttl },
        Datacenter: r.datacenter,
        Failovers: r.failovers,
      });
    }
    if (id.endsWith("/explain")) {
      onlyGet(req);
      id = id.slice(0, -"/explain".length);
      const r = await rpc.call("PreparedQuery.Explain", executeArgs(req, id, deps), callOptions(req));
      return readResponse(req, r.meta, { Query: preparedQueryToJson(r.query) });
    }
    if (id === "") throw new BadRequestError("Missing Query ID");
    if (req.method === "GET") {
      const r = await rpc.call("PreparedQuery.Get", { ...listArgs(req), queryId: id }, callOptions(req));
      return readResponse(req, r.meta, r.queries.map(preparedQueryToJson));
    }
    if (req.method === "PUT") {
      const query = { ...decodePreparedQuery(parseJsonBody(req, "PreparedQuery")), id };
      await rpc.call("PreparedQuery.Apply", { op: "update", query, ...parseWriteOptions(req) }, callOptions(req));
      return emptyOk();
    }
    const query = { ...decodePreparedQuery(undefined), id };
    await rpc.call("PreparedQuery.Apply", { op: "delete", query, ...parseWriteOptions(req) }, callOptions(req));
    return emptyOk();
  };
}
