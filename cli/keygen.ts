// `cairn keygen`, as consul command/keygen: 32 random bytes, base64.
import { parseCommandFlags } from "./_command.ts";
import { formatHelp } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { encodeBase64 } from "../core/api/base64.ts";

const HELP = `
Usage: cairn keygen

  Generates a new encryption key that can be used to configure the
  agent to encrypt traffic. The output of this command is already
  in the proper format that the agent expects.
`;

export const keygenCommand: Command = {
  name: "keygen",
  synopsis: "Generates a new encryption key",
  help: () => formatHelp(HELP, []),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(keygenCommand, args, [], io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const key = new Uint8Array(32);
    globalThis.crypto.getRandomValues(key);
    io.stdout(`${encodeBase64(key)}\n`);
    return 0;
  },
};
