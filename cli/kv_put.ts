// `cairn kv put`, as consul command/kv/put/kv_put.go.
import { decodeBase64 } from "../core/api/mod.ts";
import { decodeText, parseCommandFlags, readDataArg, stripLeadingSlash } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, httpServerFlags, num, str, uint64 } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags.filter((f) => f.name !== "stale"),
  {
    name: "acquire",
    kind: "bool",
    usage: "Obtain a lock on the key. If the key does not exist, this operation will create the key and obtain the lock. The session must already exist and be specified via -session.",
  },
  {
    name: "base64",
    kind: "bool",
    usage: "Treat the data as base 64 encoded.",
  },
  {
    name: "cas",
    kind: "bool",
    usage: "Perform a Check-And-Set operation. Specifying this value also requires the -modify-index flag to be set. With -modify-index=0 the key is written only if it does not exist yet.",
  },
  {
    name: "flags",
    kind: "uint64",
    valueName: "int",
    defaultText: "0",
    usage: "Unsigned integer value to assign to this key-value pair.",
  },
  {
    name: "modify-index",
    kind: "uint",
    valueName: "int",
    usage: "Unsigned integer representing the ModifyIndex of the key. This is used in combination with the -cas flag.",
  },
  {
    name: "release",
    kind: "bool",
    usage: "Forfeit the lock on the key at the given path. This requires the -session flag to be set. The key must be held by the session in order to be unlocked.",
  },
  {
    name: "session",
    kind: "string",
    valueName: "string",
    usage: "User-defined identifer for this session as a string. This is commonly used with the -acquire and -release operations to build robust locking, but it can be set on any key.",
  },
];

const HELP = `
Usage: cairn kv put [options] KEY [DATA]

  Writes the data to the given path in the key-value store. The data can be of
  any type.

      $ cairn kv put config/redis/maxconns 5

  The data can also be consumed from a file on disk by prefixing with the "@"
  symbol. For example:

      $ cairn kv put config/program/license @license.lic

  Or it can be read from stdin using the "-" symbol:

      $ echo "abcd1234" | cairn kv put config/program/license -

  The DATA argument itself is optional. If omitted, this will create a key
  with no data.

      $ cairn kv put webapp/beta/active

  If the -base64 flag is specified, the data will be treated as base 64
  encoded.

  To perform a Check-And-Set operation, specify the -cas flag with the
  appropriate -modify-index flag corresponding to the key you want to perform
  the CAS operation on:

      $ cairn kv put -cas -modify-index=844 config/redis/maxconns 5
`;

export const kvPut: Command = {
  name: "kv put",
  synopsis: "Sets or updates data in the KV store",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(kvPut, args, flags, io);
    if (typeof p === "number") return p;
    const pos = p.positionals;
    if (pos.length === 0) {
      io.stderr("Error! Missing KEY argument\n");
      return 1;
    }
    if (pos.length > 2) {
      io.stderr(`Error! Too many arguments (expected 1 or 2, got ${pos.length})\n`);
      return 1;
    }
    const key = stripLeadingSlash(pos[0]!);
    if (key === "") {
      io.stderr("Error! Missing KEY argument\n");
      return 1;
    }
    let data: Uint8Array;
    try {
      data = pos[1] ? await readDataArg(pos[1], io) : new Uint8Array();
    } catch (err) {
      io.stderr(`Error! ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    if (bool(p, "base64")) {
      const decoded = decodeBase64(decodeText(data));
      if (!decoded) {
        io.stderr("Error! Cannot base 64 decode data: illegal base64 data\n");
        return 1;
      }
      data = decoded;
    }
    const session = str(p, "session");
    const acquire = bool(p, "acquire");
    const release = bool(p, "release");
    const cas = bool(p, "cas");
    const modifyIndex = num(p, "modify-index");
    if ((acquire || release) && session === "") {
      io.stderr("Error! Missing -session (required with -acquire and -release)\n");
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
    const flagsValue = uint64(p, "flags") ?? 0;
    try {
      if (cas) {
        const ok = await api.kv.put(key, data, { flags: flagsValue, cas: modifyIndex });
        if (!ok) {
          io.stderr(`Error! Did not write to ${key}: CAS failed\n`);
          return 1;
        }
        io.stdout(`Success! Data written to: ${key}\n`);
        return 0;
      }
      if (acquire) {
        const ok = await api.kv.put(key, data, { flags: flagsValue, acquire: session });
        if (!ok) {
          io.stderr("Error! Did not acquire lock\n");
          return 1;
        }
        io.stdout(`Success! Lock acquired on: ${key}\n`);
        return 0;
      }
      if (release) {
        const ok = await api.kv.put(key, data, { flags: flagsValue, release: session });
        if (!ok) {
          io.stderr("Error! Did not release lock\n");
          return 1;
        }
        io.stdout(`Success! Lock released on: ${key}\n`);
        return 0;
      }
      await api.kv.put(key, data, { flags: flagsValue });
      io.stdout(`Success! Data written to: ${key}\n`);
      return 0;
    } catch (err) {
      const what = cas ? `Did not write to ${key}` : "Failed writing data";
      io.stderr(`Error! ${what}: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
