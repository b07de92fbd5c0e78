// `cairn catalog services`, as consul command/catalog/list/services.
import { parseCommandFlags } from "./_command.ts";
import { parseNodeMetaFlags } from "./_catalog.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, columns } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "node", kind: "string", valueName: "node name", usage: "Node `id or name` for which to list services." },
  {
    name: "node-meta",
    kind: "list",
    valueName: "key=value",
    usage: "Metadata to filter nodes with the given `key=value` pairs. If specified, only services running on nodes matching the given metadata will be returned. This flag may be specified multiple times to filter on multiple sources of metadata.",
  },
  { name: "tags", kind: "bool", usage: "Display each service's tags as a comma-separated list beside each service entry." },
];

const HELP = `
Usage: cairn catalog services [options]

  Retrieves the list services registered in a given datacenter. By default, the
  datacenter of the local agent is queried.

  To retrieve the list of services:

      $ cairn catalog services

  To include the services' tags in the output:

      $ cairn catalog services -tags

  To list services which run on a particular node:

      $ cairn catalog services -node=web

  To filter services on node metadata:

      $ cairn catalog services -node-meta="foo=bar"

  For a full list of options and examples, please see the Consul documentation.
`;

export const catalogServices: Command = {
  name: "catalog services",
  synopsis: "Lists all registered services in a datacenter",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(catalogServices, args, flags, io);
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
    const api = apiClientFromFlags(p, io);
    const q = { allowStale: bool(p, "stale"), nodeMeta };
    let services: Record<string, string[]>;
    try {
      const node = str(p, "node");
      if (node !== "") {
        const { node: ns } = await api.catalog.node(node, q);
        services = {};
        for (const s of Object.values(ns?.Services ?? {})) {
          const tags = new Set([...(services[s.Service] ?? []), ...(s.Tags ?? [])]);
          services[s.Service] = [...tags];
        }
      } else {
        services = (await api.catalog.services(q)).services;
      }
    } catch (err) {
      io.stderr(`Error listing services: ${apiErrorText(err)}\n`);
      return 1;
    }
    const names = Object.keys(services).sort();
    if (names.length === 0) {
      io.stderr("No services match the given query - try expanding your search.\n");
      return 0;
    }
    if (bool(p, "tags")) {
      io.stdout(`${columns(names.map((n) => [n, [...(services[n] ?? [])].sort().join(",")]))}\n`);
    } else {
      for (const n of names) io.stdout(`${n}\n`);
    }
    return 0;
  },
};
