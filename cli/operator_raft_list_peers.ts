// `cairn operator raft list-peers`, as consul command/operator/raft/listpeers.
import { Operator } from "../core/api/operator.ts";
import type { RaftConfiguration } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, columns } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpFlags];

const HELP = `
Usage: cairn operator raft list-peers [options]

  Displays the current Raft peer configuration.
`;

/** The table Consul prints: Node, ID, Address, State, Voter, RaftProtocol, Commit Index, Trails Leader By. */
export function formatPeers(config: RaftConfiguration): string {
  const leader = config.Servers.find((s) => s.Leader);
  const rows: string[][] = [["Node", "ID", "Address", "State", "Voter", "RaftProtocol", "Commit Index", "Trails Leader By"]];
  for (const s of config.Servers) {
    const trails = s.Leader || !leader ? "-" : `${Math.max(0, leader.LastIndex - s.LastIndex)} commits`;
    rows.push([
      s.Node,
      s.ID,
      s.Address,
      s.Leader ? "leader" : "follower",
      String(s.Voter),
      s.ProtocolVersion || "<=1",
      String(s.LastIndex),
      trails,
    ]);
  }
  return columns(rows);
}

export const operatorRaftListPeers: Command = {
  name: "operator raft list-peers",
  synopsis: "Display the current Raft peer configuration",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorRaftListPeers, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const api = apiClientFromFlags(p, io);
    let config: RaftConfiguration;
    try {
      config = await new Operator(api).raftGetConfiguration({ allowStale: bool(p, "stale") });
    } catch (err) {
      io.stderr(`Error getting peers: Failed to retrieve raft configuration: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(formatPeers(config) + "\n");
    return 0;
  },
};
