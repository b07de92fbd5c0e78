// /v1/health/* (consul agent/health_endpoint.go): node/<node>,
// checks/<service>, service/<service> (?passing, ?tag, ?filter, ?node-meta),
// state/<state>. All blocking; answers are Consul's JSON.
import { BadRequestError } from "../errors.ts";
import { sortNear, type NearOptions } from "../gossip/near.ts";
import type { Rpc } from "../rpc/mod.ts";
import { checkServiceNodeToJson, healthCheckToJson } from "../state/catalog_json.ts";
import { callOptions, listArgs, pathTail, readResponse } from "./catalog.ts";
import { sharedListResponse } from "./encoded_cache.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";
import { translateServiceNodes, withTranslateHeader, type WanTranslation } from "./translate.ts";

type H = (req: HttpRequest) => Promise<HttpResponse>;

export const healthNodePrefix = "/v1/health/node/";
export const healthChecksPrefix = "/v1/health/checks/";
export const healthServicePrefix = "/v1/health/service/";
export const healthStatePrefix = "/v1/health/state/";

export function healthNodeHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const node = pathTail(req, healthNodePrefix);
    if (node === "") throw new BadRequestError("Missing node name");
    const reply = await options.rpc.call("Health.NodeChecks", { ...listArgs(req), node }, callOptions(req));
    return readResponse(req, reply.meta, reply.checks.map(healthCheckToJson));
  };
}

export function healthChecksHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const serviceName = pathTail(req, healthChecksPrefix);
    if (serviceName === "") throw new BadRequestError("Missing service name");
    const reply = await options.rpc.call("Health.ServiceChecks", { ...listArgs(req), serviceName }, callOptions(req));
    return readResponse(req, reply.meta, reply.checks.map(healthCheckToJson));
  };
}

/** `?passing`, `?passing=true|1` → true; `?passing=false|0` → false (Go strconv.ParseBool); other text is a 400. */
export function parsePassing(req: HttpRequest): boolean {
  if (!req.query.has("passing")) return false;
  const v = (req.query.get("passing") ?? "").toLowerCase();
  if (v === "" || v === "1" || v === "t" || v === "true") return true;
  if (v === "0" || v === "f" || v === "false") return false;
  throw new BadRequestError(`Invalid value for ?passing: ${JSON.stringify(v)}`);
}

export function healthServiceHandler(options: { rpc: Rpc; near?: NearOptions; translate?: WanTranslation }): H {
  return async (req) => {
    const serviceName = pathTail(req, healthServicePrefix);
    if (serviceName === "") throw new BadRequestError("Missing service name");
    const tags = req.query.getAll("tag");
    const args = listArgs(req);
    const reply = await options.rpc.call(
      "Health.ServiceNodes",
      { ...args, serviceName, passingOnly: parsePassing(req), ...(tags.length > 0 ? { serviceTags: tags } : {}) },
      callOptions(req),
    );
    const rows = options.near ? sortNear(reply.nodes, (n) => n.node.node, args.query.near ?? "", options.near) : reply.nodes;
    // A shared (frozen) answer left as it came is encoded once for every reader (encoded_cache.ts).
    return withTranslateHeader(options.translate, sharedListResponse(req, reply.meta, translateServiceNodes(req, options.translate, rows), checkServiceNodeToJson));
  };
}

const states: ReadonlySet<string> = new Set(["any", "passing", "warning", "critical"]);

export function healthStateHandler(options: { rpc: Rpc }): H {
  return async (req) => {
    const state = pathTail(req, healthStatePrefix);
    if (state === "") throw new BadRequestError("Missing check state");
    if (!states.has(state)) throw new BadRequestError(`Invalid check state "${state}": use any, passing, warning or critical`);
    const reply = await options.rpc.call(
      "Health.ChecksInState",
      { ...listArgs(req), state: state as "any" },
      callOptions(req),
    );
    return readResponse(req, reply.meta, reply.checks.map(healthCheckToJson));
  };
}
