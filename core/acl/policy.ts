// ACL policy rules (consul acl/policy.go, Consul 1.4+ syntax): HCL or JSON
// text into a PolicyRules value. Named families (`key`, `key_prefix`,
// `service`, ...) hold one access level per exact name and per prefix;
// single-valued families (`acl`, `keyring`, `operator`, `mesh`, `peering`)
// hold one level. Several policies merge into one PolicyRules: for the same
// rule the stronger level wins, where deny > write > list > read (consul
// policy_merger.go takesPrecedenceOver). Pure: no I/O.
import { HclSyntaxError, parseHcl, parseJsonDocument } from "../hcl/mod.ts";

export type AccessLevel = "deny" | "read" | "list" | "write";

/** Families whose rules name a resource, exactly or by prefix. */
export const namedResources = ["agent", "event", "key", "node", "query", "service", "session"] as const;
export type NamedResource = (typeof namedResources)[number];

/** Families with one level for the whole family. */
export const scalarResources = ["acl", "keyring", "operator", "mesh", "peering"] as const;
export type ScalarResource = (typeof scalarResources)[number];

export type AclResource = NamedResource | ScalarResource;

export interface NamedRules {
  readonly exact: Map<string, AccessLevel>;
  readonly prefix: Map<string, AccessLevel>;
}

export interface PolicyRules {
  readonly named: Record<NamedResource, NamedRules>;
  readonly scalar: Partial<Record<ScalarResource, AccessLevel>>;
}

/** Rules that do not parse or hold a bad value (Consul answers 400 with the text). */
export class AclRuleError extends Error {
  readonly code = "bad_request";
  constructor(message: string) {
    super(message);
    this.name = "AclRuleError";
  }
}

export function emptyRules(): PolicyRules {
  const named = {} as Record<NamedResource, NamedRules>;
  for (const r of namedResources) named[r] = { exact: new Map(), prefix: new Map() };
  return { named, scalar: {} };
}

const rank: Record<AccessLevel, number> = { read: 1, list: 2, write: 3, deny: 4 };

/** The level that wins when two policies give one rule (deny > write > list > read). */
export function strongerLevel(a: AccessLevel, b: AccessLevel): AccessLevel {
  return rank[a] >= rank[b] ? a : b;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function level(v: unknown, what: string, allowList: boolean): AccessLevel {
  if (v === "read" || v === "write" || v === "deny" || (allowList && v === "list")) return v;
  throw new AclRuleError(`Invalid ${what} policy: ${JSON.stringify(v)}`);
}

/** HCL repeats a block as a list of objects; JSON may too. */
function blocks(v: unknown): Record<string, unknown>[] {
  if (Array.isArray(v)) return v.flatMap(blocks);
  if (isPlainObject(v)) return [v];
  return [];
}

function addNamed(rules: NamedRules, which: "exact" | "prefix", name: string, lvl: AccessLevel): void {
  const m = rules[which];
  const prev = m.get(name);
  m.set(name, prev === undefined ? lvl : strongerLevel(prev, lvl));
}

function addScalar(rules: PolicyRules, r: ScalarResource, lvl: AccessLevel): void {
  const prev = rules.scalar[r];
  rules.scalar[r] = prev === undefined ? lvl : strongerLevel(prev, lvl);
}

/**
 * Parse rules written in HCL or JSON (text starting with `{` is JSON, as
 * Consul's hcl.Decode treats it). Empty text is an empty policy.
 */
export function parseRules(text: string): PolicyRules {
  const rules = emptyRules();
  if (text.trim() === "") return rules;
  let doc: unknown;
  try {
    doc = text.trimStart().startsWith("{") ? parseJsonDocument(text).value : parseHcl(text).value;
  } catch (err) {
    const msg = err instanceof HclSyntaxError ? err.message : err instanceof Error ? err.message : String(err);
    throw new AclRuleError(`Failed to parse ACL rules: ${msg}`);
  }
  if (!isPlainObject(doc)) throw new AclRuleError("Failed to parse ACL rules: expected an object");
  for (const [rawKey, value] of Object.entries(doc)) {
    const key = rawKey.toLowerCase();
    if ((scalarResources as readonly string[]).includes(key)) {
      addScalar(rules, key as ScalarResource, level(value, key, false));
      continue;
    }
    const prefix = key.endsWith("_prefix");
    const family = prefix ? key.slice(0, -"_prefix".length) : key;
    if (!(namedResources as readonly string[]).includes(family)) {
      throw new AclRuleError(`Failed to parse ACL rules: unknown rule "${rawKey}"`);
    }
    const r = family as NamedResource;
    for (const block of blocks(value)) {
      for (const [name, body] of Object.entries(block)) {
        for (const b of blocks(body)) {
          for (const field of Object.keys(b)) {
            if (field !== "policy" && field !== "intentions") throw new AclRuleError(`Failed to parse ACL rules: unknown field "${field}" in ${key} "${name}"`);
          }
          if (b.intentions !== undefined) level(b.intentions, `${key} intentions`, false);
          if (b.policy === undefined) continue;
          addNamed(rules.named[r], prefix ? "prefix" : "exact", name, level(b.policy, key, r === "key"));
        }
      }
    }
  }
  return rules;
}

/** Merge several policies' rules into one (the stronger level wins for the same rule). */
export function mergeRules(all: readonly PolicyRules[]): PolicyRules {
  const out = emptyRules();
  for (const p of all) {
    for (const r of scalarResources) {
      const lvl = p.scalar[r];
      if (lvl !== undefined) addScalar(out, r, lvl);
    }
    for (const r of namedResources) {
      for (const [n, lvl] of p.named[r].exact) addNamed(out.named[r], "exact", n, lvl);
      for (const [n, lvl] of p.named[r].prefix) addNamed(out.named[r], "prefix", n, lvl);
    }
  }
  return out;
}

// ---- built-in policies (consul structs/acl.go) ----

export const globalManagementPolicyId = "00000000-0000-0000-0000-000000000001";
export const globalReadOnlyPolicyId = "00000000-0000-0000-0000-000000000002";
export const anonymousTokenAccessorId = "00000000-0000-0000-0000-000000000002";
export const anonymousTokenSecret = "anonymous";

function allOf(lvl: "read" | "write"): string {
  // global-read-only leaves ACL data out: its reader could see every token.
  const lines = lvl === "write" ? [`acl = "write"`] : [];
  for (const r of namedResources) lines.push(`${r}_prefix "" {\n  policy = "${lvl}"\n}`);
  for (const r of scalarResources) if (r !== "acl") lines.push(`${r} = "${lvl}"`);
  return lines.join("\n");
}

export const globalManagementRules = allOf("write");
export const globalReadOnlyRules = allOf("read");
