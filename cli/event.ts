// `cairn event`, as consul command/event: fire a user event, optionally filtered.
import { Event } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "name", kind: "string", valueName: "string", usage: "Name of the event." },
  { name: "node", kind: "string", valueName: "string", usage: "Regular expression to filter on node names." },
  { name: "service", kind: "string", valueName: "string", usage: "Regular expression to filter on service instances." },
  { name: "tag", kind: "string", valueName: "string", usage: "Regular expression to filter on service tags. Must be used with -service." },
];

const HELP = `
Usage: cairn event [options] [payload]

  Dispatches a custom user event across a datacenter. An event must provide
  a name, but a payload is optional. Events support filtering using
  regular expressions on node name, service, and tag definitions.
`;

export const eventCommand: Command = {
  name: "event",
  synopsis: "Fire a new event",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(eventCommand, args, flags, io);
    if (typeof p === "number") return p;
    const name = str(p, "name");
    const node = str(p, "node");
    const service = str(p, "service");
    const tag = str(p, "tag");
    if (name === "") {
      io.stderr("Event name must be specified\n");
      return 1;
    }
    for (const [what, expr] of [["node", node], ["service", service], ["tag", tag]] as const) {
      if (expr === "") continue;
      try {
        new RegExp(expr);
      } catch (err) {
        io.stderr(`Failed to compile ${what} filter regexp: ${err instanceof Error ? err.message : String(err)}\n`);
        return 1;
      }
    }
    if (tag !== "" && service === "") {
      io.stderr("Cannot provide tag filter without service filter.\n");
      return 1;
    }
    if (p.positionals.length > 1) {
      io.stderr("Too many command line arguments.\n");
      return 1;
    }
    const payload = p.positionals.length === 1 ? new TextEncoder().encode(p.positionals[0]) : undefined;
    try {
      const e = await new Event(apiClientFromFlags(p, io)).fire({ name, payload, nodeFilter: node, serviceFilter: service, tagFilter: tag });
      io.stdout(`Event ID: ${e.ID}\n`);
    } catch (err) {
      io.stderr(`Error firing event: ${apiErrorText(err)}\n`);
      return 1;
    }
    return 0;
  },
};
