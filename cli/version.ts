// `cairn version`, as consul command/version/version.go.
import { protocolVersion, revision, version } from "../core/version.ts";
import { parseCommandFlags } from "./_command.ts";
import { formatHelp, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { parseFormat } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  { name: "format", kind: "string", valueName: "pretty|json", defaultText: "pretty", usage: "Output format {pretty|json}." },
];

const HELP = `
Usage: cairn version [options]

  Prints the version of cairn and the protocol versions it understands for
  speaking to other agents.
`;

/** Go's zero time.Time, what Consul prints when the build date is unknown. */
const UNKNOWN_BUILD_DATE = "0001-01-01T00:00:00Z";

export const versionCommand: Command = {
  name: "version",
  synopsis: "Prints the cairn version",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(versionCommand, args, flags, io);
    if (typeof p === "number") return p;
    const format = parseFormat(str(p, "format", "pretty"));
    if (!format) {
      io.stderr(`Invalid format "${str(p, "format")}": use "pretty" or "json"\n`);
      return 1;
    }
    const rpc = { Default: protocolVersion, Min: 2, Max: 3 };
    if (format === "json") {
      const info = { Version: version, Revision: revision, Prerelease: "", FIPS: "", BuildDate: UNKNOWN_BUILD_DATE, RPC: rpc };
      io.stdout(`${JSON.stringify(info, null, "    ")}\n`);
      return 0;
    }
    let out = `cairn v${version}\n`;
    if (revision) out += `Revision ${revision}\n`;
    out += `Protocol ${rpc.Default} spoken by default, understands ${rpc.Min} to ${rpc.Max} (agent will automatically use protocol >2 when speaking to compatible agents)\n`;
    io.stdout(out);
    return 0;
  },
};
