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

const namedSet: ReadonlySet<string> = new Set(namedResources);

function isNamed(r: AclResource): r is NamedResource {
  return namedSet.has(r);
}

/**
 * A family's prefix rules as a trie of UTF-16 code units (what `startsWith`
 * and `slice` compare): the longest prefix of a name that has a rule is
 * found in one walk along the name, without slicing it or hashing the
 * slices (a map lookup per distinct prefix length did both, per request).
 */
class PrefixTrie {
  level: AccessLevel | undefined;
  readonly next = new Map<number, PrefixTrie>();

  static of(prefixes: ReadonlyMap<string, AccessLevel>): PrefixTrie {
    const root = new PrefixTrie();
    for (const [p, lvl] of prefixes) {
      let node = root;
      for (let i = 0; i < p.length; i++) {
        const c = p.charCodeAt(i);
        let child = node.next.get(c);
        if (!child) {
          child = new PrefixTrie();
          node.next.set(c, child);
        }
        node = child;
      }
      node.level = lvl;
    }
    return root;
  }

  /** The level of the longest prefix of `name` with a rule, or undefined. */
  longest(name: string): AccessLevel | undefined {
    let best = this.level;
    let node: PrefixTrie | undefined = this;
    for (let i = 0; i < name.length; i++) {
      node = node.next.get(name.charCodeAt(i));
      if (!node) break;
      if (node.level !== undefined) best = node.level;
    }
    return best;
  }
}

export class Authorizer {
  readonly #rules: PolicyRules;
  readonly #defaultAllow: boolean;
  /** Prefix rules per family, longest first. */
  readonly #prefixes = new Map<NamedResource, [string, AccessLevel][]>();
  /** Each family's prefix rules as a trie, for the longest match. */
  readonly #tries = new Map<NamedResource, PrefixTrie>();

  constructor(rules: PolicyRules, options: { defaultAllow: boolean }) {
    this.#rules = rules;
    this.#defaultAllow = options.defaultAllow;
    for (const r of namedResources) {
      const list = [...rules.named[r].prefix.entries()].sort((a, b) => b[0].length - a[0].length);
      this.#prefixes.set(r, list);
      this.#tries.set(r, PrefixTrie.of(rules.named[r].prefix));
    }
  }

  /** The rule that decides `name` in `resource` (exact, else longest prefix), or undefined: the default decides. */
  ruleFor(resource: AclResource, name: string): AccessLevel | undefined {
    if (!isNamed(resource)) return this.#rules.scalar[resource as ScalarResource];
    const exact = this.#rules.named[resource].exact;
    // No exact rules (the usual key policy): no need to hash the name.
    if (exact.size > 0) {
      const lvl = exact.get(name);
      if (lvl !== undefined) return lvl;
    }
    return this.#tries.get(resource)!.longest(name);
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
