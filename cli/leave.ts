// `cairn leave`, as consul command/leave: graceful leave and shutdown of the agent.
import { AgentMembers } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpClientFlags];

const HELP = `
Usage: cairn leave [options]

  Causes the agent to gracefully leave the cluster and shutdown.
`;

export const leaveCommand: Command = {
  name: "leave",
  synopsis: "Gracefully leaves the cluster and shuts down",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(leaveCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Error parsing arguments: Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    try {
      await new AgentMembers(apiClientFromFlags(p, io)).leave();
    } catch (err) {
      io.stderr(`Error leaving: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout("Graceful leave complete\n");
    return 0;
  },
};
