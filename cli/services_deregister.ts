// `cairn services deregister`, as consul command/services/deregister.
import { AgentServices } from "../core/api/agent_services.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, httpServerFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";
import { fieldOf, servicesFromFiles } from "./services_files.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags,
  { name: "id", kind: "string", usage: "ID to delete. This must not be set if arguments are given." },
];

const HELP = `
Usage: cairn services deregister [options] [FILE...]

  Deregister one or more services that were previously registered with
  the local agent.

      $ cairn services deregister web.json db.json

  The -id flag may be used to deregister a single service by ID:

      $ cairn services deregister -id=web

  Services are deregistered from the local agent catalog. This command must
  be run against the same agent where the service was registered.
`;

export const servicesDeregister: Command = {
  name: "services deregister",
  synopsis: "Deregister services with the local agent",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(servicesDeregister, args, flags, io);
    if (typeof p === "number") return p;
    const files = p.positionals;
    const flagId = str(p, "id");
    if (files.length === 0 && flagId === "") {
      io.stderr("Service deregistration requires at least one argument or -id.\n");
      return 1;
    }
    if (files.length > 0 && flagId !== "") {
      io.stderr("Service deregistration requires arguments or -id, not both.\n");
      return 1;
    }
    let ids: string[] = [flagId];
    if (files.length > 0) {
      try {
        ids = (await servicesFromFiles(files, io)).map((s) => String(fieldOf(s, "ID") || fieldOf(s, "Name") || ""));
      } catch (err) {
        io.stderr(`Error: ${apiErrorText(err)}\n`);
        return 1;
      }
    }
    const agent = new AgentServices(apiClientFromFlags(p, io));
    for (const id of ids) {
      if (id === "") continue;
      try {
        await agent.serviceDeregister(id);
      } catch (err) {
        io.stderr(`Error deregistering service "${id}": ${apiErrorText(err)}\n`);
        return 1;
      }
      io.stdout(`Deregistered service: ${id}\n`);
    }
    return 0;
  },
};
