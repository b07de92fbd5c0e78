// `cairn kv get`, as consul command/kv/get/kv_get.go.
import { encodeBase64 } from "../core/api/mod.ts";
import type { KVPair } from "../core/api/mod.ts";
import { decodeText, parseCommandFlags, stripLeadingSlash } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, keyValueBlock } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "base64", kind: "bool", usage: "Base64 encode the value." },
  {
    name: "detailed",
    kind: "bool",
    usage: "Provide additional metadata about the key in addition to the value such as the ModifyIndex and any flags that may have been set on the key.",
  },
  {
    name: "keys",
    kind: "bool",
    usage: "List keys which start with the given prefix, but not their values. This is especially useful if you only need the key names themselves. This option is commonly combined with the -separator option.",
  },
  { name: "recurse", kind: "bool", usage: "Recursively look at all keys prefixed with the given path." },
  {
    name: "separator",
    kind: "string",
    valueName: "string",
    defaultText: '"/"',
    usage: "String to use as a separator between keys. Only used with -keys.",
  },
];

const HELP = `
Usage: cairn kv get [options] [KEY_OR_PREFIX]

  Retrieves the value from the key-value store at the given key name. If no
  key exists with that name, an error is returned. If a key exists with that
  name but has no data, nothing is returned. A key name or prefix is required.

  To retrieve the value for the key named "foo":

      $ cairn kv get foo

  To view detailed information about the key, specify the "-detailed" flag:

      $ cairn kv get -detailed foo

  To treat the path as a prefix and list all keys which start with the given
  prefix, specify the "-recurse" flag:

      $ cairn kv get -recurse foo

  To list only the key names which start with the given prefix, specify the
  "-keys" flag (add -separator="" to list every key, not just one level):

      $ cairn kv get -keys foo
`;

function valueText(pair: KVPair, base64: boolean): string {
  const bytes = pair.Value ?? new Uint8Array();
  return base64 ? encodeBase64(bytes) : decodeText(bytes);
}

/** Consul's prettyKVPair block. */
export function detailedPair(pair: KVPair, base64: boolean): string {
  return keyValueBlock([
    ["CreateIndex", String(pair.CreateIndex)],
    ["Flags", String(pair.Flags)],
    ["Key", pair.Key],
    ["LockIndex", String(pair.LockIndex)],
    ["ModifyIndex", String(pair.ModifyIndex)],
    ["Session", pair.Session || "-"],
    ["Value", valueText(pair, base64)],
  ]);
}

export const kvGet: Command = {
  name: "kv get",
  synopsis: "Retrieves or lists data from the KV store",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(kvGet, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 1) {
      io.stderr(`Too many arguments (expected 1, got ${p.positionals.length})\n`);
      return 1;
    }
    const key = stripLeadingSlash(p.positionals[0] ?? "");
    const recurse = bool(p, "recurse");
    const keysOnly = bool(p, "keys");
    const base64 = bool(p, "base64");
    const detailed = bool(p, "detailed");
    if (key === "" && !recurse && !keysOnly) {
      io.stderr("Error! Missing KEY argument\n");
      return 1;
    }
    const api = apiClientFromFlags(p, io);
    const q = { allowStale: bool(p, "stale") };
    try {
      if (keysOnly) {
        const separator = p.values.has("separator") ? str(p, "separator") : "/";
        const { keys } = await api.kv.keys(key, separator, q);
        for (const k of keys) io.stdout(`${k}\n`);
        return 0;
      }
      if (recurse) {
        const { pairs } = await api.kv.list(key, q);
        pairs.forEach((pair, i) => {
          if (detailed) io.stdout(`${detailedPair(pair, base64)}\n${i < pairs.length - 1 ? "\n" : ""}`);
          else io.stdout(`${pair.Key}:${valueText(pair, base64)}\n`);
        });
        return 0;
      }
      const { pair } = await api.kv.get(key, q);
      if (!pair) {
        io.stderr(`Error! No key exists at: ${key}\n`);
        return 1;
      }
      io.stdout(detailed ? `${detailedPair(pair, base64)}\n` : `${valueText(pair, base64)}\n`);
      return 0;
    } catch (err) {
      io.stderr(`Error querying agent: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
