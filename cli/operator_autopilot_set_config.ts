// `cairn operator autopilot set-config`, as consul command/operator/autopilot/set:
// read the configuration, change what the flags name, write it back with CAS.
import { formatDuration } from "../core/config/duration.ts";
import { OperatorAutopilot } from "../core/api/operator.ts";
import type { AutopilotConfiguration } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, httpServerFlags, num } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags.filter((f) => f.name !== "stale"),
  { name: "cleanup-dead-servers", kind: "bool", valueName: "true|false", usage: "Controls whether Cairn will automatically remove dead servers when new ones are successfully added. Must be one of `true|false`." },
  { name: "max-trailing-logs", kind: "uint", valueName: "value", usage: "Controls the maximum number of log entries that a server can trail the leader by before being considered unhealthy." },
  { name: "min-quorum", kind: "uint", valueName: "value", usage: "Sets the minimum number of servers required in a cluster before autopilot can prune dead servers." },
  { name: "last-contact-threshold", kind: "duration", valueName: "value", usage: "Controls the maximum amount of time a server can go without contact from the leader before being considered unhealthy. Must be a duration value such as `200ms`." },
  { name: "server-stabilization-time", kind: "duration", valueName: "value", usage: "Controls the minimum amount of time a server must be stable in the 'healthy' state before being added to the cluster. Only takes effect if all servers are running Raft protocol version 3 or higher. Must be a duration value such as `10s`." },
];

const HELP = `
Usage: cairn operator autopilot set-config [options]

  Modifies the current Autopilot configuration.
`;

export const operatorAutopilotSetConfig: Command = {
  name: "operator autopilot set-config",
  synopsis: "Modify the current Autopilot configuration",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorAutopilotSetConfig, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const autopilot = new OperatorAutopilot(apiClientFromFlags(p, io));
    let conf: AutopilotConfiguration;
    try {
      conf = await autopilot.getConfiguration();
    } catch (err) {
      io.stderr(`Error querying Autopilot configuration: ${apiErrorText(err)}\n`);
      return 1;
    }
    const next = { ...conf };
    if (p.values.has("cleanup-dead-servers")) next.CleanupDeadServers = p.values.get("cleanup-dead-servers") === true;
    if (p.values.has("max-trailing-logs")) next.MaxTrailingLogs = num(p, "max-trailing-logs")!;
    if (p.values.has("min-quorum")) next.MinQuorum = num(p, "min-quorum")!;
    if (p.values.has("last-contact-threshold")) next.LastContactThreshold = formatDuration(num(p, "last-contact-threshold")!);
    if (p.values.has("server-stabilization-time")) next.ServerStabilizationTime = formatDuration(num(p, "server-stabilization-time")!);
    let ok: boolean;
    try {
      ok = await autopilot.casConfiguration(next);
    } catch (err) {
      io.stderr(`Error setting Autopilot configuration: ${apiErrorText(err)}\n`);
      return 1;
    }
    if (!ok) {
      io.stdout("Configuration could not be atomically updated, please try again\n");
      return 1;
    }
    io.stdout("Configuration updated!\n");
    return 0;
  },
};
