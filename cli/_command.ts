// Glue shared by the command files: flag parsing that reports like Consul,
// key cleanup, and reading DATA arguments (`-` stdin, `@file`).
import { FlagError, HelpRequested, parseFlags } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";

/** Parsed flags, or the exit code when parsing ended the command (help: 0, bad flag: 1). */
export function parseCommandFlags(cmd: Command, args: readonly string[], specs: readonly FlagSpec[], io: CliIo): ParsedFlags | number {
  try {
    return parseFlags(args, specs);
  } catch (err) {
    if (err instanceof HelpRequested) {
      io.stdout(cmd.help());
      return 0;
    }
    if (err instanceof FlagError) {
      io.stderr(`${err.message}\n${cmd.help()}`);
      return 1;
    }
    throw err;
  }
}

/** Keys cannot start with "/"; users will type "/foo" anyway (Consul strips it too). */
export function stripLeadingSlash(key: string): string {
  return key.startsWith("/") ? key.slice(1) : key;
}

/**
 * A DATA argument as Consul reads it: `@path` is a file, `-` is stdin, any
 * other text (including `-x`) is the data itself.
 */
export async function readDataArg(arg: string, io: CliIo): Promise<Uint8Array> {
  if (arg.startsWith("@")) {
    try {
      return await io.readFile(arg.slice(1));
    } catch (err) {
      throw new Error(`Failed to read file: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (arg === "-") {
    try {
      return await io.stdin();
    } catch (err) {
      throw new Error(`Failed to read stdin: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return new TextEncoder().encode(arg);
}

export function decodeText(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}
