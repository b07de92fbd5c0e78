// What a command gets instead of a process: output sinks, stdin, files and
// environment, so every command runs in a test without spawning anything.
import type { V8Deps } from "./agent_v8.ts";

export interface CliIo {
  stdout(s: string): void;
  stderr(s: string): void;
  stdin(): Promise<Uint8Array>;
  env: Record<string, string | undefined>;
  /** Reads a file for `@file` arguments. */
  readFile(path: string): Promise<Uint8Array>;
  /** Injected in tests (a fake agent); defaults to the global fetch. */
  fetch?: typeof fetch;
  /**
   * The process's own CPU time and V8 flags (cli/agent_v8.ts). Only the real
   * process has them: tests run commands in their own process and keep its
   * settings.
   */
  v8?: Pick<V8Deps, "setV8Flags" | "cpuMicros" | "heapBytes" | "reduceMemory" | "oldGenerationBytes" | "onFullGc">;
}

export interface Command {
  /** Words as typed: "kv get", "operator raft list-peers". */
  name: string;
  synopsis: string;
  /** Full help, printed for `-h`. */
  help(): string;
  /** A command loaded on first use: its module's real command (help() is then only the synopsis). */
  load?(): Promise<Command>;
  /** Exit code: 0 ok, 1 error or bad usage, 2 "ran, nothing matched". */
  run(args: string[], io: CliIo): Promise<number>;
  /** Not listed in the top-level usage. */
  hidden?: boolean;
}
