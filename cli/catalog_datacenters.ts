// `cairn catalog datacenters`, as consul command/catalog/list/dc.
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpClientFlags];

const HELP = `
Usage: cairn catalog datacenters [options]

  Retrieves the list of all known datacenters. This datacenters are sorted in
  ascending order based on the estimated median round trip time from the servers
  in this datacenter to the servers in the other datacenters.

  List all datacenters:

      $ cairn catalog datacenters

  For a full list of options and examples, please see the Consul documentation.
`;

export const catalogDatacenters: Command = {
  name: "catalog datacenters",
  synopsis: "Lists all known datacenters",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(catalogDatacenters, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    try {
      const dcs = await apiClientFromFlags(p, io).catalog.datacenters();
      if (dcs.length === 0) {
        io.stderr("No datacenters found\n");
        return 1;
      }
      for (const dc of dcs) io.stdout(`${dc}\n`);
      return 0;
    } catch (err) {
      io.stderr(`Error listing datacenters: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
