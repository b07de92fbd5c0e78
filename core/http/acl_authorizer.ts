// The Router's RouteAuthorizer when ACLs are on (consul agent/acl.go: the
// agent resolves the request's token and checks the route's permission
// before the endpoint runs). A token's rules come from the servers
// (`ACL.Resolve`) and are kept for acl.token_ttl; when no server answers,
// acl.down_policy decides: extend-cache (and async-cache) keep using what
// was cached, allow and deny do what they say. The servers check again
// what they serve (a client's word is never enough); this edge answers the
// agent's own endpoints and refuses early.
import { Authorizer, permissionDeniedReason } from "../acl/authorizer.ts";
import { AclRuleError, mergeRules, parseRules, type AclResource, type PolicyRules } from "../acl/policy.ts";
import { AclNotFoundError } from "../errors.ts";
import type { AclResolveReply } from "../rpc/methods.ts";
import { parseToken } from "./blocking.ts";
import type { AuthzDecision, AuthzRequirement, RequestAcl, RouteAuthorizer } from "./router.ts";
import type { HttpRequest } from "./types.ts";

export type DownPolicy = "allow" | "deny" | "extend-cache" | "async-cache";

export interface AclAuthorizerOptions {
  /** Ask the servers what a secret may do (AclNotFoundError for an unknown one). */
  resolve(secret: string): Promise<AclResolveReply>;
  /** Monotonic ms. */
  now(): number;
  tokenTtlMs: number;
  downPolicy: DownPolicy;
  enableKeyListPolicy: boolean;
  /** The agent's default token (acl.tokens.default), used when a request carries none. */
  defaultToken(): string;
  /**
   * acl.tokens.agent_recovery, answered here without the servers (Consul's
   * resolveLocallyManagedToken): agent:write on this agent, node:read on all,
   * so the agent's own endpoints work while no server can resolve a token.
   */
  agentRecoveryToken?(): string;
  /** This agent's node name (the recovery token's agent rule). */
  nodeName?: string;
}

export interface ResolvedToken {
  accessorId: string;
  authz: Authorizer;
  /** The decision of every allowed request of this token, with the `req.acl` handlers get (made once). */
  allowedDecision?: AuthzDecision;
}

const allowedDecision: AuthzDecision = { allowed: true };

interface CacheEntry {
  value: ResolvedToken | "not-found";
  expiresMs: number;
}

/** Why a route was refused, or undefined when allowed. */
export function checkRequirement(id: ResolvedToken, need: AuthzRequirement, options: { enableKeyListPolicy: boolean }): string | undefined {
  if (need.resource === "none") return undefined;
  const resource = need.resource as AclResource;
  if (need.access === "list") {
    // Listings are filtered item by item; only a KV listing under enable_key_list_policy needs `list` itself.
    if (resource === "key" && options.enableKeyListPolicy && !id.authz.allowed("key", "list", need.name ?? "")) {
      return permissionDeniedReason(id.accessorId, "key", "list", need.name ?? "");
    }
    return undefined;
  }
  if (need.name !== undefined) {
    return id.authz.allowed(resource, need.access, need.name) ? undefined : permissionDeniedReason(id.accessorId, resource, need.access, need.name);
  }
  // The names come from the body: the endpoint (or the servers) check them; here only whether any could be allowed.
  if (id.authz.anyAllowed(resource, need.access)) return undefined;
  // A node-family write (catalog register, agent checks) may touch only a service: service:write on it is enough there.
  if (resource === "node" && need.access === "write" && id.authz.anyAllowed("service", "write")) return undefined;
  return permissionDeniedReason(id.accessorId, resource, need.access);
}

export class AclRouteAuthorizer implements RouteAuthorizer {
  readonly #o: AclAuthorizerOptions;
  readonly #cache = new Map<string, CacheEntry>();
  readonly #parsed = new Map<string, PolicyRules>();
  readonly #inflight = new Map<string, Promise<ResolvedToken>>();

  readonly #checkOptions: { enableKeyListPolicy: boolean };

  constructor(options: AclAuthorizerOptions) {
    this.#o = options;
    this.#checkOptions = { enableKeyListPolicy: options.enableKeyListPolicy };
  }

  /** Forget every cached token (a token was changed through this agent). */
  clear(): void {
    this.#cache.clear();
  }

  /**
   * Synchronous while the token is cached (the common case: no promise, no
   * microtask turn per request); a promise only when the servers are asked.
   * Throws (or rejects with) AclNotFoundError for an unknown token.
   */
  authorize(req: HttpRequest, need: AuthzRequirement): AuthzDecision | Promise<AuthzDecision> {
    if (need.resource === "none") return allowedDecision;
    const secret = parseToken(req) || this.#o.defaultToken();
    const id = this.#fresh(secret);
    return id ? this.#decide(id, need) : this.resolve(secret).then((r) => this.#decide(r, need));
  }

  #decide(id: ResolvedToken, need: AuthzRequirement): AuthzDecision {
    const reason = checkRequirement(id, need, this.#checkOptions);
    if (reason !== undefined) return { allowed: false, reason, accessorId: id.accessorId };
    // One decision per resolved token, shared by its requests (it never changes).
    if (!id.allowedDecision) {
      const acl: RequestAcl = { accessorId: id.accessorId, allowed: (r, a, n) => id.authz.allowed(r, a, n) };
      id.allowedDecision = { allowed: true, acl };
    }
    return id.allowedDecision;
  }

  /** A cached answer for a secret while fresh (AclNotFoundError for one the servers did not know), else undefined. */
  #fresh(secret: string): ResolvedToken | undefined {
    const recovery = this.#recovery(secret);
    if (recovery) return recovery;
    const hit = this.#cache.get(secret);
    if (!hit || hit.expiresMs <= this.#o.now()) return undefined;
    if (hit.value === "not-found") throw new AclNotFoundError();
    return hit.value;
  }

  /** What a secret may do: from the cache while fresh, else from the servers (down_policy when none answers). */
  async resolve(secret: string): Promise<ResolvedToken> {
    const fresh = this.#fresh(secret);
    if (fresh) return fresh;
    const hit = this.#cache.get(secret);
    let p = this.#inflight.get(secret);
    if (!p) {
      p = this.#fetch(secret, hit).finally(() => this.#inflight.delete(secret));
      this.#inflight.set(secret, p);
    }
    return await p;
  }

  #recovery(secret: string): ResolvedToken | undefined {
    const token = this.#o.agentRecoveryToken?.() ?? "";
    if (token === "" || !sameSecret(secret, token)) return undefined;
    const node = this.#o.nodeName ?? "";
    if (this.#recoveryToken?.node !== node) {
      const rules = parseRules(`agent ${JSON.stringify(node)} { policy = "write" }\nnode_prefix "" { policy = "read" }`);
      this.#recoveryToken = { node, value: { accessorId: `agent-recovery:${node}`, authz: new Authorizer(mergeRules([rules]), { defaultAllow: false }) } };
    }
    return this.#recoveryToken.value;
  }
  #recoveryToken: { node: string; value: ResolvedToken } | undefined;

  async #fetch(secret: string, stale: CacheEntry | undefined): Promise<ResolvedToken> {
    let reply: AclResolveReply;
    try {
      reply = await this.#o.resolve(secret);
    } catch (err) {
      if (err instanceof AclNotFoundError) {
        // Not remembered (Consul's resolver drops it from its cache too): a token
        // created a moment later, such as the initial management token a new
        // leader stores, must work at once, not after token_ttl.
        this.#cache.delete(secret);
        throw err;
      }
      // No server answered: down_policy.
      const down = this.#o.downPolicy;
      if ((down === "extend-cache" || down === "async-cache") && stale) {
        if (stale.value === "not-found") throw new AclNotFoundError();
        return stale.value;
      }
      const allow = down === "allow";
      return { accessorId: "", authz: new Authorizer(mergeRules([]), { defaultAllow: allow }) };
    }
    const parts: PolicyRules[] = [];
    for (const text of reply.rules) {
      let rules = this.#parsed.get(text);
      if (!rules) {
        try {
          rules = parseRules(text);
        } catch (err) {
          if (err instanceof AclRuleError) continue;
          throw err;
        }
        if (this.#parsed.size > 10_000) this.#parsed.clear();
        this.#parsed.set(text, rules);
      }
      parts.push(rules);
    }
    const value = { accessorId: reply.accessorId, authz: new Authorizer(mergeRules(parts), { defaultAllow: reply.defaultAllow }) };
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(secret, { value, expiresMs: this.#o.now() + this.#o.tokenTtlMs });
    return value;
  }
}

/** Equal secrets, compared in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
