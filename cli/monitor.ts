// `cairn monitor`, as consul command/monitor: follow the agent's log, at a
// level of its own (it may be below the agent's), until interrupted (exit 0)
// or until the agent goes away (exit 1).
import { parseLogLevel } from "../core/log/mod.ts";
import { onShutdownSignal } from "./_child.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "log-level", kind: "string", valueName: "string", defaultText: "info", usage: 'Log level of the agent. Available levels are "trace", "debug", "info", "warn", and "error".' },
  { name: "log-json", kind: "bool", usage: "Output logs in JSON format." },
];

const HELP = `
Usage: cairn monitor [options]

  Shows recent log messages of a Cairn agent, and attaches to the agent,
  outputting log messages as they occur in real time. The monitor lets you
  listen for log levels that may be filtered out of the Cairn agent. For
  example your agent may only be logging at INFO level, but with the monitor
  you can see the DEBUG level logs.
`;

const remoteEnded = "Remote side ended the monitor! This usually means that the\nremote side has exited or crashed.\n";

export const monitorCommand: Command = {
  name: "monitor",
  synopsis: "Stream logs from a Cairn agent",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(monitorCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Error parsing arguments: Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const level = str(p, "log-level", "info");
    if (!parseLogLevel(level)) {
      io.stderr(`Error starting monitor: Unknown log level: ${level}\n`);
      return 1;
    }
    const shutdown = onShutdownSignal();
    try {
      let body: AsyncIterable<Uint8Array>;
      try {
        body = await apiClientFromFlags(p, io).stream({
          method: "GET",
          path: "/v1/agent/monitor",
          params: { loglevel: level, logjson: bool(p, "log-json") },
          query: { signal: shutdown.signal },
        });
      } catch (err) {
        io.stderr(`Error starting monitor: ${apiErrorText(err)}\n`);
        return 1;
      }
      const decoder = new TextDecoder();
      try {
        for await (const piece of body) io.stdout(decoder.decode(piece, { stream: true }));
      } catch {
        // Interrupted (below) or the connection broke (the agent went away).
      }
      if (shutdown.signal.aborted) return 0;
      io.stderr(remoteEnded);
      return 1;
    } finally {
      shutdown.cancel();
    }
  },
};
