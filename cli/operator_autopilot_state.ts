// `cairn operator autopilot state`, as consul command/operator/autopilot/state.
import { OperatorAutopilot } from "../core/api/operator.ts";
import type { AutopilotState } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "format", kind: "string", valueName: "string", usage: "Output format {pretty|json}", defaultText: "pretty" },
];

const HELP = `
Usage: cairn operator autopilot state [options]

  Displays the current Autopilot state.
`;

/** Consul's pretty format: the cluster's health, then each server indented. */
export function formatAutopilotState(s: AutopilotState): string {
  const out = [
    `Healthy:                      ${s.Healthy}`,
    `Failure Tolerance:            ${s.FailureTolerance}`,
    `Optimistic Failure Tolerance: ${s.OptimisticFailureTolerance}`,
    `Leader:                       ${s.Leader}`,
    "Voters:",
    ...s.Voters.map((v) => `   ${v}`),
    "",
    "Servers:",
  ];
  for (const id of Object.keys(s.Servers).sort()) {
    const srv = s.Servers[id]!;
    out.push(
      `   ${srv.ID}`,
      `      Name:            ${srv.Name}`,
      `      Address:         ${srv.Address}`,
      `      Version:         ${srv.Version}`,
      `      Status:          ${srv.Status}`,
      `      Node Status:     ${srv.NodeStatus}`,
      `      Healthy:         ${srv.Healthy}`,
      `      Last Contact:    ${srv.LastContact}`,
      `      Last Term:       ${srv.LastTerm}`,
      `      Last Index:      ${srv.LastIndex}`,
      `      Stable Since:    ${srv.StableSince}`,
      "",
    );
  }
  return out.join("\n");
}

export const operatorAutopilotState: Command = {
  name: "operator autopilot state",
  synopsis: "Display the current Autopilot state",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorAutopilotState, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const format = str(p, "format", "pretty");
    if (format !== "pretty" && format !== "json") {
      io.stderr(`Error: unknown format "${format}" (expected pretty or json)\n`);
      return 1;
    }
    let state: AutopilotState;
    try {
      state = await new OperatorAutopilot(apiClientFromFlags(p, io)).state({ allowStale: bool(p, "stale") });
    } catch (err) {
      io.stderr(`Error querying Autopilot state: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(format === "json" ? `${JSON.stringify(state, null, 4)}\n` : formatAutopilotState(state) + "\n");
    return 0;
  },
};
