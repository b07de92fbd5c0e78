// `cairn rtt`, as consul command/rtt: estimated round trip time between two
// nodes from their network coordinates (LAN, or -wan with `node.dc` names).
import { Agent } from "../core/api/agent.ts";
import { coordinateDistanceSeconds, Coordinates, type CoordinateEntry } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "wan", kind: "bool", usage: "Use WAN coordinates instead of LAN coordinates." },
];

const HELP = `
Usage: cairn rtt [options] node1 [node2]

  Estimates the round trip time between two nodes using their network
  coordinates. If only one node is given, the agent's own node is used
  as the second.

  With -wan, nodes are given as "node.datacenter" and WAN coordinates are
  used.
`;

export const rttCommand: Command = {
  name: "rtt",
  synopsis: "Estimates network round trip time between nodes",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(rttCommand, args, flags, io);
    if (typeof p === "number") return p;
    const nodes = p.positionals;
    if (nodes.length < 1 || nodes.length > 2) {
      io.stderr(`One or two node names must be specified\n${rttCommand.help()}`);
      return 1;
    }
    const wan = bool(p, "wan");
    const client = apiClientFromFlags(p, io);
    let node1 = nodes[0]!;
    let node2 = nodes[1] ?? "";
    try {
      if (node2 === "") {
        const self = await new Agent(client).self();
        const name = String(self.Config?.NodeName ?? "");
        node2 = wan ? `${name}.${String(self.Config?.Datacenter ?? "")}` : name;
      }
      let coords: CoordinateEntry[];
      if (wan) {
        if (!node1.includes(".") || !node2.includes(".")) {
          io.stderr("Both nodes must be given as \"node.datacenter\" with -wan\n");
          return 1;
        }
        coords = (await new Coordinates(client).datacenters()).flatMap((dc) => dc.Coordinates);
      } else {
        coords = await new Coordinates(client).nodes();
      }
      const a = coords.find((c) => c.Node === node1);
      if (!a) {
        io.stderr(`Could not find a coordinate for node "${node1}"\n`);
        return 1;
      }
      const b = coords.find((c) => c.Node === node2);
      if (!b) {
        io.stderr(`Could not find a coordinate for node "${node2}"\n`);
        return 1;
      }
      const ms = coordinateDistanceSeconds(a.Coord, b.Coord) * 1000;
      io.stdout(`Estimated ${node1} <-> ${node2} rtt: ${ms.toFixed(3)} ms (using ${wan ? "WAN" : "LAN"} coordinates)\n`);
      return 0;
    } catch (err) {
      io.stderr(`Error getting coordinates: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
