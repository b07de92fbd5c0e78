// /v1/coordinate/nodes, /v1/coordinate/node/<node>, /v1/coordinate/datacenters
// (consul agent/coordinate_endpoint.go), answered from the Vivaldi
// coordinates this agent's gossip pools compute (LAN for nodes, WAN for
// datacenters; a client has no WAN pool and lists no datacenters).
import { NotFoundError } from "../errors.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import type { GossipBackend } from "./backends.ts";
import { jsonResponse, wantsPretty, type Handler } from "./types.ts";

export function coordJson(c: Coordinate): Record<string, unknown> {
  return { Vec: [...c.vec], Error: c.error, Adjustment: c.adjustment, Height: c.height };
}

const meta = { "X-Consul-Index": "1", "X-Consul-KnownLeader": "true", "X-Consul-LastContact": "0" };

function lanNodes(gossip: GossipBackend) {
  return gossip.lan.coordinates()
    .sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map(({ node, coord }) => ({ Node: node, Segment: "", Partition: "default", Coord: coordJson(coord) }));
}

/** GET /v1/coordinate/nodes */
export function coordinateNodesHandler(deps: { gossip: GossipBackend }): Handler {
  return async (req) => jsonResponse(lanNodes(deps.gossip), { pretty: wantsPretty(req), headers: { ...meta } });
}

export const coordinateNodePrefix = "/v1/coordinate/node/";

/** GET /v1/coordinate/node/<node> */
export function coordinateNodeHandler(deps: { gossip: GossipBackend }): Handler {
  return async (req) => {
    const node = req.path.slice(coordinateNodePrefix.length);
    const found = lanNodes(deps.gossip).filter((n) => n.Node === node);
    if (found.length === 0) throw new NotFoundError(`Unknown node: ${node}`);
    return jsonResponse(found, { pretty: wantsPretty(req), headers: { ...meta } });
  };
}

/** GET /v1/coordinate/datacenters: WAN coordinates by datacenter (none on a client). */
export function coordinateDatacentersHandler(deps: { gossip: GossipBackend }): Handler {
  return async (req) => {
    const wan = deps.gossip.wan;
    if (!wan) return jsonResponse([], { pretty: wantsPretty(req) });
    const dcOf = new Map(wan.members().map((m) => [m.name, m.tags.dc ?? ""]));
    const byDc = new Map<string, Array<{ Node: string; Coord: Record<string, unknown> }>>();
    for (const { node, coord } of wan.coordinates()) {
      const dc = dcOf.get(node) ?? "";
      if (dc === "") continue;
      const list = byDc.get(dc) ?? [];
      list.push({ Node: node, Coord: coordJson(coord) });
      byDc.set(dc, list);
    }
    const out = [...byDc].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([dc, coords]) => ({
      Datacenter: dc,
      AreaID: "wan",
      Coordinates: coords.sort((a, b) => (a.Node < b.Node ? -1 : 1)),
    }));
    return jsonResponse(out, { pretty: wantsPretty(req) });
  };
}
