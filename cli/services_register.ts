// `cairn services register`, as consul command/services/register.
import { AgentServices } from "../core/api/agent_services.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, httpServerFlags, list, num, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";
import { fieldOf, servicesFromFiles } from "./services_files.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags,
  { name: "id", kind: "string", usage: "ID of the service to register for arg-based registration. If this isn't set, it will default to the -name value." },
  { name: "name", kind: "string", usage: "Name of the service to register for arg-based registration." },
  { name: "address", kind: "string", usage: "Address of the service to register for arg-based registration." },
  { name: "port", kind: "int", valueName: "int", usage: "Port of the service to register for arg-based registration." },
  { name: "meta", kind: "list", usage: "Metadata to set on the service, formatted as key=value. This flag may be specified multiple times to set multiple meta fields." },
  { name: "tag", kind: "list", usage: "Tag to add to the service. This flag can be specified multiple times to set multiple tags." },
  { name: "tagged-address", kind: "list", usage: "Tagged address to set on the service, formatted as key=value. This flag may be specified multiple times to set multiple addresses." },
  { name: "kind", kind: "string", usage: "The services 'kind'" },
];

const HELP = `
Usage: cairn services register [options] [FILE...]

  Register one or more services using the local agent API. Services can
  be registered from standard configuration files (JSON or YAML) or
  using flags. The service is registered and the command returns. The caller
  must remember to call "cairn services deregister" or a similar API to
  deregister the service when complete.

      $ cairn services register web.json

  Additional flags and more advanced use cases are detailed below.
`;

function keyValues(items: readonly string[], what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new Error(`Invalid ${what} "${item}": expected key=value`);
    out[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return out;
}

/** "host:port" or "host" → Consul's ServiceAddress (api.ParseServiceAddr). */
function serviceAddr(text: string): { Address: string; Port: number } {
  const m = /^(.*):(\d+)$/.exec(text);
  if (!m) return { Address: text.replace(/^\[(.*)\]$/, "$1"), Port: 0 };
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`Invalid port "${m[2]}" in "${text}"`);
  return { Address: m[1]!.replace(/^\[(.*)\]$/, "$1"), Port: port };
}

export const servicesRegister: Command = {
  name: "services register",
  synopsis: "Register services with the local agent",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(servicesRegister, args, flags, io);
    if (typeof p === "number") return p;
    let meta: Record<string, string>;
    const tagged: Record<string, { Address: string; Port: number }> = {};
    try {
      meta = keyValues(list(p, "meta"), "meta");
    } catch (err) {
      io.stderr(`${apiErrorText(err)}\n`);
      return 1;
    }
    try {
      for (const [k, v] of Object.entries(keyValues(list(p, "tagged-address"), "tagged address"))) tagged[k] = serviceAddr(v);
    } catch (err) {
      io.stderr(`Invalid Tagged Address: ${apiErrorText(err)}\n`);
      return 1;
    }
    const fromFlags: Record<string, unknown> = {
      ID: str(p, "id"),
      Name: str(p, "name"),
      Address: str(p, "address"),
      Port: num(p, "port") ?? 0,
      Tags: list(p, "tag"),
      Meta: meta,
    };
    if (str(p, "kind")) fromFlags.Kind = str(p, "kind");
    if (Object.keys(tagged).length > 0) fromFlags.TaggedAddresses = tagged;
    const files = p.positionals;
    if (files.length === 0 && str(p, "name") === "") {
      io.stderr("Service registration requires at least one argument or flags.\n");
      return 1;
    }
    if (files.length > 0 && str(p, "name") !== "") {
      io.stderr("Service registration requires arguments or -id, not both.\n");
      return 1;
    }
    let services: Record<string, unknown>[] = [fromFlags];
    if (files.length > 0) {
      try {
        services = await servicesFromFiles(files, io);
      } catch (err) {
        io.stderr(`Error: ${apiErrorText(err)}\n`);
        return 1;
      }
      // Flags fill what a file leaves out (consul CombineArgs).
      services = services.map((svc) => {
        const out = { ...svc };
        for (const k of ["ID", "Address", "Port", "Kind"] as const) {
          const v = fromFlags[k];
          if (v && !fieldOf(out, k)) out[k] = v;
        }
        if (Object.keys(meta).length > 0) out.Meta = { ...((fieldOf(out, "Meta") as Record<string, string> | undefined) ?? {}), ...meta };
        if (list(p, "tag").length > 0) out.Tags = [...((fieldOf(out, "Tags") as string[] | undefined) ?? []), ...list(p, "tag")];
        return out;
      });
    }
    const agent = new AgentServices(apiClientFromFlags(p, io));
    for (const svc of services) {
      const name = String(fieldOf(svc, "Name") ?? "");
      try {
        await agent.serviceRegister(svc);
      } catch (err) {
        io.stderr(`Error registering service "${name}": ${apiErrorText(err)}\n`);
        return 1;
      }
      io.stdout(`Registered service: ${name}\n`);
    }
    return 0;
  },
};
