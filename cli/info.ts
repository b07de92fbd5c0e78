// `cairn info`, as consul command/info: the agent's `Stats` from
// /v1/agent/self, sections and keys sorted, one "\tkey = value" per line.
import { Agent } from "../core/api/agent.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpClientFlags];

const HELP = `
Usage: cairn info [options]

  Provides debugging information for operators. The agent, raft, gossip
  (serf_lan, serf_wan) and runtime sections depend on whether the agent is a
  client or a server.
`;

export const infoCommand: Command = {
  name: "info",
  synopsis: "Provides debugging information for operators.",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(infoCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Error parsing arguments: Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    let stats: unknown;
    try {
      stats = (await new Agent(apiClientFromFlags(p, io)).self()).Stats;
    } catch (err) {
      io.stderr(`Error querying agent: ${apiErrorText(err)}\n`);
      return 1;
    }
    if (typeof stats !== "object" || stats === null) {
      io.stderr("Error querying agent: agent/self has no Stats\n");
      return 1;
    }
    const lines: string[] = [];
    for (const section of Object.keys(stats).sort()) {
      lines.push(`${section}:`);
      const values = (stats as Record<string, unknown>)[section];
      if (typeof values !== "object" || values === null) continue;
      for (const key of Object.keys(values).sort()) lines.push(`\t${key} = ${String((values as Record<string, unknown>)[key])}`);
    }
    io.stdout(lines.map((l) => `${l}\n`).join(""));
    return 0;
  },
};
