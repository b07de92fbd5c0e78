// ACL state (consul agent/consul/state/acl.go): tokens by AccessorID with a
// secondary index by SecretID, policies and roles by ID, and the bootstrap
// row. Written by the ACL commands (MessageTypes 11, 17-20, 23-24), carried
// in snapshots. The leader fills IDs, secrets and times before proposing;
// nothing here reads a clock or makes randomness.
import { isIndex } from "./kvs_schema.ts";
import type { TableSchema } from "./table.ts";
import type { WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

export interface AclLink {
  id: string;
  name: string;
}

export interface AclServiceIdentity {
  serviceName: string;
  datacenters?: string[];
}

export interface AclNodeIdentity {
  nodeName: string;
  datacenter: string;
}

export interface AclToken {
  accessorId: string;
  secretId: string;
  description: string;
  policies: AclLink[];
  roles: AclLink[];
  serviceIdentities: AclServiceIdentity[];
  nodeIdentities: AclNodeIdentity[];
  local: boolean;
  /** Wall clock ms since the epoch, set by the leader. */
  createTimeMs: number;
  /** 0: never expires. */
  expirationTimeMs: number;
  createIndex: number;
  modifyIndex: number;
}

export interface AclPolicy {
  id: string;
  name: string;
  description: string;
  rules: string;
  datacenters: string[];
  createIndex: number;
  modifyIndex: number;
}

export interface AclRole {
  id: string;
  name: string;
  description: string;
  policies: AclLink[];
  serviceIdentities: AclServiceIdentity[];
  nodeIdentities: AclNodeIdentity[];
  createIndex: number;
  modifyIndex: number;
}

/** The bootstrap row: whether bootstrap happened, and the index it happened at (the reset index). */
export interface AclBootstrapRow {
  key: "bootstrap";
  done: boolean;
  modifyIndex: number;
}

export interface AclSecretRow {
  secretId: string;
  accessorId: string;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
const isStr = (v: unknown): v is string => typeof v === "string";
const isStrList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);

function links(v: unknown): AclLink[] | undefined {
  if (v === undefined) return [];
  if (!Array.isArray(v)) return undefined;
  const out: AclLink[] = [];
  for (const l of v) {
    if (!isObj(l) || !isStr(l.id) || !isStr(l.name)) return undefined;
    out.push({ id: l.id, name: l.name });
  }
  return out;
}

function serviceIdentities(v: unknown): AclServiceIdentity[] | undefined {
  if (v === undefined) return [];
  if (!Array.isArray(v)) return undefined;
  const out: AclServiceIdentity[] = [];
  for (const s of v) {
    if (!isObj(s) || !isStr(s.serviceName)) return undefined;
    if (s.datacenters !== undefined && !isStrList(s.datacenters)) return undefined;
    out.push(s.datacenters ? { serviceName: s.serviceName, datacenters: [...s.datacenters] } : { serviceName: s.serviceName });
  }
  return out;
}

function nodeIdentities(v: unknown): AclNodeIdentity[] | undefined {
  if (v === undefined) return [];
  if (!Array.isArray(v)) return undefined;
  const out: AclNodeIdentity[] = [];
  for (const s of v) {
    if (!isObj(s) || !isStr(s.nodeName) || !isStr(s.datacenter)) return undefined;
    out.push({ nodeName: s.nodeName, datacenter: s.datacenter });
  }
  return out;
}

/** A token from a command or a snapshot row; undefined when malformed. Indexes default to `idx`. */
export function aclTokenFrom(raw: unknown, idx?: number): AclToken | undefined {
  if (!isObj(raw) || !isStr(raw.accessorId) || !isStr(raw.secretId) || raw.accessorId === "" || raw.secretId === "") return undefined;
  const policies = links(raw.policies);
  const roles = links(raw.roles);
  const si = serviceIdentities(raw.serviceIdentities);
  const ni = nodeIdentities(raw.nodeIdentities);
  if (!policies || !roles || !si || !ni) return undefined;
  const createIndex = raw.createIndex ?? idx;
  const modifyIndex = raw.modifyIndex ?? idx;
  if (!isIndex(createIndex) || !isIndex(modifyIndex)) return undefined;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : v === undefined ? 0 : NaN);
  const createTimeMs = num(raw.createTimeMs);
  const expirationTimeMs = num(raw.expirationTimeMs);
  if (Number.isNaN(createTimeMs) || Number.isNaN(expirationTimeMs)) return undefined;
  return {
    accessorId: raw.accessorId,
    secretId: raw.secretId,
    description: isStr(raw.description) ? raw.description : "",
    policies,
    roles,
    serviceIdentities: si,
    nodeIdentities: ni,
    local: raw.local === true,
    createTimeMs,
    expirationTimeMs,
    createIndex,
    modifyIndex,
  };
}

export function aclPolicyFrom(raw: unknown, idx?: number): AclPolicy | undefined {
  if (!isObj(raw) || !isStr(raw.id) || !isStr(raw.name) || raw.id === "" || raw.name === "") return undefined;
  if (raw.rules !== undefined && !isStr(raw.rules)) return undefined;
  if (raw.datacenters !== undefined && !isStrList(raw.datacenters)) return undefined;
  const createIndex = raw.createIndex ?? idx;
  const modifyIndex = raw.modifyIndex ?? idx;
  if (!isIndex(createIndex) || !isIndex(modifyIndex)) return undefined;
  return {
    id: raw.id,
    name: raw.name,
    description: isStr(raw.description) ? raw.description : "",
    rules: (raw.rules as string | undefined) ?? "",
    datacenters: [...((raw.datacenters as string[] | undefined) ?? [])],
    createIndex,
    modifyIndex,
  };
}

export function aclRoleFrom(raw: unknown, idx?: number): AclRole | undefined {
  if (!isObj(raw) || !isStr(raw.id) || !isStr(raw.name) || raw.id === "" || raw.name === "") return undefined;
  const policies = links(raw.policies);
  const si = serviceIdentities(raw.serviceIdentities);
  const ni = nodeIdentities(raw.nodeIdentities);
  if (!policies || !si || !ni) return undefined;
  const createIndex = raw.createIndex ?? idx;
  const modifyIndex = raw.modifyIndex ?? idx;
  if (!isIndex(createIndex) || !isIndex(modifyIndex)) return undefined;
  return { id: raw.id, name: raw.name, description: isStr(raw.description) ? raw.description : "", policies, serviceIdentities: si, nodeIdentities: ni, createIndex, modifyIndex };
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

export const aclTokensSchema: TableSchema<AclToken> = {
  name: "acl_tokens",
  keyOf: (t) => t.accessorId,
  fromRecord: (raw) => {
    const t = aclTokenFrom(raw);
    return t && isObj(raw) && raw.createIndex !== undefined ? deepFreeze(t) : undefined;
  },
};

export const aclTokenSecretsSchema: TableSchema<AclSecretRow> = {
  name: "acl_token_secrets",
  keyOf: (r) => r.secretId,
  fromRecord: (raw) => (isObj(raw) && isStr(raw.secretId) && isStr(raw.accessorId) ? Object.freeze({ secretId: raw.secretId, accessorId: raw.accessorId }) : undefined),
};

export const aclPoliciesSchema: TableSchema<AclPolicy> = {
  name: "acl_policies",
  keyOf: (p) => p.id,
  fromRecord: (raw) => {
    const p = aclPolicyFrom(raw);
    return p && isObj(raw) && raw.createIndex !== undefined ? deepFreeze(p) : undefined;
  },
};

export const aclRolesSchema: TableSchema<AclRole> = {
  name: "acl_roles",
  keyOf: (r) => r.id,
  fromRecord: (raw) => {
    const r = aclRoleFrom(raw);
    return r && isObj(raw) && raw.createIndex !== undefined ? deepFreeze(r) : undefined;
  },
};

export const aclMetaSchema: TableSchema<AclBootstrapRow> = {
  name: "acl_meta",
  keyOf: (r) => r.key,
  fromRecord: (raw) => (isObj(raw) && raw.key === "bootstrap" && typeof raw.done === "boolean" && isIndex(raw.modifyIndex) ? Object.freeze({ key: "bootstrap", done: raw.done, modifyIndex: raw.modifyIndex }) : undefined),
};

/** Every ACL table name, for the index a blocking read reports. */
export const aclTableNames = ["acl_tokens", "acl_policies", "acl_roles"] as const;

// ---- reads ----

interface AclReadable {
  tables: {
    acl_tokens: { getWatch(k: string, ws?: WatchSet): AclToken | undefined; all(): AclToken[]; get(k: string): AclToken | undefined };
    acl_token_secrets: { get(k: string): AclSecretRow | undefined };
    acl_policies: { getWatch(k: string, ws?: WatchSet): AclPolicy | undefined; all(): AclPolicy[]; get(k: string): AclPolicy | undefined };
    acl_roles: { getWatch(k: string, ws?: WatchSet): AclRole | undefined; all(): AclRole[]; get(k: string): AclRole | undefined };
    acl_meta: { get(k: string): AclBootstrapRow | undefined };
  };
}

export function aclTokenBySecret(state: AclReadable, secretId: string): AclToken | undefined {
  const row = state.tables.acl_token_secrets.get(secretId);
  return row ? state.tables.acl_tokens.get(row.accessorId) : undefined;
}

export function aclPolicyByName(state: AclReadable, name: string): AclPolicy | undefined {
  return state.tables.acl_policies.all().find((p) => p.name === name);
}

export function aclRoleByName(state: AclReadable, name: string): AclRole | undefined {
  return state.tables.acl_roles.all().find((r) => r.name === name);
}

export function aclBootstrapState(state: AclReadable): AclBootstrapRow | undefined {
  return state.tables.acl_meta.get("bootstrap");
}

// ---- writes ----

function stamp<T extends { createIndex: number; modifyIndex: number }>(row: T, prev: { createIndex: number } | undefined, idx: number): T {
  return deepFreeze({ ...row, createIndex: prev?.createIndex ?? idx, modifyIndex: idx });
}

export function aclTokenSetTxn(tx: WriteTxn, idx: number, token: AclToken): void {
  const prev = tx.tables.acl_tokens.get(token.accessorId);
  if (prev && prev.secretId !== token.secretId) tx.delete(tx.tables.acl_token_secrets, prev.secretId);
  tx.insert(tx.tables.acl_tokens, stamp(token, prev, idx));
  tx.insert(tx.tables.acl_token_secrets, Object.freeze({ secretId: token.secretId, accessorId: token.accessorId }));
  tx.setIndex("acl_tokens", idx);
}

export function aclTokenDeleteTxn(tx: WriteTxn, idx: number, accessorId: string): boolean {
  const prev = tx.delete(tx.tables.acl_tokens, accessorId);
  if (!prev) return false;
  tx.delete(tx.tables.acl_token_secrets, prev.secretId);
  tx.setIndex("acl_tokens", idx);
  return true;
}

export function aclPolicySetTxn(tx: WriteTxn, idx: number, policy: AclPolicy): void {
  const prev = tx.tables.acl_policies.get(policy.id);
  tx.insert(tx.tables.acl_policies, stamp(policy, prev, idx));
  tx.setIndex("acl_policies", idx);
}

export function aclRoleSetTxn(tx: WriteTxn, idx: number, role: AclRole): void {
  const prev = tx.tables.acl_roles.get(role.id);
  tx.insert(tx.tables.acl_roles, stamp(role, prev, idx));
  tx.setIndex("acl_roles", idx);
}

// ---- commands ----

type Writable = { write<R>(idx: number, fn: (tx: WriteTxn) => R): R } & AclReadable;

/**
 * ACLBootstrap `{ token, resetIndex? }`: store the first management token
 * once. After bootstrap only a matching reset index (from the
 * acl-bootstrap-reset file, checked again here) allows it again. Returns
 * the stored token, or an Error with Consul's text.
 */
export function applyAclBootstrapCommand(state: Writable, index: number, cmd: Record<string, unknown>): unknown {
  const token = aclTokenFrom(cmd.token, index);
  if (!token) return new Error("Invalid ACL bootstrap request: malformed token");
  const row = aclBootstrapState(state);
  if (row?.done && cmd.resetIndex !== row.modifyIndex) {
    return new Error(`ACL bootstrap no longer allowed (reset index: ${row.modifyIndex})`);
  }
  return state.write(index, (tx) => {
    aclTokenSetTxn(tx, index, token);
    tx.insert(tx.tables.acl_meta, Object.freeze({ key: "bootstrap" as const, done: true, modifyIndex: index }));
    tx.setIndex("acl_meta", index);
    return tx.tables.acl_tokens.get(token.accessorId);
  });
}

/**
 * A name two policies (or roles) would share once `batch` is stored, or
 * undefined. A stored row the batch replaces counts under its new name, so a
 * batch may swap names (ACL replication brings renames as they are).
 */
function nameClash(stored: readonly { id: string; name: string }[], batch: readonly { id: string; name: string }[]): string | undefined {
  const byName = new Map<string, string>();
  const replaced = new Set(batch.map((x) => x.id));
  for (const x of stored) if (!replaced.has(x.id)) byName.set(x.name, x.id);
  for (const x of batch) {
    const other = byName.get(x.name);
    if (other !== undefined && other !== x.id) return x.name;
    byName.set(x.name, x.id);
  }
  return undefined;
}

/** ACLTokenSet `{ tokens }`; ACLTokenDelete `{ accessorIds }`; likewise for policies and roles. */
export function applyAclSetCommand(state: Writable, index: number, cmd: Record<string, unknown>, kind: "token" | "policy" | "role"): unknown {
  const list = cmd.items;
  if (!Array.isArray(list)) return new Error(`Invalid ACL ${kind} request: no items`);
  if (kind === "token") {
    const rows = list.map((t) => aclTokenFrom(t, index));
    if (rows.some((r) => !r)) return new Error("Invalid ACL token request: malformed token");
    for (const t of rows) {
      const bySecret = state.tables.acl_token_secrets.get(t!.secretId);
      if (bySecret && bySecret.accessorId !== t!.accessorId) return new Error("Invalid Token: SecretID is already in use");
    }
    return state.write(index, (tx) => {
      for (const t of rows) aclTokenSetTxn(tx, index, t!);
      return rows.map((t) => tx.tables.acl_tokens.get(t!.accessorId));
    });
  }
  if (kind === "policy") {
    const rows = list.map((p) => aclPolicyFrom(p, index));
    if (rows.some((r) => !r)) return new Error("Invalid ACL policy request: malformed policy");
    const clash = nameClash(state.tables.acl_policies.all(), rows as AclPolicy[]);
    if (clash !== undefined) return new Error(`Invalid Policy: A Policy with Name "${clash}" already exists`);
    return state.write(index, (tx) => {
      for (const p of rows) aclPolicySetTxn(tx, index, p!);
      return rows.map((p) => tx.tables.acl_policies.get(p!.id));
    });
  }
  const rows = list.map((r) => aclRoleFrom(r, index));
  if (rows.some((r) => !r)) return new Error("Invalid ACL role request: malformed role");
  const clash = nameClash(state.tables.acl_roles.all(), rows as AclRole[]);
  if (clash !== undefined) return new Error(`Invalid Role: A Role with Name "${clash}" already exists`);
  return state.write(index, (tx) => {
    for (const r of rows) aclRoleSetTxn(tx, index, r!);
    return rows.map((r) => tx.tables.acl_roles.get(r!.id));
  });
}

export function applyAclDeleteCommand(state: Writable, index: number, cmd: Record<string, unknown>, kind: "token" | "policy" | "role"): unknown {
  const ids = cmd.ids;
  if (!isStrList(ids)) return new Error(`Invalid ACL ${kind} delete request: no ids`);
  return state.write(index, (tx) => {
    let n = 0;
    for (const id of ids) {
      if (kind === "token") {
        if (aclTokenDeleteTxn(tx, index, id)) n++;
      } else {
        const table = kind === "policy" ? tx.tables.acl_policies : tx.tables.acl_roles;
        if (tx.delete(table as never, id)) {
          n++;
          tx.setIndex(kind === "policy" ? "acl_policies" : "acl_roles", index);
        }
      }
    }
    return n;
  });
}
