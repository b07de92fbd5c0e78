// Shared by `cairn acl ...`: Consul's pretty formats (command/acl/token/formatter.go,
// command/acl/policy/formatter.go, command/acl/role/formatter.go), the -format
// flag, identity flags (command/acl/acl_helpers.go ExtractServiceIdentities,
// ExtractNodeIdentities) and IDs given as unique prefixes (GetPolicyIDFromPartial,
// GetRoleIDFromPartial).
import type { Acl, AclPolicyJson, AclRoleJson, AclTokenJson } from "../core/api/acl.ts";
import { str, type FlagSpec, type ParsedFlags } from "./_flags.ts";
import type { CliIo } from "./_io.ts";

export const formatFlag: FlagSpec = {
  name: "format",
  kind: "string",
  valueName: "value",
  usage: "Output format. Must be one of (pretty|json).",
  defaultText: "pretty",
};

/** -format's value, or an error text. */
export function outputFormat(value: string): "pretty" | "json" | string {
  if (value === "" || value === "pretty") return "pretty";
  if (value === "json") return "json";
  return `Invalid format: ${JSON.stringify(value)}`;
}

/** -format's value, or undefined once the refusal is on stderr. */
export function formatOf(p: ParsedFlags, io: CliIo): "pretty" | "json" | undefined {
  const f = outputFormat(str(p, "format"));
  if (f === "pretty" || f === "json") return f;
  io.stderr(`${f}\n`);
  return undefined;
}

/** One item (or a list) in the chosen format: JSON indented as Consul's MarshalIndent, or `pretty(value)`. */
export function showAs<T>(io: CliIo, format: "pretty" | "json", value: T, pretty: (v: T) => string): void {
  io.stdout(format === "json" ? `${JSON.stringify(value, null, 4)}\n` : pretty(value));
}

export type ServiceIdentityJson = { ServiceName: string; Datacenters?: string[] };
export type NodeIdentityJson = { NodeName: string; Datacenter: string };

/** Identities from the flags named, or undefined once the error is on stderr. */
export function identitiesOf<T>(io: CliIo, parse: () => T): T | undefined {
  try {
    return parse();
  } catch (err) {
    io.stderr(`${err instanceof Error ? err.message : String(err)}\n`);
    return undefined;
  }
}

/** -service-identity values: SERVICENAME or SERVICENAME:DC1,DC2,…; throws Consul's error text. */
export function serviceIdentitiesFrom(values: readonly string[]): ServiceIdentityJson[] {
  const out: ServiceIdentityJson[] = [];
  for (const v of values) {
    const parts = v.split(":");
    if (parts.length > 2) throw new Error(`Malformed -service-identity argument: ${JSON.stringify(v)}`);
    out.push(parts.length === 2 ? { ServiceName: parts[0]!, Datacenters: parts[1]!.split(",") } : { ServiceName: parts[0]! });
  }
  return out;
}

/** -node-identity values: NODENAME:DATACENTER; throws Consul's error text. */
export function nodeIdentitiesFrom(values: readonly string[]): NodeIdentityJson[] {
  const out: NodeIdentityJson[] = [];
  for (const v of values) {
    const parts = v.split(":");
    if (parts.length !== 2 || parts[0] === "" || parts[1] === "") throw new Error(`Malformed -node-identity argument: ${JSON.stringify(v)}`);
    out.push({ NodeName: parts[0]!, Datacenter: parts[1]! });
  }
  return out;
}

/** The one ID among `ids` that starts with `partial` (a full UUID is taken as given). */
function uniquePrefix(kind: "policy" | "role", partial: string, ids: readonly string[]): string {
  if (partial.length === 36) return partial;
  const matches = ids.filter((id) => id.startsWith(partial));
  const plural = kind === "policy" ? "policies" : "roles";
  if (matches.length === 0) throw new Error(`No such ${kind} ID with prefix: ${partial}`);
  if (matches.length > 1) throw new Error(`Multiple ${plural} with ID prefix: ${partial}`);
  return matches[0]!;
}

/** A policy ID from a unique prefix (or the built-in "global-management"). */
export async function policyIdFromPartial(acl: Acl, partial: string): Promise<string> {
  if (partial === "global-management") return partial;
  return uniquePrefix("policy", partial, partial.length === 36 ? [] : (await acl.policyList()).map((p) => p.ID));
}

/** A role ID from a unique prefix. */
export async function roleIdFromPartial(acl: Acl, partial: string): Promise<string> {
  return uniquePrefix("role", partial, partial.length === 36 ? [] : (await acl.roleList()).map((r) => r.ID));
}

/** Go's time.Time.String() for an RFC 3339 time. */
export function goTime(text: string | undefined): string {
  const ms = text ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) return text ?? "";
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const frac = d.getUTCMilliseconds() ? `.${pad(d.getUTCMilliseconds(), 3).replace(/0+$/, "")}` : "";
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${frac} +0000 UTC`;
}

export function prettyToken(t: AclTokenJson): string {
  const lines = [
    `AccessorID:       ${t.AccessorID}`,
    `SecretID:         ${t.SecretID}`,
    `Description:      ${t.Description}`,
    `Local:            ${t.Local === true}`,
    `Create Time:      ${goTime(t.CreateTime)}`,
  ];
  if (t.ExpirationTime) lines.push(`Expiration Time:  ${goTime(t.ExpirationTime)}`);
  if (t.Policies?.length) {
    lines.push("Policies:");
    for (const p of t.Policies) lines.push(`   ${p.ID ?? ""} - ${p.Name ?? ""}`);
  }
  if (t.Roles?.length) {
    lines.push("Roles:");
    for (const r of t.Roles) lines.push(`   ${r.ID ?? ""} - ${r.Name ?? ""}`);
  }
  if (t.ServiceIdentities?.length) {
    lines.push("Service Identities:");
    for (const s of t.ServiceIdentities) lines.push(`   ${serviceIdentityLine(s)}`);
  }
  if (t.NodeIdentities?.length) {
    lines.push("Node Identities:");
    for (const n of t.NodeIdentities) lines.push(`   ${n.NodeName} (Datacenter: ${n.Datacenter})`);
  }
  return `${lines.join("\n")}\n`;
}

export function prettyPolicy(p: AclPolicyJson): string {
  return [
    `ID:           ${p.ID}`,
    `Name:         ${p.Name}`,
    `Description:  ${p.Description}`,
    `Datacenters:  ${(p.Datacenters ?? []).join(", ")}`,
    "Rules:",
    p.Rules ?? "",
  ].join("\n") + "\n";
}

export function prettyPolicyListEntry(p: AclPolicyJson): string {
  return [`${p.Name}:`, `   ID:           ${p.ID}`, `   Description:  ${p.Description}`, `   Datacenters:  ${(p.Datacenters ?? []).join(", ")}`].join("\n") + "\n";
}

function serviceIdentityLine(s: ServiceIdentityJson): string {
  return `${s.ServiceName} (Datacenters: ${s.Datacenters?.length ? s.Datacenters.join(", ") : "all"})`;
}

/** A role's links and identities, each line after `indent`. */
function roleBody(r: AclRoleJson, indent: string): string[] {
  const lines: string[] = [];
  if (r.Policies?.length) {
    lines.push(`${indent}Policies:`);
    for (const p of r.Policies) lines.push(`${indent}   ${p.ID ?? ""} - ${p.Name ?? ""}`);
  }
  if (r.ServiceIdentities?.length) {
    lines.push(`${indent}Service Identities:`);
    for (const s of r.ServiceIdentities) lines.push(`${indent}   ${serviceIdentityLine(s)}`);
  }
  if (r.NodeIdentities?.length) {
    lines.push(`${indent}Node Identities:`);
    for (const n of r.NodeIdentities) lines.push(`${indent}   ${n.NodeName} (Datacenter: ${n.Datacenter})`);
  }
  return lines;
}

export function prettyRole(r: AclRoleJson): string {
  return [`ID:           ${r.ID}`, `Name:         ${r.Name}`, `Description:  ${r.Description}`, ...roleBody(r, "")].join("\n") + "\n";
}

export function prettyRoleListEntry(r: AclRoleJson): string {
  return [`${r.Name}:`, `   ID:           ${r.ID}`, `   Description:  ${r.Description}`, ...roleBody(r, "   ")].join("\n") + "\n";
}
