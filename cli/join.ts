// `cairn join`, as consul command/join: ask the agent to join each address.
import { AgentMembers } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "wan", kind: "bool", usage: "Joins a server to another server in the WAN pool." },
];

const HELP = `
Usage: cairn join [options] address ...

  Tells a running agent (with "cairn agent") to join the cluster
  by specifying at least one existing member.
`;

export const joinCommand: Command = {
  name: "join",
  synopsis: "Tell agent to join cluster",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(joinCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length === 0) {
      io.stderr(`At least one address to join must be specified.\n${joinCommand.help()}`);
      return 1;
    }
    const api = new AgentMembers(apiClientFromFlags(p, io));
    let joins = 0;
    for (const addr of p.positionals) {
      try {
        await api.join(addr, { wan: bool(p, "wan") });
        joins++;
      } catch (err) {
        io.stderr(`Error joining address '${addr}': ${apiErrorText(err)}\n`);
      }
    }
    if (joins === 0) {
      io.stderr("Failed to join any nodes.\n");
      return 1;
    }
    io.stdout(`Successfully joined cluster by contacting ${joins} nodes.\n`);
    return 0;
  },
};
