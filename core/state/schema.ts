// The list of tables in the state store. A new table (nodes, services,
// checks, coordinates, …) is a TableSchema in its own file plus one line in
// `Tables` and `createTables`; snapshot and restore pick it up from here.

import type { DirEntry } from "../rpc/methods.ts";
import type { HealthCheck, Node } from "../rpc/methods.ts";
import { checksByServiceSchema, checksSchema, nodesSchema, servicesByNameSchema, servicesSchema } from "./catalog_schema.ts";
import type { IndexRow, ServiceRow } from "./catalog_schema.ts";
import { kvsSchema } from "./kvs_schema.ts";
import { preparedQueriesSchema } from "./prepared_query.ts";
import type { PreparedQuery } from "../rpc/methods.ts";
import { sessionsSchema } from "./session.ts";
import type { Session } from "./session.ts";
import { autopilotSchema } from "./autopilot.ts";
import type { AutopilotConfig } from "./autopilot.ts";
import { coordinatesSchema } from "./coordinate.ts";
import type { CoordinateEntry } from "../rpc/methods.ts";
import { Table } from "./table.ts";
import { aclMetaSchema, aclPoliciesSchema, aclRolesSchema, aclTokenSecretsSchema, aclTokensSchema } from "./acl.ts";
import type { AclBootstrapRow, AclPolicy, AclRole, AclSecretRow, AclToken } from "./acl.ts";
import { tombstonesSchema } from "./tombstones.ts";
import type { Tombstone } from "./tombstones.ts";

export interface Tables {
  kvs: Table<DirEntry>;
  tombstones: Table<Tombstone>;
  sessions: Table<Session>;
  nodes: Table<Node>;
  services: Table<ServiceRow>;
  checks: Table<HealthCheck>;
  /** Secondary index: lower(service name) + "\x00" + services key. */
  services_by_name: Table<IndexRow>;
  /** Secondary index: node + "\x00" + lower(service ID, "" for node checks) + "\x00" + lower(check ID) → checks key. */
  checks_by_service: Table<IndexRow>;
  prepared_queries: Table<PreparedQuery>;
  /** One row: the autopilot configuration. */
  autopilot: Table<AutopilotConfig>;
  /** Node + "\x00" + segment → the node's LAN coordinate (written by CoordinateBatchUpdate). */
  coordinates: Table<CoordinateEntry>;
  /** ACL tokens by AccessorID, with the SecretID → AccessorID index; policies and roles by ID; the bootstrap row. */
  acl_tokens: Table<AclToken>;
  acl_token_secrets: Table<AclSecretRow>;
  acl_policies: Table<AclPolicy>;
  acl_roles: Table<AclRole>;
  acl_meta: Table<AclBootstrapRow>;
}

export function createTables(): Tables {
  return {
    kvs: new Table(kvsSchema),
    tombstones: new Table(tombstonesSchema),
    sessions: new Table(sessionsSchema),
    nodes: new Table(nodesSchema),
    services: new Table(servicesSchema),
    checks: new Table(checksSchema),
    services_by_name: new Table(servicesByNameSchema),
    checks_by_service: new Table(checksByServiceSchema),
    prepared_queries: new Table(preparedQueriesSchema),
    autopilot: new Table(autopilotSchema),
    coordinates: new Table(coordinatesSchema),
    acl_tokens: new Table(aclTokensSchema),
    acl_token_secrets: new Table(aclTokenSecretsSchema),
    acl_policies: new Table(aclPoliciesSchema),
    acl_roles: new Table(aclRolesSchema),
    acl_meta: new Table(aclMetaSchema),
  };
}

/** The tables as a list, in snapshot order. */
export function tableList(tables: Tables): Table<object>[] {
  return Object.values(tables) as Table<object>[];
}
