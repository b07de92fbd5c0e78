// Shared by `cairn acl ...`: Consul's pretty formats (command/acl/token/formatter.go,
// command/acl/policy/formatter.go) and the -format flag.
import type { AclPolicyJson, AclTokenJson } from "../core/api/acl.ts";
import type { FlagSpec } from "./_flags.ts";

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
    for (const s of t.ServiceIdentities) lines.push(`   ${s.ServiceName} (Datacenters: ${s.Datacenters?.length ? s.Datacenters.join(", ") : "all"})`);
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
