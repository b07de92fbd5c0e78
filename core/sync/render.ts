// What a task's module sees, rendered exactly as CTS renders it
// (templates/tftmpl: the `services` variable keyed "<id>.<node>.<datacenter>",
// `consul_kv` as a map of key → value, `catalog_services` as name → tags),
// and the canonical hash a task triggers on. Only rendered fields enter the
// hash: a check's output text never does. Pure.

/** One instance, the `services` variable's object type. */
export interface RenderedService {
  id: string;
  name: string;
  kind: string;
  address: string;
  port: number;
  meta: Record<string, string>;
  tags: string[];
  namespace: string;
  status: string;
  node: string;
  node_id: string;
  node_address: string;
  node_datacenter: string;
  node_tagged_addresses: Record<string, string>;
  node_meta: Record<string, string>;
  cts_user_defined_meta: Record<string, string>;
}

/** The inputs of one task run: the variables the module gets. */
export interface RenderedInputs {
  services?: Record<string, RenderedService>;
  consul_kv?: Record<string, string>;
  catalog_services?: Record<string, string[]>;
}

type J = Record<string, unknown>;

function s(v: unknown): string {
  return typeof v === "string" ? v : "";
}

function strMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (typeof v === "object" && v !== null) for (const [k, x] of Object.entries(v)) if (typeof x === "string") out[k] = x;
  return out;
}

const statusRank: Record<string, number> = { passing: 0, warning: 1, critical: 2, maintenance: 3 };

/** Aggregate status of an instance's checks (api.HealthChecks.AggregatedStatus). */
export function aggregateStatus(checks: unknown): string {
  let worst = "passing";
  if (!Array.isArray(checks)) return worst;
  for (const c of checks) {
    const id = s((c as J)?.CheckID);
    let st = s((c as J)?.Status);
    if (id === "_node_maintenance" || id.startsWith("_service_maintenance:")) st = "maintenance";
    if ((statusRank[st] ?? 2) > (statusRank[worst] ?? 0)) worst = statusRank[st] === undefined ? "critical" : st;
  }
  return worst;
}

/** Entries of `/v1/health/service/<name>` → the services map (one service's part of it). */
export function renderHealthEntries(entries: unknown, userMeta: Record<string, string>): Record<string, RenderedService> {
  const out: Record<string, RenderedService> = {};
  if (!Array.isArray(entries)) return out;
  for (const e of entries as J[]) {
    const node = (e?.Node ?? {}) as J;
    const svc = (e?.Service ?? {}) as J;
    const nodeName = s(node.Node);
    const dc = s(node.Datacenter);
    const id = s(svc.ID);
    const r: RenderedService = {
      id,
      name: s(svc.Service),
      kind: s(svc.Kind),
      address: s(svc.Address) || s(node.Address),
      port: typeof svc.Port === "number" ? svc.Port : 0,
      meta: strMap(svc.Meta),
      tags: Array.isArray(svc.Tags) ? (svc.Tags as unknown[]).filter((t): t is string => typeof t === "string") : [],
      namespace: s(svc.Namespace),
      status: aggregateStatus(e?.Checks),
      node: nodeName,
      node_id: s(node.ID),
      node_address: s(node.Address),
      node_datacenter: dc,
      node_tagged_addresses: strMap(node.TaggedAddresses),
      node_meta: strMap(node.Meta),
      cts_user_defined_meta: { ...userMeta },
    };
    out[`${id}.${nodeName}.${dc}`] = r;
  }
  return out;
}

/** `/v1/kv/<path>[?recurse]` entries → consul_kv (values decoded from base64; folders skipped). */
export function renderKvEntries(entries: unknown, decode: (b64: string) => string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(entries)) return out;
  for (const e of entries as J[]) {
    const key = s(e?.Key);
    if (key === "" || key.endsWith("/")) continue;
    out[key] = typeof e.Value === "string" ? decode(e.Value) : "";
  }
  return out;
}

/** JSON with object keys sorted at every level: equal data, equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (typeof v === "object" && v !== null) {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as J)[k])}`).join(",")}}`;
  }
  return JSON.stringify(v ?? null);
}

/** Two 32-bit FNV-1a lanes (different offsets) over the canonical JSON, as 16 hex digits: cheap, stable, enough to tell renders apart. */
export function renderHash(v: unknown): string {
  const text = canonicalJson(v);
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, "0") + (b >>> 0).toString(16).padStart(8, "0");
}
