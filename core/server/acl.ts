// ACL endpoint family and token resolution on the servers (consul
// agent/consul/acl_endpoint.go, acl.go, acl_server.go). Servers resolve a
// SecretID from their own replicated state into an Authorizer; every
// endpoint that writes or reads data asks `aclAuthorize` with the token the
// request carried, so a leader never takes an agent's word for a decision.
// The leader makes IDs and secrets (an injected UUID source) and creation
// times before proposing; the FSM only stores.
//
// Across datacenters (consul acl_server.go, acl_endpoint.go): a server of a
// datacenter other than `primary_datacenter` (a secondary) keeps what its
// leader replicates from the primary (acl_replication.ts). A token it cannot
// answer for — token replication off, tokens not replicated yet, or a
// replicated token linking a policy that has not arrived — it resolves at
// the primary (`ACL.Resolve` with its own datacenter as the scope), kept for
// acl.token_ttl, with acl.down_policy when the primary does not answer.
// Writes of global objects (policies, roles, global tokens) go to the
// primary; local tokens stay in the datacenter that made them.
import type { Clock } from "../clock/clock.ts";
import { Authorizer, permissionDeniedReason, type Access } from "../acl/authorizer.ts";
import {
  AclRuleError,
  anonymousTokenAccessorId,
  anonymousTokenSecret,
  globalManagementPolicyId,
  globalManagementRules,
  globalReadOnlyPolicyId,
  globalReadOnlyRules,
  mergeRules,
  parseRules,
  type AclResource,
  type PolicyRules,
} from "../acl/policy.ts";
import { AclDisabledError, AclNotFoundError, BadRequestError, DcUnavailableError, NoPathToDatacenterError, NotFoundError, PermissionDeniedError } from "../errors.ts";
import type { AclReadArgs, AclResolveReply, AclWriteArgs, HandlerOptions, Rpc, RpcHandlers } from "../rpc/methods.ts";
import {
  aclBootstrapState,
  aclPolicyByName,
  aclRoleByName,
  aclTableNames,
  aclTokenBySecret,
  type AclLink,
  type AclPolicy,
  type AclRole,
  type AclToken,
} from "../state/acl.ts";
import type { StateStore } from "../state/store.ts";
import type { ServerContext } from "./context.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { noReplication } from "./acl_replication.ts";

/** The server side of `acl {}`. */
export interface AclServerConfig {
  enabled: boolean;
  defaultPolicy: "allow" | "deny";
  /** acl.enable_key_list_policy: KV listings need `list` on the prefix. */
  enableKeyListPolicy?: boolean;
  /** acl.tokens.initial_management: a SecretID the first leader stores as a management token. */
  initialManagement?: string;
  /** IDs and secrets (random UUIDs). */
  uuid: () => string;
  /** The index written in `<data-dir>/acl-bootstrap-reset`, or undefined when there is no such file. */
  readBootstrapReset?: () => number | undefined;
  /** Remove the reset file once it was used. */
  clearBootstrapReset?: () => void;
  /** primary_datacenter: "" or this server's datacenter makes it the primary. */
  primaryDatacenter?: string;
  /** acl.enable_token_replication: a secondary replicates global tokens and may keep local ones. */
  enableTokenReplication?: boolean;
  /** acl.tokens.replication, as the agent holds it now. */
  replicationToken?: () => string;
  /** acl.token_ttl: how long a secondary keeps a token the primary resolved. Default 30 s. */
  tokenTtlMs?: number;
  /** acl.down_policy: what a secondary does when the primary does not answer. Default extend-cache. */
  downPolicy?: "allow" | "deny" | "extend-cache" | "async-cache";
}

/** Where a secondary's resolver asks the primary: the server's router, and monotonic time for its cache. */
export interface AclRemote {
  rpc: () => Rpc | undefined;
  now: () => number;
}

interface RemoteEntry {
  value: { reply: AclResolveReply; identity: AclIdentity } | "not-found";
  /** Monotonic ms; 0: to be asked again before the next use. */
  expiresMs: number;
  /** Made from acl.down_policy because the primary did not answer (not the primary's word). */
  down?: boolean;
}

/** Who is asking and what they may do. */
export interface AclIdentity {
  accessorId: string;
  authz: Authorizer;
  /** Wall-clock ms after which the token is no longer valid; 0: never. */
  expiresMs?: number;
}

const uuidRe = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Synthesized rules of a service identity (consul structs.ACLServiceIdentity.SyntheticPolicy). */
function serviceIdentityRules(name: string): string {
  return `service "${name}" {\n  policy = "write"\n}\nservice "${name}-sidecar-proxy" {\n  policy = "write"\n}\nservice_prefix "" {\n  policy = "read"\n}\nnode_prefix "" {\n  policy = "read"\n}`;
}

/** Synthesized rules of a node identity (consul structs.ACLNodeIdentity.SyntheticPolicy). */
function nodeIdentityRules(name: string): string {
  return `node "${name}" {\n  policy = "write"\n}\nservice_prefix "" {\n  policy = "read"\n}`;
}

/** Resolves SecretIDs against the store; compiled authorizers are kept until an ACL table changes. */
export class AclResolver {
  readonly config: AclServerConfig;
  readonly #state: () => StateStore;
  readonly #datacenter: string;
  #cacheIndex = -1;
  #cacheStore: StateStore | undefined;
  readonly #cache = new Map<string, AclIdentity>();
  readonly #parsed = new Map<string, { modifyIndex: number; rules: PolicyRules }>();
  readonly #remoteCfg: AclRemote | undefined;
  /** Tokens the primary resolved for this secondary, by SecretID. */
  readonly #remote = new Map<string, RemoteEntry>();
  readonly #inflight = new Map<string, Promise<void>>();

  constructor(config: AclServerConfig, state: () => StateStore, datacenter: string, remote?: AclRemote) {
    this.config = config;
    this.#state = state;
    this.#datacenter = datacenter;
    this.#remoteCfg = remote;
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  /** ACLs on and primary_datacenter names another datacenter. */
  get isSecondary(): boolean {
    const primary = this.config.primaryDatacenter ?? "";
    return this.config.enabled && primary !== "" && primary !== this.#datacenter;
  }

  get primaryDatacenter(): string {
    return this.config.primaryDatacenter || this.#datacenter;
  }

  /** Whether tokens may be kept here (consul LocalTokensEnabled): the primary, or a secondary replicating tokens with a replication token. */
  localTokensEnabled(): boolean {
    if (!this.isSecondary) return true;
    return this.config.enableTokenReplication === true && (this.config.replicationToken?.() ?? "") !== "";
  }

  /**
   * Whether this secondary must ask the primary about a secret (consul
   * ResolveIdentityFromToken): always without token replication; with it,
   * while no token was replicated yet, or when the token links a policy or
   * role this datacenter does not have yet.
   */
  remoteNeeded(secret: string | undefined): boolean {
    if (!this.isSecondary) return false;
    if (this.config.enableTokenReplication !== true) return true;
    const state = this.#state();
    const s = secret === undefined || secret === "" ? anonymousTokenSecret : secret;
    const token = aclTokenBySecret(state, s);
    if (!token) return state.maxIndex("acl_tokens") === 0;
    if (token.local) return false;
    const missing = (links: readonly AclLink[], table: "acl_policies" | "acl_roles") => links.some((l) => state.tables[table].get(l.id) === undefined);
    return missing(token.policies, "acl_policies") || missing(token.roles, "acl_roles");
  }

  /**
   * Make sure a secret the primary must resolve is in the cache (a
   * secondary, before a request runs): asked again once its acl.token_ttl
   * is over. When the primary does not answer, acl.down_policy: extend-cache
   * and async-cache keep what was cached; otherwise allow or deny everything
   * for this request. Never throws.
   */
  async prefetch(secret: string | undefined): Promise<void> {
    if (!this.remoteNeeded(secret) || !this.#remoteCfg) return;
    const key = secret ?? "";
    const hit = this.#remote.get(key);
    if (hit && hit.value !== "not-found" && hit.expiresMs > this.#remoteCfg.now()) return;
    let p = this.#inflight.get(key);
    if (!p) {
      p = this.#fetch(key, hit, this.#remoteCfg).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, p);
    }
    await p;
  }

  async #fetch(key: string, stale: RemoteEntry | undefined, remote: AclRemote): Promise<void> {
    const defaultAllow = this.config.defaultPolicy === "allow";
    let reply: AclResolveReply;
    try {
      const rpc = remote.rpc();
      if (!rpc) throw new Error("no route to the primary datacenter");
      reply = await rpc.call("ACL.Resolve", { secret: key, datacenter: this.primaryDatacenter, scope: this.#datacenter });
    } catch (err) {
      if (err instanceof AclNotFoundError) {
        // Not remembered: a token made a moment later in the primary must work at once.
        this.#remote.set(key, { value: "not-found", expiresMs: 0 });
        return;
      }
      const down = this.config.downPolicy ?? "extend-cache";
      if ((down === "extend-cache" || down === "async-cache") && stale) return;
      const allow = down === "allow";
      this.#remote.set(key, { value: { reply: { accessorId: "", rules: [], defaultAllow: allow }, identity: { accessorId: "", authz: new Authorizer(mergeRules([]), { defaultAllow: allow }) } }, expiresMs: 0, down: true });
      return;
    }
    const parts: PolicyRules[] = [];
    for (const text of reply.rules) {
      try {
        parts.push(parseRules(text));
      } catch {
        // the primary checked these rules when they were written; a bad one grants nothing
      }
    }
    const local = { ...reply, defaultAllow };
    if (this.#remote.size > 10_000) this.#remote.clear();
    this.#remote.set(key, {
      value: { reply: local, identity: { accessorId: reply.accessorId, authz: new Authorizer(mergeRules(parts), { defaultAllow }) } },
      expiresMs: remote.now() + Math.max(0, this.config.tokenTtlMs ?? 30_000),
    });
  }

  /**
   * What the primary said about a secret this secondary cannot answer for
   * (after `prefetch`); AclNotFoundError when it does not know it, and
   * DcUnavailableError when it did not answer and nothing was cached: the
   * agent asking applies its own down_policy and keeps nothing.
   */
  remoteReply(secret: string | undefined): AclResolveReply | undefined {
    const hit = this.#remote.get(secret ?? "");
    if (!hit) return undefined;
    if (hit.value === "not-found") throw new AclNotFoundError();
    if (hit.down) throw new DcUnavailableError(this.primaryDatacenter);
    return hit.value.reply;
  }

  /**
   * The rules a token holds, in order: its policies, each role's policies
   * and identities, its own identities. A stored policy comes with its row
   * (its parse is kept by ID and modifyIndex); an identity's rules are made here.
   */
  #rules(token: AclToken, datacenter = this.#datacenter): { text: string; policy?: AclPolicy }[] {
    const state = this.#state();
    const out: { text: string; policy?: AclPolicy }[] = [];
    const addPolicies = (links: readonly AclLink[]) => {
      for (const l of links) {
        const p = state.tables.acl_policies.get(l.id);
        if (p && (p.datacenters.length === 0 || p.datacenters.includes(datacenter))) out.push({ text: p.rules, policy: p });
      }
    };
    const addIdentities = (holder: Pick<AclToken, "serviceIdentities" | "nodeIdentities">) => {
      // A service identity naming datacenters grants only there (Consul gives its synthetic policy those Datacenters).
      for (const si of holder.serviceIdentities) if (!si.datacenters?.length || si.datacenters.includes(datacenter)) out.push({ text: serviceIdentityRules(si.serviceName) });
      for (const ni of holder.nodeIdentities) if (ni.datacenter === datacenter) out.push({ text: nodeIdentityRules(ni.nodeName) });
    };
    addPolicies(token.policies);
    for (const r of token.roles) {
      const role = state.tables.acl_roles.get(r.id);
      if (!role) continue;
      addPolicies(role.policies);
      addIdentities(role);
    }
    addIdentities(token);
    return out;
  }

  /** The rule texts a token holds (policies, roles' policies, identities) in `datacenter` (default this server's). */
  ruleTexts(token: AclToken, datacenter?: string): string[] {
    return this.#rules(token, datacenter || this.#datacenter).map((r) => r.text);
  }

  /** The stored token for a secret ("" or undefined: anonymous), or AclNotFoundError. `nowMs` expires tokens. */
  tokenFor(secret: string | undefined, nowMs: number): AclToken {
    const state = this.#state();
    const s = secret === undefined || secret === "" ? anonymousTokenSecret : secret;
    const token = aclTokenBySecret(state, s);
    if (!token) {
      if (s === anonymousTokenSecret) return anonymousPlaceholder;
      throw new AclNotFoundError();
    }
    if (token.expirationTimeMs > 0 && token.expirationTimeMs <= nowMs) throw new AclNotFoundError();
    return token;
  }

  /**
   * Who the secret is and what it may do; undefined when ACLs are off.
   * The clock is read only for a token that expires or is not cached yet
   * (a clock read per request is not free).
   */
  identify(secret: string | undefined, clock: Pick<Clock, "wallNow">): AclIdentity | undefined {
    if (!this.config.enabled) return undefined;
    if (this.isSecondary && this.remoteNeeded(secret)) {
      const hit = this.#remote.get(secret ?? "");
      if (hit?.value === "not-found") throw new AclNotFoundError();
      if (hit) return hit.value.identity;
    }
    const state = this.#state();
    const idx = state.maxIndex(...aclTableNames);
    if (idx !== this.#cacheIndex || state !== this.#cacheStore) {
      this.#cache.clear();
      this.#cacheIndex = idx;
      this.#cacheStore = state;
    }
    const key = secret ?? "";
    const hit = this.#cache.get(key);
    if (hit && !(hit.expiresMs && hit.expiresMs <= clock.wallNow())) return hit;
    const token = this.tokenFor(secret, clock.wallNow());
    const identity = { accessorId: token.accessorId, authz: this.#compile(token), expiresMs: token.expirationTimeMs };
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(key, identity);
    return identity;
  }

  #compile(token: AclToken): Authorizer {
    const parts: PolicyRules[] = [];
    for (const { text, policy } of this.#rules(token)) {
      if (!policy) {
        parts.push(parseRules(text));
        continue;
      }
      const cached = this.#parsed.get(policy.id);
      if (cached && cached.modifyIndex === policy.modifyIndex) {
        parts.push(cached.rules);
        continue;
      }
      let rules: PolicyRules;
      try {
        rules = parseRules(text);
      } catch {
        continue; // stored rules were checked when written; a bad one grants nothing
      }
      this.#parsed.set(policy.id, { modifyIndex: policy.modifyIndex, rules });
      parts.push(rules);
    }
    return new Authorizer(mergeRules(parts), { defaultAllow: this.config.defaultPolicy === "allow" });
  }
}

const anonymousPlaceholder: AclToken = Object.freeze({
  accessorId: anonymousTokenAccessorId,
  secretId: anonymousTokenSecret,
  description: "Anonymous Token",
  policies: [],
  roles: [],
  serviceIdentities: [],
  nodeIdentities: [],
  local: false,
  createTimeMs: 0,
  expirationTimeMs: 0,
  createIndex: 0,
  modifyIndex: 0,
});

/**
 * Check one permission for the token a request carried; throws
 * PermissionDeniedError (Consul's attributed text) or AclNotFoundError.
 * Returns the identity (undefined with ACLs off) for further checks.
 */
export function aclAuthorize(ctx: ServerContext, token: string | undefined, resource: AclResource, access: Access, name?: string): AclIdentity | undefined {
  const id = ctx.acl?.identify(token, ctx.clock);
  if (id && !id.authz.allowed(resource, access, name ?? "")) throw new PermissionDeniedError(permissionDeniedReason(id.accessorId, resource, access, name));
  return id;
}

/** The identity of a request's token (undefined with ACLs off), for endpoints that filter. */
export function aclIdentity(ctx: ServerContext, token: string | undefined): AclIdentity | undefined {
  return ctx.acl?.identify(token, ctx.clock);
}

/** A new ID from the configured source (random UUIDs) that `taken` does not hold yet. */
function uniqueId(config: AclServerConfig, taken: (id: string) => boolean): string {
  for (;;) {
    const id = config.uuid();
    if (!taken(id)) return id;
  }
}

/** A token of the global-management policy (the bootstrap token, the initial management token). */
function managementToken(accessorId: string, secretId: string, description: string, createTimeMs: number): AclToken {
  return {
    accessorId,
    secretId,
    description,
    policies: [{ id: globalManagementPolicyId, name: "global-management" }],
    roles: [],
    serviceIdentities: [],
    nodeIdentities: [],
    local: false,
    createTimeMs,
    expirationTimeMs: 0,
    createIndex: 0,
    modifyIndex: 0,
  };
}

// ---- endpoint family ----

type AclHandlers = Pick<RpcHandlers, "ACL.Bootstrap" | "ACL.Write" | "ACL.Read" | "ACL.Resolve" | "ACL.ReplicationStatus">;

/** What `/v1/acl/replication` says where no replication runs (the primary; Consul's zero status). */

/** The server's router, for calls to the primary datacenter. */
function primaryRpc(ctx: ServerContext, primary: string): Rpc {
  const rpc = ctx.remote?.();
  if (!rpc) throw new NoPathToDatacenterError(primary);
  return rpc;
}

/**
 * Whether an ACL write in a secondary belongs to the primary (consul
 * TokenSet, TokenDelete, TokenClone, PolicySet, RoleSet): every policy and
 * role, and every token but a local one of this datacenter.
 */
function writeGoesToPrimary(state: StateStore, args: AclWriteArgs): boolean {
  if (args.kind !== "token") return true;
  const item = isObj(args.item) ? args.item : {};
  if (args.op === "create") return item.local !== true;
  const id = args.op === "update" ? (typeof item.accessorId === "string" ? item.accessorId : "") : (args.id ?? "");
  const stored = state.tables.acl_tokens.get(id);
  return stored ? !stored.local : !(args.op === "update" && item.local === true);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Links as a read shows them (consul state fixupTokenPolicyLinks,
 * fixupTokenRoleLinks, fixupRolePolicyLinks): a link to a policy or role
 * deleted since is left out, and each name is the linked item's name now.
 */
function liveLinks(st: StateStore, links: readonly AclLink[], table: "acl_policies" | "acl_roles"): AclLink[] {
  const out: AclLink[] = [];
  for (const l of links) {
    const row = st.tables[table].get(l.id);
    if (row) out.push(row.name === l.name ? l : { id: l.id, name: row.name });
  }
  return out;
}

/** A token as endpoints answer it (the SecretID only for acl:write holders or the token itself), its links live. */
function tokenOut(st: StateStore, t: AclToken, showSecret: boolean): Record<string, unknown> {
  return { ...t, policies: liveLinks(st, t.policies, "acl_policies"), roles: liveLinks(st, t.roles, "acl_roles"), secretId: showSecret ? t.secretId : "<hidden>" };
}

/** A role as endpoints answer it, its policy links live. */
function roleOut(st: StateStore, r: AclRole): Record<string, unknown> {
  return { ...r, policies: liveLinks(st, r.policies, "acl_policies") };
}

function requireAcl(ctx: ServerContext): NonNullable<ServerContext["acl"]> {
  if (!ctx.acl?.enabled) throw new AclDisabledError();
  return ctx.acl;
}

function linksFrom(state: StateStore, raw: unknown, kind: "policy" | "role"): AclLink[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new BadRequestError(`Invalid ${kind === "policy" ? "Policies" : "Roles"}: expected a list`);
  const out: AclLink[] = [];
  for (const l of raw) {
    if (!isObj(l)) throw new BadRequestError(`Invalid ${kind} link`);
    const id = typeof l.id === "string" ? l.id : "";
    const name = typeof l.name === "string" ? l.name : "";
    let found: AclPolicy | AclRole | undefined;
    if (id !== "") found = kind === "policy" ? state.tables.acl_policies.get(id) : state.tables.acl_roles.get(id);
    else if (name !== "") found = kind === "policy" ? aclPolicyByName(state, name) : aclRoleByName(state, name);
    else throw new BadRequestError(`${kind === "policy" ? "Policy" : "Role"} link has neither ID nor Name`);
    if (!found) throw new BadRequestError(kind === "policy" ? `cannot find policy ${id || name}` : `cannot find role ${id || name}`);
    if (!out.some((x) => x.id === found!.id)) out.push({ id: found.id, name: found.name });
  }
  return out;
}

function strField(v: unknown, field: string): string {
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new BadRequestError(`Invalid ${field}: expected a string`);
  return v;
}

export function aclEndpoints(ctx: ServerContext): AclHandlers {
  const state = () => ctx.fsm.state;
  // Every endpoint that makes IDs has checked requireAcl first.
  const newId = (taken: (id: string) => boolean): string => uniqueId(requireAcl(ctx).config, taken);

  async function apply(type: number, body: Record<string, unknown>, options?: HandlerOptions): Promise<{ index: number; result: unknown }> {
    return await raftApply(ctx, encodeCommand(type, body), options);
  }

  function buildToken(raw: Record<string, unknown>, prev: AclToken | undefined): AclToken {
    const s = state();
    let accessorId = strField(raw.accessorId, "AccessorID");
    let secretId = strField(raw.secretId, "SecretID");
    if (prev) {
      accessorId = prev.accessorId;
      if (secretId !== "" && secretId !== prev.secretId) throw new BadRequestError("Changing a token's SecretID is not permitted");
      secretId = prev.secretId;
    } else {
      if (accessorId !== "") {
        if (!uuidRe.test(accessorId)) throw new BadRequestError("Invalid Token: AccessorID is not a valid UUID");
        if (s.tables.acl_tokens.get(accessorId)) throw new BadRequestError("Invalid Token: AccessorID is already in use");
      } else accessorId = newId((id) => s.tables.acl_tokens.get(id) !== undefined);
      if (secretId !== "") {
        if (!uuidRe.test(secretId)) throw new BadRequestError("Invalid Token: SecretID is not a valid UUID");
        if (s.tables.acl_token_secrets.get(secretId)) throw new BadRequestError("Invalid Token: SecretID is already in use");
      } else secretId = newId((id) => s.tables.acl_token_secrets.get(id) !== undefined);
    }
    const serviceIdentities = Array.isArray(raw.serviceIdentities) ? raw.serviceIdentities.map((si) => {
      if (!isObj(si) || typeof si.serviceName !== "string" || si.serviceName === "") throw new BadRequestError("Service identity is missing the service name field on this token");
      return Array.isArray(si.datacenters) ? { serviceName: si.serviceName, datacenters: si.datacenters.map(String) } : { serviceName: si.serviceName };
    }) : prev && raw.serviceIdentities === undefined ? prev.serviceIdentities : [];
    const nodeIdentities = Array.isArray(raw.nodeIdentities) ? raw.nodeIdentities.map((ni) => {
      if (!isObj(ni) || typeof ni.nodeName !== "string" || ni.nodeName === "") throw new BadRequestError("Node identity is missing the node name field on this token");
      if (typeof ni.datacenter !== "string" || ni.datacenter === "") throw new BadRequestError("Node identity is missing the datacenter field on this token");
      return { nodeName: ni.nodeName, datacenter: ni.datacenter };
    }) : prev && raw.nodeIdentities === undefined ? prev.nodeIdentities : [];
    const now = ctx.clock.wallNow();
    let expirationTimeMs = prev?.expirationTimeMs ?? 0;
    if (!prev) {
      if (typeof raw.expirationTtlMs === "number" && raw.expirationTtlMs > 0) expirationTimeMs = now + raw.expirationTtlMs;
      else if (typeof raw.expirationTimeMs === "number" && raw.expirationTimeMs > 0) {
        if (raw.expirationTimeMs <= now) throw new BadRequestError("ExpirationTime cannot be in the past");
        expirationTimeMs = raw.expirationTimeMs;
      }
    }
    return {
      accessorId,
      secretId,
      description: raw.description === undefined && prev ? prev.description : strField(raw.description, "Description"),
      policies: raw.policies === undefined && prev ? prev.policies : linksFrom(s, raw.policies, "policy"),
      roles: raw.roles === undefined && prev ? prev.roles : linksFrom(s, raw.roles, "role"),
      serviceIdentities,
      nodeIdentities,
      local: prev ? prev.local : raw.local === true,
      createTimeMs: prev?.createTimeMs ?? now,
      expirationTimeMs,
      createIndex: prev?.createIndex ?? 0,
      modifyIndex: 0,
    };
  }

  function buildPolicy(raw: Record<string, unknown>, prev: AclPolicy | undefined): AclPolicy {
    const name = raw.name === undefined && prev ? prev.name : strField(raw.name, "Name");
    if (!/^[A-Za-z0-9\-_]{1,128}$/.test(name)) throw new BadRequestError(`Invalid Policy: invalid Name "${name}"`);
    const rules = raw.rules === undefined && prev ? prev.rules : strField(raw.rules, "Rules");
    try {
      parseRules(rules);
    } catch (err) {
      if (err instanceof AclRuleError) throw new BadRequestError(`Invalid Policy: ${err.message}`);
      throw err;
    }
    if (prev?.id === globalManagementPolicyId) {
      if (name !== prev.name) throw new BadRequestError("Changing the name of the builtin global-management policy is not permitted");
      if (rules !== prev.rules) throw new BadRequestError("Changing the Rules for the builtin global-management policy is not permitted");
    }
    const datacenters = raw.datacenters === undefined && prev ? prev.datacenters : Array.isArray(raw.datacenters) ? raw.datacenters.map(String) : [];
    const s = state();
    return {
      id: prev?.id ?? newId((id) => s.tables.acl_policies.get(id) !== undefined),
      name,
      description: raw.description === undefined && prev ? prev.description : strField(raw.description, "Description"),
      rules,
      datacenters,
      createIndex: prev?.createIndex ?? 0,
      modifyIndex: 0,
    };
  }

  function buildRole(raw: Record<string, unknown>, prev: AclRole | undefined): AclRole {
    const name = raw.name === undefined && prev ? prev.name : strField(raw.name, "Name");
    if (!/^[A-Za-z0-9\-_]{1,256}$/.test(name)) throw new BadRequestError(`Invalid Role: invalid Name "${name}"`);
    const s = state();
    const serviceIdentities = Array.isArray(raw.serviceIdentities)
      ? raw.serviceIdentities.map((si) => {
        if (!isObj(si) || typeof si.serviceName !== "string" || si.serviceName === "") throw new BadRequestError("Service identity is missing the service name field on this role");
        // A role's service identity keeps its datacenters, as a token's does.
        return Array.isArray(si.datacenters) ? { serviceName: si.serviceName, datacenters: si.datacenters.map(String) } : { serviceName: si.serviceName };
      })
      : prev?.serviceIdentities ?? [];
    const nodeIdentities = Array.isArray(raw.nodeIdentities)
      ? raw.nodeIdentities.map((ni) => {
        if (!isObj(ni) || typeof ni.nodeName !== "string" || typeof ni.datacenter !== "string") throw new BadRequestError("Node identity is missing fields on this role");
        return { nodeName: ni.nodeName, datacenter: ni.datacenter };
      })
      : prev?.nodeIdentities ?? [];
    return {
      id: prev?.id ?? newId((id) => s.tables.acl_roles.get(id) !== undefined),
      name,
      description: raw.description === undefined && prev ? prev.description : strField(raw.description, "Description"),
      policies: raw.policies === undefined && prev ? prev.policies : linksFrom(s, raw.policies, "policy"),
      serviceIdentities,
      nodeIdentities,
      createIndex: prev?.createIndex ?? 0,
      modifyIndex: 0,
    };
  }

  return {
    async "ACL.Bootstrap"(_args, options) {
      const acl = requireAcl(ctx);
      // Only the primary bootstraps (consul BootstrapTokens: ErrDisabled elsewhere); ?dc= reaches it.
      if (acl.isSecondary) throw new AclDisabledError();
      requireLeader(ctx);
      const row = aclBootstrapState(state());
      let resetIndex: number | undefined;
      if (row?.done) {
        const specified = acl.config.readBootstrapReset?.();
        if (specified === undefined || specified === 0) throw new PermissionDeniedError(`ACL bootstrap no longer allowed (reset index: ${row.modifyIndex})`);
        if (specified !== row.modifyIndex) throw new BadRequestError(`Invalid bootstrap reset index (specified ${specified}, reset index: ${row.modifyIndex})`);
        resetIndex = specified;
      }
      const s = state();
      const token = managementToken(
        newId((id) => s.tables.acl_tokens.get(id) !== undefined),
        newId((id) => s.tables.acl_token_secrets.get(id) !== undefined),
        "Bootstrap Token (Global Management)",
        ctx.clock.wallNow(),
      );
      let result: unknown;
      try {
        ({ result } = await apply(MessageType.ACLBootstrap, { token, resetIndex }, options));
      } catch (err) {
        if (err instanceof Error && err.message.startsWith("ACL bootstrap no longer allowed")) throw new PermissionDeniedError(err.message);
        throw err;
      }
      if (resetIndex !== undefined) acl.config.clearBootstrapReset?.();
      return { ...(result as AclToken) };
    },

    async "ACL.Write"(args: AclWriteArgs, options) {
      const acl = requireAcl(ctx);
      if (acl.isSecondary) {
        // Global objects are the primary's: the write goes there as it is (its request id too, so it applies once).
        if (writeGoesToPrimary(state(), args)) {
          return await primaryRpc(ctx, acl.primaryDatacenter).call("ACL.Write", { ...args, datacenter: acl.primaryDatacenter }, { signal: options?.signal });
        }
        if (!acl.localTokensEnabled()) throw new BadRequestError("Local tokens are disabled");
      }
      const caller = aclAuthorize(ctx, args.token, "acl", "write");
      requireLeader(ctx);
      const kind = args.kind;
      const s = state();
      /** Store one item; the answer is the item as the FSM stored it. */
      const setOne = async (type: number, item: AclToken | AclPolicy | AclRole) => {
        const { index, result } = await apply(type, { items: [item] }, options);
        return { item: { ...(result as Record<string, unknown>[])[0]! }, index };
      };
      /** An update's stored row, named by the item's `id` (400 when there is none); undefined for a create. */
      const previous = <T>(get: (id: string) => T | undefined, id: unknown, field: string, what: string): T | undefined => {
        if (args.op !== "update") return undefined;
        const prev = get(strField(id, field));
        if (!prev) throw new BadRequestError(`Cannot find ${what} "${String(id)}"`);
        return prev;
      };
      if (args.op === "delete") {
        const id = args.id ?? "";
        if (kind === "token") {
          const t = s.tables.acl_tokens.get(id);
          if (!t) return { deleted: false, index: Math.max(1, s.maxIndex("acl_tokens")) };
          if (t.accessorId === anonymousTokenAccessorId) throw new BadRequestError("Delete operation not permitted on the anonymous token");
          if (caller && t.accessorId === caller.accessorId) throw new BadRequestError("Deletion of the request's authorization token is not permitted");
          const { index } = await apply(MessageType.ACLTokenDelete, { ids: [id] }, options);
          return { deleted: true, index };
        }
        if (kind === "policy" && id === globalManagementPolicyId) throw new BadRequestError("Delete operation not permitted on the builtin global-management policy");
        const { index, result } = await apply(kind === "policy" ? MessageType.ACLPolicyDelete : MessageType.ACLRoleDelete, { ids: [id] }, options);
        return { deleted: (result as number) > 0, index };
      }
      if (args.op === "clone") {
        if (kind !== "token") throw new BadRequestError("Only tokens can be cloned");
        const src = s.tables.acl_tokens.get(args.id ?? "");
        if (!src) throw new NotFoundError("Cannot find token to clone");
        if (src.accessorId === anonymousTokenAccessorId) throw new BadRequestError("Cannot clone the anonymous token");
        const item = isObj(args.item) ? args.item : {};
        const t = buildToken({
          description: item.description ?? src.description,
          policies: src.policies,
          roles: src.roles,
          serviceIdentities: src.serviceIdentities,
          nodeIdentities: src.nodeIdentities,
          local: src.local,
        }, undefined);
        t.expirationTimeMs = src.expirationTimeMs;
        return await setOne(MessageType.ACLTokenSet, t);
      }
      const raw = isObj(args.item) ? args.item : {};
      if (kind === "token") {
        return await setOne(MessageType.ACLTokenSet, buildToken(raw, previous((id) => s.tables.acl_tokens.get(id), raw.accessorId, "AccessorID", "token")));
      }
      if (kind === "policy") {
        const p = buildPolicy(raw, previous((id) => s.tables.acl_policies.get(id), raw.id, "ID", "policy"));
        const same = aclPolicyByName(s, p.name);
        if (same && same.id !== p.id) throw new BadRequestError(`Invalid Policy: A Policy with Name "${p.name}" already exists`);
        return await setOne(MessageType.ACLPolicySet, p);
      }
      const r = buildRole(raw, previous((id) => s.tables.acl_roles.get(id), raw.id, "ID", "role"));
      const same = aclRoleByName(s, r.name);
      if (same && same.id !== r.id) throw new BadRequestError(`Invalid Role: A Role with Name "${r.name}" already exists`);
      return await setOne(MessageType.ACLRoleSet, r);
    },

    async "ACL.Read"(args: AclReadArgs, options) {
      const acl = requireAcl(ctx);
      const q = args.query;
      // A secondary without a token store of its own (or that cannot answer for this token yet) asks the primary.
      if (args.kind === "token" && acl.isSecondary && (!acl.localTokensEnabled() || (args.op === "self" && acl.remoteNeeded(q.token)))) {
        return await primaryRpc(ctx, acl.primaryDatacenter).call("ACL.Read", { ...args, query: { ...q, datacenter: acl.primaryDatacenter } }, { signal: options?.signal });
      }
      if (args.op === "self") {
        const token = acl.tokenFor(q.token, ctx.clock.wallNow());
        const { value, meta } = await read(ctx, q, (st) => {
          const t = aclTokenBySecret(st, token.secretId) ?? token;
          return { index: Math.max(1, st.maxIndex("acl_tokens")), value: [tokenOut(st, t, true)] };
        }, options);
        return { items: value, meta };
      }
      const caller = aclAuthorize(ctx, q.token, "acl", "read");
      const showSecrets = caller === undefined || caller.authz.allowed("acl", "write");
      const { value, meta } = await read(ctx, q, (st, ws) => {
        const table = args.kind === "token" ? "acl_tokens" : args.kind === "policy" ? "acl_policies" : "acl_roles";
        const index = Math.max(1, st.maxIndex(table));
        if (args.kind === "token") {
          if (args.op === "get") {
            const t = st.tables.acl_tokens.getWatch(args.id ?? "", ws);
            return { index, value: t ? [tokenOut(st, t, showSecrets)] : [] };
          }
          let all = st.tables.acl_tokens.prefix("", ws);
          if (args.includeLocal === false) all = all.filter((t) => !t.local);
          if (args.policy) all = all.filter((t) => t.policies.some((p) => p.id === args.policy));
          if (args.role) all = all.filter((t) => t.roles.some((r) => r.id === args.role));
          return { index, value: all.map((t) => tokenOut(st, t, showSecrets)) };
        }
        if (args.kind === "policy") {
          if (args.op === "get" || args.op === "name") {
            const p = args.op === "get" ? st.tables.acl_policies.getWatch(args.id ?? "", ws) : aclPolicyByName(st, args.name ?? "");
            if (args.op === "name") st.tables.acl_policies.prefix("", ws);
            return { index, value: p ? [{ ...p }] : [] };
          }
          return { index, value: st.tables.acl_policies.prefix("", ws).map((p) => ({ ...p })) };
        }
        if (args.op === "get" || args.op === "name") {
          const r = args.op === "get" ? st.tables.acl_roles.getWatch(args.id ?? "", ws) : aclRoleByName(st, args.name ?? "");
          if (args.op === "name") st.tables.acl_roles.prefix("", ws);
          return { index, value: r ? [roleOut(st, r)] : [] };
        }
        let all = st.tables.acl_roles.prefix("", ws);
        if (args.policy) all = all.filter((r) => r.policies.some((p) => p.id === args.policy));
        return { index, value: all.map((r) => roleOut(st, r)) };
      }, options);
      return { items: value as Record<string, unknown>[], meta };
    },

    async "ACL.Resolve"(args): Promise<AclResolveReply> {
      const acl = requireAcl(ctx);
      if (acl.remoteNeeded(args.secret)) {
        await acl.prefetch(args.secret);
        const reply = acl.remoteReply(args.secret);
        if (reply) return reply;
      }
      const token = acl.tokenFor(args.secret, ctx.clock.wallNow());
      return { accessorId: token.accessorId, rules: acl.ruleTexts(token, args.scope), defaultAllow: acl.config.defaultPolicy === "allow" };
    },

    async "ACL.ReplicationStatus"(args) {
      requireAcl(ctx);
      // The leader runs replication: its status is the datacenter's (Consul reads it consistently).
      if (!args.query.allowStale) requireLeader(ctx);
      return await Promise.resolve(ctx.aclReplication?.status() ?? { ...noReplication });
    },
  };
}

/**
 * What the first leader (and every new one) makes sure is stored (consul
 * leader.go initializeACLs): the built-in policies, the anonymous token and
 * the initial management token. Returns whether anything was proposed.
 */
export async function initializeAcls(ctx: ServerContext): Promise<boolean> {
  const acl = ctx.acl;
  // A secondary gets the built-in policies and the anonymous token from the primary (replication), never makes its own.
  if (!acl?.enabled || acl.isSecondary || !ctx.consensus.isLeader()) return false;
  const s = ctx.fsm.state;
  let changed = false;
  const policies: AclPolicy[] = [];
  if (!s.tables.acl_policies.get(globalManagementPolicyId)) {
    policies.push({ id: globalManagementPolicyId, name: "global-management", description: "Builtin Policy that grants unlimited access", rules: globalManagementRules, datacenters: [], createIndex: 0, modifyIndex: 0 });
  }
  if (!s.tables.acl_policies.get(globalReadOnlyPolicyId)) {
    policies.push({ id: globalReadOnlyPolicyId, name: "builtin-global-read-only", description: "Builtin Policy that grants unlimited read-only access to all components", rules: globalReadOnlyRules, datacenters: [], createIndex: 0, modifyIndex: 0 });
  }
  if (policies.length) {
    await raftApply(ctx, encodeCommand(MessageType.ACLPolicySet, { items: policies }));
    changed = true;
  }
  const now = ctx.clock.wallNow();
  const tokens: AclToken[] = [];
  /** The initial management token counts as the bootstrap when none happened (Consul: bootstrap is then refused). */
  const bootstrapTokens: AclToken[] = [];
  if (!s.tables.acl_tokens.get(anonymousTokenAccessorId)) {
    tokens.push({ ...anonymousPlaceholder, policies: [], roles: [], serviceIdentities: [], nodeIdentities: [], createTimeMs: now });
  }
  const initial = acl.config.initialManagement;
  if (initial && !aclTokenBySecret(s, initial)) {
    const bootstrapped = aclBootstrapState(s)?.done === true;
    const accessorId = uniqueId(acl.config, (id) => s.tables.acl_tokens.get(id) !== undefined);
    (bootstrapped ? tokens : bootstrapTokens).push(managementToken(accessorId, initial, "Initial Management Token", now));
  }
  if (tokens.length) {
    await raftApply(ctx, encodeCommand(MessageType.ACLTokenSet, { items: tokens }));
    changed = true;
  }
  for (const token of bootstrapTokens) {
    await raftApply(ctx, encodeCommand(MessageType.ACLBootstrap, { token }));
    changed = true;
  }
  return changed;
}
