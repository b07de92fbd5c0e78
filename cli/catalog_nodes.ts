// `cairn catalog nodes`, as consul command/catalog/list/nodes.
import type { CatalogNode } from "../core/api/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { mapToKv, parseNodeMetaFlags } from "./_catalog.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, columns } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "detailed", kind: "bool", usage: "Output detailed information about the nodes including their addresses and metadata." },
  {
    name: "filter",
    kind: "string",
    valueName: "expression",
    usage: "Filter to use with the request",
  },
  {
    name: "near",
    kind: "string",
    valueName: "node name",
    usage: "Node name to sort the node list in ascending order based on estimated round-trip time from that node. Passing \"_agent\" will use this agent's node for sorting.",
  },
  {
    name: "node-meta",
    kind: "list",
    valueName: "key=value",
    usage: "Metadata to filter nodes with the given `key=value` pairs. This flag may be specified multiple times to filter on multiple sources of metadata.",
  },
  { name: "service", kind: "string", valueName: "id or name", usage: "Service id or name to filter nodes. Only nodes which are providing the given service will be returned." },
];

const HELP = `
Usage: cairn catalog nodes [options]

  Retrieves the list nodes registered in a given datacenter. By default, the
  datacenter of the local agent is queried.

  To retrieve the list of nodes:

      $ cairn catalog nodes

  To print detailed information including full node IDs, tagged addresses, and
  metadata information:

      $ cairn catalog nodes -detailed

  To list nodes which are running a particular service:

      $ cairn catalog nodes -service=web

  To filter by node metadata:

      $ cairn catalog nodes -node-meta="foo=bar"

  To sort nodes by estimated round-trip time from node-web:

      $ cairn catalog nodes -near=node-web

  For a full list of options and examples, please see the Consul documentation.
`;

/** Consul's printNodes table. */
export function nodesTable(nodes: readonly CatalogNode[], detailed: boolean): string {
  const header = detailed ? ["Node", "ID", "Address", "DC", "TaggedAddresses", "Meta"] : ["Node", "ID", "Address", "DC"];
  const rows = nodes.map((n) => {
    if (detailed) return [n.Node, n.ID, n.Address, n.Datacenter, mapToKv(n.TaggedAddresses), mapToKv(n.Meta)];
    return [n.Node, n.ID.length > 8 ? n.ID.slice(0, 8) : n.ID, n.Address, n.Datacenter];
  });
  return columns([header, ...rows]);
}

export const catalogNodes: Command = {
  name: "catalog nodes",
  synopsis: "Lists all nodes in the given datacenter",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(catalogNodes, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const nodeMeta = parseNodeMetaFlags(list(p, "node-meta"));
    if (typeof nodeMeta === "string") {
      io.stderr(`${nodeMeta}\n`);
      return 1;
    }
    const near = str(p, "near");
    const api = apiClientFromFlags(p, io);
    const q = { allowStale: bool(p, "stale"), nodeMeta, filter: str(p, "filter") || undefined, ...(near !== "" ? { near } : {}) };
    try {
      let nodes: CatalogNode[];
      const service = str(p, "service");
      if (service !== "") {
        const { services } = await api.catalog.service(service, q);
        nodes = services.map((s) => ({
          ID: s.ID, Node: s.Node, Address: s.Address, Datacenter: s.Datacenter, TaggedAddresses: s.TaggedAddresses,
          Meta: s.NodeMeta, CreateIndex: s.CreateIndex, ModifyIndex: s.ModifyIndex,
        }));
      } else {
        nodes = (await api.catalog.nodes(q)).nodes;
      }
      if (nodes.length === 0) {
        io.stderr("No nodes match the given query - try expanding your search.\n");
        return 0;
      }
      io.stdout(`${nodesTable(nodes, bool(p, "detailed"))}\n`);
      return 0;
    } catch (err) {
      io.stderr(`Error listing nodes: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
