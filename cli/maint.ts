// `cairn maint`, as consul command/maint: show, enable or disable node and
// service maintenance mode.
import { AgentServices } from "../core/api/agent_services.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, httpServerFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags,
  { name: "enable", kind: "bool", usage: "Enable maintenance mode." },
  { name: "disable", kind: "bool", usage: "Disable maintenance mode." },
  { name: "reason", kind: "string", usage: "Text describing the maintenance reason." },
  { name: "service", kind: "string", usage: "Control maintenance mode for a specific service ID." },
];

const HELP = `
Usage: cairn maint [options]

  Places a node or service into maintenance mode. During maintenance mode,
  the node or service will be excluded from all queries through the DNS
  or API interfaces, effectively taking it out of the pool of available
  nodes. This is done by registering an additional critical health check.

  When enabling maintenance mode for a node or service, you may optionally
  specify a reason string. This string will appear in the "Notes" field
  of the critical health check which is registered against the node or
  service. If no reason is provided, a default value will be used.

  Maintenance mode is persistent, and will be restored in the event of an
  agent restart. It is therefore required to disable maintenance mode on
  a given node or service before it will be placed back into the pool.

  By default, we operate on the node as a whole. By specifying the
  "-service" argument, this behavior can be changed to enable or disable
  only a specific service.

  If no arguments are given, the agent's maintenance status will be shown.
  This will return blank if nothing is currently under maintenance.
`;

export const maintCommand: Command = {
  name: "maint",
  synopsis: "Controls node or service maintenance mode",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(maintCommand, args, flags, io);
    if (typeof p === "number") return p;
    const enable = bool(p, "enable");
    const disable = bool(p, "disable");
    const reason = str(p, "reason");
    const serviceId = str(p, "service");
    if (enable && disable) {
      io.stderr("Only one of -enable or -disable may be provided\n");
      return 1;
    }
    if (!enable && reason !== "") {
      io.stderr("Reason may only be provided with -enable\n");
      return 1;
    }
    if (!enable && !disable && serviceId !== "") {
      io.stderr("Service requires either -enable or -disable\n");
      return 1;
    }
    const api = apiClientFromFlags(p, io);
    const agent = new AgentServices(api);
    if (!enable && !disable) {
      let nodeName: string;
      let checks: Awaited<ReturnType<AgentServices["checks"]>>;
      try {
        const self = await api.agent.self();
        nodeName = String(self.Config?.NodeName ?? "");
        checks = await agent.checks();
      } catch (err) {
        io.stderr(`Error getting checks: ${apiErrorText(err)}\n`);
        return 1;
      }
      for (const c of Object.values(checks).sort((a, b) => (a.CheckID < b.CheckID ? -1 : 1))) {
        if (c.CheckID === "_node_maintenance") {
          io.stdout(`Node:\n  Name:   ${nodeName}\n  Reason: ${c.Notes}\n\n`);
        } else if (c.CheckID.startsWith("_service_maintenance:")) {
          io.stdout(`Service:\n  ID:     ${c.ServiceID}\n  Reason: ${c.Notes}\n\n`);
        }
      }
      return 0;
    }
    const what = serviceId !== "" ? "service" : "node";
    try {
      if (enable) {
        if (serviceId !== "") await agent.enableServiceMaintenance(serviceId, reason);
        else await agent.enableNodeMaintenance(reason);
      } else {
        if (serviceId !== "") await agent.disableServiceMaintenance(serviceId);
        else await agent.disableNodeMaintenance();
      }
    } catch (err) {
      io.stderr(`Error ${enable ? "enabling" : "disabling"} ${what} maintenance: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`${what === "node" ? "Node" : "Service"} maintenance is now ${enable ? "enabled" : "disabled"}\n`);
    return 0;
  },
};
