// `cairn operator autopilot get-config`, as consul command/operator/autopilot/get.
import { OperatorAutopilot } from "../core/api/operator.ts";
import type { AutopilotConfiguration } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpFlags];

const HELP = `
Usage: cairn operator autopilot get-config [options]

  Displays the current Autopilot configuration.
`;

/** The lines Consul prints, one `Key = value` each. */
export function formatAutopilotConfig(c: AutopilotConfiguration): string {
  return [
    `CleanupDeadServers = ${c.CleanupDeadServers}`,
    `LastContactThreshold = ${c.LastContactThreshold}`,
    `MaxTrailingLogs = ${c.MaxTrailingLogs}`,
    `MinQuorum = ${c.MinQuorum}`,
    `ServerStabilizationTime = ${c.ServerStabilizationTime}`,
    `RedundancyZoneTag = ${JSON.stringify(c.RedundancyZoneTag ?? "")}`,
    `DisableUpgradeMigration = ${c.DisableUpgradeMigration === true}`,
    `UpgradeVersionTag = ${JSON.stringify(c.UpgradeVersionTag ?? "")}`,
  ].join("\n");
}

export const operatorAutopilotGetConfig: Command = {
  name: "operator autopilot get-config",
  synopsis: "Display the current Autopilot configuration",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorAutopilotGetConfig, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    let conf: AutopilotConfiguration;
    try {
      conf = await new OperatorAutopilot(apiClientFromFlags(p, io)).getConfiguration({ allowStale: bool(p, "stale") });
    } catch (err) {
      io.stderr(`Error querying Autopilot configuration: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(formatAutopilotConfig(conf) + "\n");
    return 0;
  },
};
