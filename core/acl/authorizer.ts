// Deciding one request against a token's merged rules (consul
// acl/policy_authorizer.go + chained_authorizer.go): for a named family an
// exact rule beats any prefix rule and the longest matching prefix wins; a
// family with no matching rule falls to the default policy, except `acl`,
// which only a rule grants (Consul's allow-all authorizer denies ACL
// management). `read` allows reads, `list` reads and key listings, `write`
// everything, `deny` nothing. Pure.
import type { AccessLevel, AclResource, NamedResource, PolicyRules, ScalarResource } from "./policy.ts";
import { globalManagementRules, mergeRules, namedResources, parseRules } from "./policy.ts";

export type Access = "read" | "list" | "write";

function grants(lvl: AccessLevel, access: Access): boolean {
  switch (lvl) {
    case "deny":
      return false;
    case "read":
      return access === "read";
    case "list":
      return access !== "write";
    case "write":
      return true;
  }
}

function isNamed(r: AclResource): r is NamedResource {
  return (namedResources as readonly string[]).includes(r);
}

export class Authorizer {
  readonly #rules: PolicyRules;
  readonly #defaultAllow: boolean;
  /** Prefix rules per family, longest first. */
  readonly #prefixes = new Map<NamedResource, [string, AccessLevel][]>();
  /** The distinct lengths of each family's prefix rules, longest first: a lookup tries one slice per length. */
  readonly #prefixLengths = new Map<NamedResource, number[]>();

  constructor(rules: PolicyRules, options: { defaultAllow: boolean }) {
    this.#rules = rules;
    this.#defaultAllow = options.defaultAllow;
    for (const r of namedResources) {
      const list = [...rules.named[r].prefix.entries()].sort((a, b) => b[0].length - a[0].length);
      this.#prefixes.set(r, list);
      this.#prefixLengths.set(r, [...new Set(list.map(([p]) => p.length))]);
    }
  }

  /** The rule that decides `name` in `resource` (exact, else longest prefix), or undefined: the default decides. */
  ruleFor(resource: AclResource, name: string): AccessLevel | undefined {
    if (!isNamed(resource)) return this.#rules.scalar[resource as ScalarResource];
    const named = this.#rules.named[resource];
    const exact = named.exact.get(name);
    if (exact !== undefined) return exact;
    for (const len of this.#prefixLengths.get(resource)!) {
      if (len > name.length) continue;
      const lvl = named.prefix.get(len === name.length ? name : name.slice(0, len));
      if (lvl !== undefined) return lvl;
    }
    return undefined;
  }

  /** Whether the token may `access` the resource `name` of a family (scalar families ignore the name). */
  allowed(resource: AclResource, access: Access, name = ""): boolean {
    const lvl = this.ruleFor(resource, name);
    if (lvl !== undefined) return grants(lvl, access);
    return resource === "acl" ? false : this.#defaultAllow;
  }

  /**
   * Write on every key under `prefix` (a recursive delete, consul
   * KeyWritePrefix): the rule deciding the prefix itself allows write, and
   * no rule for a key or prefix below it asks for less.
   */
  keyWritePrefix(prefix: string): boolean {
    const named = this.#rules.named.key;
    for (const [p, lvl] of this.#prefixes.get("key")!) {
      if (p.length > prefix.length && p.startsWith(prefix) && lvl !== "write") return false;
    }
    for (const [k, lvl] of named.exact) if (k.startsWith(prefix) && lvl !== "write") return false;
    let parent: AccessLevel | undefined;
    for (const [p, lvl] of this.#prefixes.get("key")!) {
      if (prefix.startsWith(p)) {
        parent = lvl;
        break;
      }
    }
    return parent !== undefined ? parent === "write" : this.#defaultAllow;
  }

  /** Whether any rule of a family could grant `access` (or the default does): a route whose names come later. */
  anyAllowed(resource: AclResource, access: Access): boolean {
    if (!isNamed(resource)) return this.allowed(resource, access);
    if (this.#defaultAllow) return true;
    const n = this.#rules.named[resource];
    for (const lvl of n.exact.values()) if (grants(lvl, access)) return true;
    for (const lvl of n.prefix.values()) if (grants(lvl, access)) return true;
    return false;
  }
}

/** The authorizer of a management token: every rule of global-management. */
export function managementAuthorizer(): Authorizer {
  return new Authorizer(mergeRules([parseRules(globalManagementRules)]), { defaultAllow: true });
}

/** Consul's attributed refusal text (acl/errors.go PermissionDeniedError, 1.12+ form). */
export function permissionDeniedReason(accessorId: string, resource: AclResource, access: Access, name?: string): string {
  const base = `token with AccessorID '${accessorId}' lacks permission '${resource}:${access}'`;
  return name === undefined || name === "" ? base : `${base} on ${JSON.stringify(name)}`;
}
