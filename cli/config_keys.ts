// `cairn config keys`: every key of Consul's agent configuration and what
// cairn does with it (core/config/keys.ts), the table docs/configuration.md
// also shows.
import { keyCounts, keyRows } from "../core/config/mod.ts";
import type { KeyRow, KeyStatus } from "../core/config/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { formatHelp, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { columns, parseFormat, prettyJson } from "./_output.ts";

const statuses: readonly KeyStatus[] = ["implemented", "planned", "ignored"];

const flags: readonly FlagSpec[] = [
  { name: "status", kind: "string", valueName: "implemented|planned|ignored", usage: "Only list keys with this status." },
  { name: "format", kind: "string", valueName: "pretty|json", defaultText: "pretty", usage: "Output format {pretty|json}." },
];

const HELP = `
Usage: cairn config keys [options]

  Lists every key of Consul's agent configuration files and what cairn does
  with it:

    implemented  cairn does what the key says
    planned      accepted; the agent logs one warning at startup: not
                 implemented in cairn yet
    ignored      accepted; the agent logs one warning at startup: no effect
                 in cairn by design (service mesh, Enterprise, HCP, UI metrics)

  A key that is not listed is an error, as in Consul. Service and check
  definition keys are listed under "service." and "check.".

      $ cairn config keys -status=planned
`;

function remark(r: KeyRow): string {
  const parts: string[] = [];
  if (r.note) parts.push(r.note);
  if (r.aliases?.length) parts.push(`also ${r.aliases.join(", ")}`);
  if (r.replacedBy) parts.push(`deprecated by Consul: use ${r.replacedBy}`);
  return parts.join("; ");
}

export const configKeysCommand: Command = {
  name: "config keys",
  synopsis: "Lists the config file keys and what cairn does with each",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(configKeysCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const format = parseFormat(str(p, "format", "pretty"));
    if (!format) {
      io.stderr(`Invalid format "${str(p, "format")}": use "pretty" or "json"\n`);
      return 1;
    }
    const status = str(p, "status");
    if (status !== "" && !statuses.includes(status as KeyStatus)) {
      io.stderr(`Invalid -status "${status}": use implemented, planned or ignored\n`);
      return 1;
    }
    const rows = keyRows();
    const all = [...rows.agent, ...rows.service, ...rows.check].filter((r) => status === "" || r.status === status);
    if (format === "json") {
      io.stdout(`${prettyJson(all.map((r) => ({ Key: r.path, Status: r.status, Note: r.note, ReplacedBy: r.replacedBy ?? "", Aliases: r.aliases ?? [] })))}\n`);
      return 0;
    }
    const c = keyCounts();
    io.stdout(`${columns([["Key", "Status", "Notes"], ...all.map((r) => [r.path, r.status, remark(r)])])}\n`);
    if (status === "") io.stdout(`\n${c.total} keys: ${c.implemented} implemented, ${c.planned} planned, ${c.ignored} ignored\n`);
    return 0;
  },
};
