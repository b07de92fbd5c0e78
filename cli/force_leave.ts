// `cairn force-leave`, as consul command/forceleave: mark a failed member left (-prune: forget it).
import { AgentMembers } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "prune", kind: "bool", usage: "Remove agent forcibly from list of members" },
  { name: "wan", kind: "bool", usage: "Exclusively leave the agent from the WAN serf pool." },
];

const HELP = `
Usage: cairn force-leave [options] name

  Forces a member of a Cairn cluster to enter the "left" state. Note
  that if the member is still actually alive, it will eventually rejoin
  the cluster. This command is most useful for cleaning out "failed" nodes
  that are never coming back. If you do not force leave a failed node,
  it will be removed after 72 hours.
`;

export const forceLeaveCommand: Command = {
  name: "force-leave",
  synopsis: "Forces a member of the cluster to enter the \"left\" state",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(forceLeaveCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length !== 1) {
      io.stderr(`A single node name must be specified to force leave.\n${forceLeaveCommand.help()}`);
      return 1;
    }
    try {
      await new AgentMembers(apiClientFromFlags(p, io)).forceLeave(p.positionals[0]!, { prune: bool(p, "prune"), wan: bool(p, "wan") });
    } catch (err) {
      io.stderr(`Error force leaving: ${apiErrorText(err)}\n`);
      return 1;
    }
    return 0;
  },
};
