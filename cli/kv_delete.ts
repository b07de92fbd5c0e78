// `cairn kv delete`, as consul command/kv/del/kv_delete.go.
import { parseCommandFlags, stripLeadingSlash } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, httpServerFlags, num } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags.filter((f) => f.name !== "stale"),
  {
    name: "cas",
    kind: "bool",
    usage: "Perform a Check-And-Set operation. Specifying this value also requires the -modify-index flag to be set.",
  },
  {
    name: "modify-index",
    kind: "uint",
    valueName: "int",
    usage: "Unsigned integer representing the ModifyIndex of the key. This is used in combination with the -cas flag.",
  },
  {
    name: "recurse",
    kind: "bool",
    usage: "Recursively delete all keys with the path. The default value is false.",
  },
];

const HELP = `
Usage: cairn kv delete [options] KEY_OR_PREFIX

  Removes the value from the key-value store at the given path. If no key
  exists at the path, no action is taken.

  To delete the value for the key named "foo" in the key-value store:

      $ cairn kv delete foo

  To delete all keys which start with "foo", specify the -recurse option:

      $ cairn kv delete -recurse foo

  This will delete the keys named "foo", "food", and "foo/bar/zip" if they
  existed.
`;

export const kvDelete: Command = {
  name: "kv delete",
  synopsis: "Removes data from the KV store",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(kvDelete, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 1) {
      io.stderr(`Too many arguments (expected 1, got ${p.positionals.length})\n`);
      return 1;
    }
    const key = stripLeadingSlash(p.positionals[0] ?? "");
    const recurse = bool(p, "recurse");
    const cas = bool(p, "cas");
    const modifyIndex = num(p, "modify-index");
    if (key === "" && !recurse) {
      io.stderr("Error! Missing KEY argument\n");
      return 1;
    }
    if (cas && recurse) {
      io.stderr("Cannot purge recursively using CAS\n");
      return 1;
    }
    if (cas && modifyIndex === undefined) {
      io.stderr("Must specify -modify-index with -cas!\n");
      return 1;
    }
    if (!cas && modifyIndex !== undefined) {
      io.stderr("Cannot specify -modify-index without -cas!\n");
      return 1;
    }
    const api = apiClientFromFlags(p, io);
    if (cas) {
      try {
        const ok = await api.kv.delete(key, { cas: modifyIndex });
        if (!ok) {
          io.stderr(`Error! Did not delete key ${key}: CAS failed\n`);
          return 1;
        }
      } catch (err) {
        io.stderr(`Error! Did not delete key ${key}: ${apiErrorText(err)}\n`);
        return 1;
      }
      io.stdout(`Success! Deleted key: ${key}\n`);
      return 0;
    }
    if (recurse) {
      try {
        await api.kv.delete(key, { recurse: true });
      } catch (err) {
        io.stderr(`Error! Did not delete prefix ${key}: ${apiErrorText(err)}\n`);
        return 1;
      }
      io.stdout(`Success! Deleted keys with prefix: ${key}\n`);
      return 0;
    }
    try {
      await api.kv.delete(key);
    } catch (err) {
      io.stderr(`Error deleting key ${key}: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`Success! Deleted key: ${key}\n`);
    return 0;
  },
};
