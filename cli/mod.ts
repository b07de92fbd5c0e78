export { agentCommand, agentConfigFromArgs } from "./agent.ts";
export { apiClientFromFlags, FlagError, formatHelp, HelpRequested, httpClientFlags, httpFlags, httpServerFlags, normalizeArgs, parseFlags } from "./_flags.ts";
export type { FlagKind, FlagSpec, ParsedFlags } from "./_flags.ts";
export type { CliIo, Command } from "./_io.ts";
export { commands, findCommand, processIo, runCli, usage } from "./run.ts";
