// `cairn reload`, as consul command/reload: ask the agent to re-read its
// configuration (service and check definitions).
import { AgentServices } from "../core/api/agent_services.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpClientFlags];

const HELP = `
Usage: cairn reload

  Causes the agent to reload configurations. This can be used instead
  of sending the SIGHUP signal to the agent.
`;

export const reloadCommand: Command = {
  name: "reload",
  synopsis: "Triggers the agent to reload configuration files",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(reloadCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    try {
      await new AgentServices(apiClientFromFlags(p, io)).reload();
    } catch (err) {
      io.stderr(`Error reloading: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout("Configuration reload triggered\n");
    return 0;
  },
};
