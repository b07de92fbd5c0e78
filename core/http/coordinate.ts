// /v1/coordinate/* (consul agent/coordinate_endpoint.go). Nodes' LAN
// coordinates are the catalog's (Coordinate.ListNodes / Coordinate.Node,
// blocking queries with X-Consul-Index): agents send theirs to the servers
// every sync_coordinate_interval_min or so (PUT /v1/coordinate/update does
// the same by hand) and the leader applies them in batches. Datacenters are
// answered from this server's WAN gossip pool (a client has none).
import { BadRequestError } from "../errors.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import type { CoordinateEntry, Rpc, VivaldiCoord } from "../rpc/mod.ts";
import type { GossipBackend, GossipPoolBackend } from "./backends.ts";
import { distanceSeconds } from "../gossip/coordinate.ts";
import type { OperatorRaftRpc } from "../rpc/methods.ts";
import { datacentersByDistance } from "../rpc/wan_routes.ts";
import { parseQueryOptions, parseWriteOptions, setMetaHeaders } from "./blocking.ts";
import { callOptions, field, isJsonObject, parseJsonBody, pathTail, readResponse } from "./catalog.ts";
import { jsonResponse, wantsPretty, type Handler, type HttpRequest } from "./types.ts";

export function coordJson(c: Coordinate | VivaldiCoord): Record<string, unknown> {
  return { Vec: [...c.vec], Error: c.error, Adjustment: c.adjustment, Height: c.height };
}

/** structs.Coordinate as Consul shows it (Partition is "default" outside Enterprise). */
function entryJson(e: CoordinateEntry): Record<string, unknown> {
  return { Node: e.node, Segment: e.segment, Partition: "default", Coord: coordJson(e.coord) };
}

/** Consul filterCoordinates: `?segment` (even empty) keeps that segment only; sorted by node name. */
function shown(req: HttpRequest, list: CoordinateEntry[]): Record<string, unknown>[] {
  const segment = req.query.get("segment");
  return list
    .filter((c) => segment === null || c.segment === segment)
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map(entryJson);
}

/** GET /v1/coordinate/nodes[?segment=] */
export function coordinateNodesHandler(deps: { rpc: Rpc }): Handler {
  return async (req) => {
    const reply = await deps.rpc.call("Coordinate.ListNodes", { query: parseQueryOptions(req) }, callOptions(req));
    return readResponse(req, reply.meta, shown(req, reply.coordinates));
  };
}

export const coordinateNodePrefix = "/v1/coordinate/node/";

/** GET /v1/coordinate/node/<node>: 404 with an empty body when the catalog has none for it. */
export function coordinateNodeHandler(deps: { rpc: Rpc }): Handler {
  return async (req) => {
    const node = pathTail(req, coordinateNodePrefix);
    if (node === "") throw new BadRequestError("Missing node name");
    const reply = await deps.rpc.call("Coordinate.Node", { node, query: parseQueryOptions(req) }, callOptions(req));
    const list = shown(req, reply.coordinates);
    if (list.length === 0) return { status: 404, headers: setMetaHeaders({ "Content-Type": "application/json" }, reply.meta), body: "" };
    return readResponse(req, reply.meta, list);
  };
}

function numberField(obj: Record<string, unknown>, name: string): number {
  const v = field(obj, name);
  if (v === undefined || v === null) return 0;
  if (typeof v !== "number") throw new BadRequestError(`Request decode failed: Coord.${name} must be a number`);
  return v;
}

/** The body of PUT /v1/coordinate/update: structs.CoordinateUpdateRequest ({Node, Segment, Coord}). */
export function parseCoordinateUpdate(req: HttpRequest): { node: string; segment: string; coord: VivaldiCoord } {
  const body = parseJsonBody(req, "coordinate update");
  if (!isJsonObject(body)) throw new BadRequestError("Request decode failed: the body must be a JSON object such as {\"Node\": ..., \"Coord\": {...}}");
  const node = field(body, "Node") ?? "";
  const segment = field(body, "Segment") ?? "";
  if (typeof node !== "string") throw new BadRequestError("Request decode failed: Node must be a string");
  if (typeof segment !== "string") throw new BadRequestError("Request decode failed: Segment must be a string");
  const c = field(body, "Coord");
  if (!isJsonObject(c)) throw new BadRequestError("Request decode failed: Coord must be an object with Vec, Error, Adjustment and Height");
  const vec = field(c, "Vec");
  if (!Array.isArray(vec) || !vec.every((x) => typeof x === "number")) throw new BadRequestError("Request decode failed: Coord.Vec must be a list of numbers");
  return { node, segment, coord: { vec, error: numberField(c, "Error"), adjustment: numberField(c, "Adjustment"), height: numberField(c, "Height") } };
}

/** PUT /v1/coordinate/update: queue a node's coordinate on the leader; 200 with an empty body, as Consul. */
export function coordinateUpdateHandler(deps: { rpc: Rpc }): Handler {
  return async (req) => {
    const update = parseCoordinateUpdate(req);
    await deps.rpc.call("Coordinate.Update", { ...update, ...parseWriteOptions(req) }, callOptions(req));
    return { status: 200, headers: {}, body: "" };
  };
}

/** The RPC a client agent sends /v1/coordinate/datacenters to (a server answers from its WAN pool). */
export const coordinateListDatacentersMethod = "Coordinate.ListDatacenters";

/**
 * WAN coordinates by datacenter (consul Coordinate.ListDatacenters): ours
 * first, then by median round trip from `self` (this server's WAN member,
 * `<node>.<dc>`), then by name; nodes by name within each.
 */
export function wanDatacenterMaps(
  wan: Pick<GossipPoolBackend, "members" | "coordinates">,
  self: { node: string; datacenter: string },
): Array<{ Datacenter: string; AreaID: string; Coordinates: Array<{ Node: string; Coord: Record<string, unknown> }> }> {
  const members = wan.members();
  const dcOf = new Map(members.map((m) => [m.name, m.tags.dc ?? ""]));
  const coords = new Map(wan.coordinates().map((c) => [c.node, c.coord]));
  const mine = coords.get(`${self.node}.${self.datacenter}`);
  const byDc = new Map<string, Array<{ Node: string; Coord: Record<string, unknown> }>>();
  for (const [node, coord] of coords) {
    const dc = dcOf.get(node) ?? "";
    if (dc === "") continue;
    const list = byDc.get(dc) ?? [];
    list.push({ Node: node, Coord: coordJson(coord) });
    byDc.set(dc, list);
  }
  const order = datacentersByDistance(self.datacenter, members.map((m) => ({ name: m.name, datacenter: m.tags.dc ?? "" })), (node) => {
    const c = coords.get(node);
    return mine && c && c.vec.length === mine.vec.length ? distanceSeconds(mine, c) * 1_000 : undefined;
  });
  return order.filter((dc) => byDc.has(dc)).map((dc) => ({
    Datacenter: dc,
    AreaID: "wan",
    Coordinates: byDc.get(dc)!.sort((a, b) => (a.Node < b.Node ? -1 : a.Node > b.Node ? 1 : 0)),
  }));
}

/** GET /v1/coordinate/datacenters: from this agent's WAN pool (servers, -dev), or asked of a server (clients). */
export function coordinateDatacentersHandler(deps: { gossip: GossipBackend; operator: OperatorRaftRpc; self: { node: string; datacenter: string } }): Handler {
  return async (req) => {
    const wan = deps.gossip.wan;
    const out = wan ? wanDatacenterMaps(wan, deps.self) : await deps.operator.callRaw(coordinateListDatacentersMethod, {}, callOptions(req));
    return jsonResponse(out, { pretty: wantsPretty(req) });
  };
}
