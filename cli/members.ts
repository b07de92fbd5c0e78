// `cairn members`, as consul command/members: the gossip pool's members in
// columns (or -detailed with every tag); -status filters by a regexp and
// exits 2 when nothing matches.
import { AgentMembers, memberStatusName, type AgentMember } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, columns } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "detailed", kind: "bool", usage: "Provides detailed information about nodes." },
  { name: "status", kind: "string", valueName: "string", usage: "If provided, output is filtered to only nodes matching the regular expression for status." },
  { name: "wan", kind: "bool", usage: "If the agent is in server mode, this can be used to return the other peers in the WAN pool." },
  { name: "segment", kind: "string", valueName: "string", usage: "(Enterprise-only) Segment to list members from." },
];

const HELP = `
Usage: cairn members [options]

  Outputs the members of a running agent's gossip pool.
`;

function addrText(m: AgentMember): string {
  return m.Addr.includes(":") ? `[${m.Addr}]:${m.Port}` : `${m.Addr}:${m.Port}`;
}

/** Consul's standardOutput rows (header first). */
export function standardRows(members: readonly AgentMember[]): string[][] {
  const rows = [["Node", "Address", "Status", "Type", "Build", "Protocol", "DC", "Partition", "Segment"]];
  for (const m of members) {
    const t = m.Tags ?? {};
    let build = t.build ?? "";
    if (build === "") build = "< 0.3";
    else if (build.includes(":")) build = build.slice(0, build.indexOf(":"));
    const status = memberStatusName(m.Status);
    const partition = t.ap || "default";
    switch (t.role) {
      case "node":
        rows.push([m.Name, addrText(m), status, "client", build, t.vsn ?? "", t.dc ?? "", partition, t.segment || "<default>"]);
        break;
      case "consul":
        rows.push([m.Name, addrText(m), status, "server", build, t.vsn ?? "", t.dc ?? "", partition, "<all>"]);
        break;
      default:
        rows.push([m.Name, addrText(m), status, "unknown", "", "", "", "", ""]);
    }
  }
  return rows;
}

/** Consul's detailedOutput rows: every tag as k=v, sorted. */
export function detailedRows(members: readonly AgentMember[]): string[][] {
  const rows = [["Node", "Address", "Status", "Tags"]];
  for (const m of members) {
    const tags = Object.entries(m.Tags ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join(",");
    rows.push([m.Name, addrText(m), memberStatusName(m.Status), tags]);
  }
  return rows;
}

export const membersCommand: Command = {
  name: "members",
  synopsis: "Lists the members of a cluster",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(membersCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    let statusRe: RegExp;
    try {
      statusRe = new RegExp(str(p, "status", ".*"));
    } catch (err) {
      io.stderr(`Failed to compile status regexp: ${err instanceof Error ? err.message : String(err)}\n`);
      return 1;
    }
    let members: AgentMember[];
    try {
      members = await new AgentMembers(apiClientFromFlags(p, io)).members({ wan: bool(p, "wan"), segment: str(p, "segment") || undefined });
    } catch (err) {
      io.stderr(`Error retrieving members: ${apiErrorText(err)}\n`);
      return 1;
    }
    members = members.filter((m) => statusRe.test(memberStatusName(m.Status)));
    if (members.length === 0) return 2;
    members.sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
    const rows = bool(p, "detailed") ? detailedRows(members) : standardRows(members);
    io.stdout(columns(rows) + "\n");
    return 0;
  },
};
