// The catalog tables (consul agent/consul/state/catalog_schema.go): nodes,
// services, checks, and an index table `services_by_name` that maps a
// service name to its instances. Node names, service IDs and check IDs are
// case-insensitive keys, as in Consul (memdb `Lowercase: true`).

import type { HealthCheck, Node, NodeService } from "../rpc/methods.ts";
import { isIndex } from "./kvs_schema.ts";
import type { TableSchema } from "./table.ts";

/** A service row: the instance plus the node it runs on. */
export interface ServiceRow extends NodeService {
  node: string;
}

/** A secondary-index row: `key` = index value + "\x00" + primary key; `ref` = primary key. */
export interface IndexRow {
  key: string;
  ref: string;
}

export const keySep = "\x00";

export function nodeKey(node: string): string {
  return node.toLowerCase();
}

/** Prefix of every service and check row of a node. */
export function nodePrefix(node: string): string {
  return nodeKey(node) + keySep;
}

export function serviceKey(node: string, serviceId: string): string {
  return nodePrefix(node) + serviceId.toLowerCase();
}

export function checkKey(node: string, checkId: string): string {
  return nodePrefix(node) + checkId.toLowerCase();
}

/** Prefix of the checks_by_service rows of one service instance ("" = the node-level checks). */
export function checkServicePrefix(node: string, serviceId: string): string {
  return nodePrefix(node) + serviceId.toLowerCase() + keySep;
}

/** The checks_by_service row of a check. */
export function checkIndexRow(c: { node: string; serviceId: string; checkId: string }): IndexRow {
  const ref = checkKey(c.node, c.checkId);
  return { key: checkServicePrefix(c.node, c.serviceId) + c.checkId.toLowerCase(), ref };
}

export function serviceNamePrefix(name: string): string {
  return name.toLowerCase() + keySep;
}

/** Name of the per-service index entry (Consul "service.<name>" in the index table). */
export function serviceIndexName(name: string): string {
  return `service.${name.toLowerCase()}`;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function isStrMap(v: unknown): v is Record<string, string> {
  return isObj(v) && Object.values(v).every((x) => typeof x === "string");
}

function isStrList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((x) => typeof x === "string");
}

export const nodesSchema: TableSchema<Node> = {
  name: "nodes",
  keyOf: (row) => nodeKey(row.node),
  fromRecord(raw) {
    if (!isObj(raw)) return undefined;
    const r = raw;
    if (typeof r.node !== "string" || typeof r.id !== "string" || typeof r.address !== "string") return undefined;
    if (typeof r.datacenter !== "string" || !isStrMap(r.taggedAddresses) || !isStrMap(r.meta)) return undefined;
    if (!isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    return Object.freeze({
      id: r.id,
      node: r.node,
      address: r.address,
      datacenter: r.datacenter,
      taggedAddresses: Object.freeze({ ...r.taggedAddresses }),
      meta: Object.freeze({ ...r.meta }),
      createIndex: r.createIndex,
      modifyIndex: r.modifyIndex,
    });
  },
};

export const servicesSchema: TableSchema<ServiceRow> = {
  name: "services",
  keyOf: (row) => serviceKey(row.node, row.id),
  fromRecord(raw) {
    if (!isObj(raw)) return undefined;
    const r = raw;
    if (typeof r.node !== "string" || typeof r.id !== "string" || typeof r.service !== "string") return undefined;
    if (typeof r.kind !== "string" || typeof r.address !== "string" || !isIndex(r.port)) return undefined;
    if (!isStrList(r.tags) || !isStrMap(r.meta) || !isObj(r.taggedAddresses) || !isObj(r.weights)) return undefined;
    if (typeof r.enableTagOverride !== "boolean" || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    return deepFreeze({ ...(r as unknown as ServiceRow) });
  },
};

export const checksSchema: TableSchema<HealthCheck> = {
  name: "checks",
  keyOf: (row) => checkKey(row.node, row.checkId),
  fromRecord(raw) {
    if (!isObj(raw)) return undefined;
    const r = raw;
    for (const f of ["node", "checkId", "name", "status", "notes", "output", "serviceId", "serviceName", "type", "interval", "timeout"]) {
      if (typeof r[f] !== "string") return undefined;
    }
    if (!isStrList(r.serviceTags) || !isObj(r.definition) || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) {
      return undefined;
    }
    return deepFreeze({ ...(r as unknown as HealthCheck) });
  },
};

export const servicesByNameSchema: TableSchema<IndexRow> = {
  name: "services_by_name",
  keyOf: (row) => row.key,
  fromRecord(raw) {
    if (!isObj(raw) || typeof raw.key !== "string" || typeof raw.ref !== "string") return undefined;
    return Object.freeze({ key: raw.key, ref: raw.ref });
  },
};

export const checksByServiceSchema: TableSchema<IndexRow> = { ...servicesByNameSchema, name: "checks_by_service" };

/** Freeze an object and every plain object/array inside it. */
export function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v as object)) deepFreeze(x);
  }
  return v;
}
