// `cairn kv export`, as consul command/kv/exp/kv_export.go.
import { encodeBase64, stringifyExact, type Uint64 } from "../core/api/mod.ts";
import { parseCommandFlags, stripLeadingSlash } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpFlags];

const HELP = `
Usage: cairn kv export [options] [PREFIX]

  Retrieves key-value pairs for the given prefix from the key-value store,
  and writes a JSON representation to stdout. This can be used with the
  command "cairn kv import" to move entire trees between clusters.

      $ cairn kv export vault
`;

/** One exported key: Consul's impexp.Entry (value is base64). */
export interface ExportEntry {
  key: string;
  flags: Uint64;
  value: string;
}

export const kvExport: Command = {
  name: "kv export",
  synopsis: "Exports a tree from the KV store as JSON",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(kvExport, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 1) {
      io.stderr(`Too many arguments (expected 1, got ${p.positionals.length})\n`);
      return 1;
    }
    const prefix = stripLeadingSlash(p.positionals[0] ?? "");
    const api = apiClientFromFlags(p, io);
    let entries: ExportEntry[];
    try {
      const { pairs } = await api.kv.list(prefix, { allowStale: bool(p, "stale") });
      entries = pairs.map((pair) => ({ key: pair.Key, flags: pair.Flags, value: encodeBase64(pair.Value ?? new Uint8Array()) }));
    } catch (err) {
      io.stderr(`Error querying agent: ${apiErrorText(err)}\n`);
      return 1;
    }
    // Go's json.MarshalIndent(entries, "", "\t").
    io.stdout(`${stringifyExact(entries, "\t")}\n`);
    return 0;
  },
};
