// Catalog operations (consul agent/consul/state/catalog.go): register and
// deregister nodes, services and checks; the reads behind /v1/catalog and
// /v1/health. Writes stamp createIndex/modifyIndex with the Raft index and
// raise the per-table index and the per-service "service.<name>" index, so a
// blocking query on one service wakes only for changes that touch it.

import { StateError } from "../errors.ts";
import type {
  CatalogDeregisterArgs,
  CatalogRegisterArgs,
  CheckServiceNode,
  CheckStatus,
  HealthCheck,
  HealthCheckInput,
  Node,
  NodeService,
  NodeServiceInput,
  ServiceNode,
} from "../rpc/methods.ts";
import {
  checkIndexRow,
  checkKey,
  checkServicePrefix,
  deepFreeze,
  keySep,
  nodeKey,
  nodePrefix,
  serviceIndexName,
  serviceKey,
  serviceNamePrefix,
} from "./catalog_schema.ts";
import type { ServiceRow } from "./catalog_schema.ts";
import { deleteNodeCoordinatesTxn } from "./coordinate.ts";
import type { Indexed } from "./kvs.ts";
import { sessionInvalidateTxn } from "./session_ops.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

/** What invalidating sessions needs from the leader: its wall clock when the command was made (for lock delays). */
export interface WriteClock {
  nowMs: number;
}

const checkStatuses: ReadonlySet<string> = new Set(["passing", "warning", "critical"]);

export function isCheckStatus(s: unknown): s is CheckStatus {
  return typeof s === "string" && checkStatuses.has(s);
}

// ---- helpers ----

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function withoutIndexes<T extends { createIndex: number; modifyIndex: number }>(row: T): Omit<T, "createIndex" | "modifyIndex"> {
  const { createIndex: _c, modifyIndex: _m, ...rest } = row;
  return rest;
}

/** Raise "service.<name>" for every service on a node (its health changed). */
function bumpNodeServicesTxn(tx: WriteTxn, idx: number, node: string): void {
  tx.tables.services.scan(nodePrefix(node), (s) => {
    tx.setIndex(serviceIndexName(s.service), idx);
  });
}

export function servicesOfNode(tx: ReadTxn, node: string, ws?: WatchSet): ServiceRow[] {
  return tx.tables.services.prefix(nodePrefix(node), ws);
}

export function checksOfNode(tx: ReadTxn, node: string, ws?: WatchSet): HealthCheck[] {
  return tx.tables.checks.prefix(nodePrefix(node), ws);
}

/**
 * The checks of one service instance ("" = the node-level checks), through the
 * checks_by_service index. Watching the index prefix is enough: every check
 * write rewrites its index row.
 */
export function checksOfService(tx: ReadTxn, node: string, serviceId: string, ws?: WatchSet): HealthCheck[] {
  if (ws) tx.tables.checks_by_service.watches.watchPrefix(ws, checkServicePrefix(node, serviceId));
  return checksOfServiceInto(tx, node, serviceId, []);
}

/** checksOfService appended to `out` (no watch), without a list in between: the service queries call it twice per instance. */
function checksOfServiceInto(tx: ReadTxn, node: string, serviceId: string, out: HealthCheck[]): HealthCheck[] {
  const checks = tx.tables.checks;
  tx.tables.checks_by_service.scan(checkServicePrefix(node, serviceId), (r) => {
    const c = checks.get(r.ref);
    if (c) out.push(c);
  });
  return out;
}

// ---- nodes ----

export function makeNode(input: { node: string; id?: string; address: string; datacenter?: string; taggedAddresses?: Record<string, string>; meta?: Record<string, string> }, createIndex: number, modifyIndex: number): Node {
  return deepFreeze({
    id: input.id ?? "",
    node: input.node,
    address: input.address,
    datacenter: input.datacenter ?? "",
    taggedAddresses: { ...(input.taggedAddresses ?? {}) },
    meta: { ...(input.meta ?? {}) },
    createIndex,
    modifyIndex,
  });
}

/** Insert or update a node (Consul ensureNodeTxn). An unchanged node is not rewritten. */
export function ensureNodeTxn(tx: WriteTxn, idx: number, node: Omit<Node, "createIndex" | "modifyIndex">): void {
  if (node.node === "") throw new StateError("Must provide node");
  const existing = tx.tables.nodes.get(nodeKey(node.node));
  // Only a new node or a changed ID needs the (linear) alias check; anti-entropy re-registers often.
  if (node.id !== "" && existing?.id !== node.id) {
    // A node ID belongs to one node name (Consul: "aliases existing node").
    for (const other of tx.tables.nodes.all()) {
      if (other.id === node.id && nodeKey(other.node) !== nodeKey(node.node)) {
        throw new StateError(`Error ensuring node: node ID ${JSON.stringify(node.id)} for node ${JSON.stringify(node.node)} aliases existing node ${JSON.stringify(other.node)}`);
      }
    }
  }
  if (existing && sameJson(withoutIndexes(existing), node)) return;
  tx.insert(tx.tables.nodes, makeNode(node, existing?.createIndex ?? idx, idx));
  tx.setIndex("nodes", idx);
  bumpNodeServicesTxn(tx, idx, node.node);
}

// ---- services ----

export function makeService(node: string, input: NodeServiceInput, createIndex: number, modifyIndex: number): ServiceRow {
  return deepFreeze({
    kind: input.kind ?? "",
    id: input.id || input.service,
    service: input.service,
    tags: [...(input.tags ?? [])],
    address: input.address ?? "",
    taggedAddresses: Object.fromEntries(Object.entries(input.taggedAddresses ?? {}).map(([k, v]) => [k, { address: v.address, port: v.port }])),
    meta: { ...(input.meta ?? {}) },
    port: input.port ?? 0,
    weights: { passing: input.weights?.passing ?? 1, warning: input.weights?.warning ?? 1 },
    enableTagOverride: input.enableTagOverride ?? false,
    createIndex,
    modifyIndex,
    node,
  });
}

/** Insert or update a service instance (Consul ensureServiceTxn); the node must exist. */
export function ensureServiceTxn(tx: WriteTxn, idx: number, node: string, input: NodeServiceInput): void {
  if (input.service === "") throw new StateError("Must provide service name");
  const nodeRow = tx.tables.nodes.get(nodeKey(node));
  if (!nodeRow) throw new StateError(`Missing node registration`);
  const id = input.id || input.service;
  const key = serviceKey(node, id);
  const existing = tx.tables.services.get(key);
  const candidate = makeService(nodeRow.node, { ...input, id }, existing?.createIndex ?? idx, idx);
  if (existing && sameJson(withoutIndexes(existing), withoutIndexes(candidate))) return;
  if (existing && existing.service.toLowerCase() !== candidate.service.toLowerCase()) {
    tx.delete(tx.tables.services_by_name, serviceNamePrefix(existing.service) + key);
    tx.setIndex(serviceIndexName(existing.service), idx);
  }
  tx.insert(tx.tables.services, candidate);
  tx.insert(tx.tables.services_by_name, { key: serviceNamePrefix(candidate.service) + key, ref: key });
  tx.setIndex("services", idx);
  tx.setIndex(serviceIndexName(candidate.service), idx);
  // Keep the denormalised name and tags of the service's checks current.
  let touched = false;
  for (const c of checksOfService(tx, node, id)) {
    if (c.serviceName === candidate.service && sameJson(c.serviceTags, candidate.tags)) continue;
    tx.insert(tx.tables.checks, deepFreeze({ ...c, serviceName: candidate.service, serviceTags: [...candidate.tags], modifyIndex: idx }));
    touched = true;
  }
  if (touched) tx.setIndex("checks", idx);
}

// ---- checks ----

export function makeCheck(node: string, input: HealthCheckInput, service: ServiceRow | undefined, createIndex: number, modifyIndex: number): HealthCheck {
  return deepFreeze({
    node,
    checkId: input.checkId || input.name,
    name: input.name,
    status: input.status ?? "critical",
    notes: input.notes ?? "",
    output: input.output ?? "",
    serviceId: service ? service.id : "",
    serviceName: service ? service.service : "",
    serviceTags: service ? [...service.tags] : [],
    type: input.type ?? "",
    interval: input.interval ?? "",
    timeout: input.timeout ?? "",
    definition: { ...(input.definition ?? {}) },
    createIndex,
    modifyIndex,
  });
}

/** Insert or update a check (Consul ensureCheckTxn); node and service must exist. Critical checks invalidate their sessions. */
export function ensureCheckTxn(tx: WriteTxn, idx: number, clock: WriteClock, node: string, input: HealthCheckInput): void {
  const nodeRow = tx.tables.nodes.get(nodeKey(node));
  if (!nodeRow) throw new StateError(`Missing node registration`);
  const checkId = input.checkId || input.name;
  if (!checkId) throw new StateError("Missing check ID");
  if (input.status !== undefined && !isCheckStatus(input.status)) {
    throw new StateError(`Invalid check status ${JSON.stringify(input.status)}`);
  }
  let service: ServiceRow | undefined;
  if (input.serviceId) {
    service = tx.tables.services.get(serviceKey(node, input.serviceId));
    if (!service) throw new StateError(`Missing service registration`);
  }
  const key = checkKey(node, checkId);
  const existing = tx.tables.checks.get(key);
  const candidate = makeCheck(nodeRow.node, { ...input, checkId }, service, existing?.createIndex ?? idx, idx);
  if (existing && sameJson(withoutIndexes(existing), withoutIndexes(candidate))) return;
  tx.insert(tx.tables.checks, candidate);
  if (existing && existing.serviceId.toLowerCase() !== candidate.serviceId.toLowerCase()) {
    tx.delete(tx.tables.checks_by_service, checkIndexRow(existing).key);
  }
  tx.insert(tx.tables.checks_by_service, checkIndexRow(candidate));
  tx.setIndex("checks", idx);
  if (existing && existing.serviceId !== "" && existing.serviceName !== candidate.serviceName) {
    tx.setIndex(serviceIndexName(existing.serviceName), idx);
  }
  // A node-level check affects every service on the node, before and after the write.
  if (service && !(existing && existing.serviceId === "")) tx.setIndex(serviceIndexName(service.service), idx);
  else bumpNodeServicesTxn(tx, idx, node);
  if (candidate.status === "critical") invalidateCheckSessionsTxn(tx, idx, clock, nodeRow.node, candidate);
}

/** Sessions bound to a check that went critical (or away) are invalidated (Consul checkSessionsTxn). */
function invalidateCheckSessionsTxn(tx: WriteTxn, idx: number, clock: WriteClock, node: string, check: HealthCheck): void {
  const id = check.checkId.toLowerCase();
  const doomed: string[] = [];
  for (const s of tx.tables.sessions.all()) {
    if (nodeKey(s.node) !== nodeKey(node)) continue;
    const bound = check.serviceId === ""
      ? s.nodeChecks.some((c) => c.toLowerCase() === id)
      : s.serviceChecks.some((c) => c.id.toLowerCase() === id) || s.nodeChecks.some((c) => c.toLowerCase() === id);
    if (bound) doomed.push(s.id);
  }
  for (const sid of doomed) sessionInvalidateTxn(tx, idx, clock, sid);
}

// ---- register / deregister ----

/** Consul ensureRegistrationTxn: node (unless skipNodeUpdate and known), then service, then checks. */
export function registerTxn(tx: WriteTxn, idx: number, clock: WriteClock, req: CatalogRegisterArgs & { datacenter?: string }): void {
  if (typeof req.node !== "string" || req.node === "") throw new StateError("Must provide node");
  const known = tx.tables.nodes.get(nodeKey(req.node));
  if (!req.skipNodeUpdate || !known) {
    ensureNodeTxn(tx, idx, {
      // A registration without an ID keeps the node's known one.
      id: req.id || known?.id || "",
      node: req.node,
      address: req.address,
      datacenter: req.datacenter ?? "",
      taggedAddresses: req.taggedAddresses ?? {},
      meta: req.nodeMeta ?? {},
    });
  }
  if (req.service) ensureServiceTxn(tx, idx, req.node, req.service);
  const checks = [...(req.check ? [req.check] : []), ...(req.checks ?? [])];
  for (const c of checks) {
    if (c.node && nodeKey(c.node) !== nodeKey(req.node)) {
      throw new StateError(`Node ${JSON.stringify(c.node)} does not match node ${JSON.stringify(req.node)} of the registration`);
    }
    ensureCheckTxn(tx, idx, clock, req.node, c);
  }
}

export function deleteCheckTxn(tx: WriteTxn, idx: number, clock: WriteClock, node: string, checkId: string): void {
  const key = checkKey(node, checkId);
  const c = tx.tables.checks.get(key);
  if (!c) return;
  tx.delete(tx.tables.checks, key);
  tx.delete(tx.tables.checks_by_service, checkIndexRow(c).key);
  tx.setIndex("checks", idx);
  if (c.serviceId !== "") tx.setIndex(serviceIndexName(c.serviceName), idx);
  else bumpNodeServicesTxn(tx, idx, node);
  invalidateCheckSessionsTxn(tx, idx, clock, node, c);
}

export function deleteServiceTxn(tx: WriteTxn, idx: number, clock: WriteClock, node: string, serviceId: string): void {
  const key = serviceKey(node, serviceId);
  const s = tx.tables.services.get(key);
  if (!s) return;
  for (const c of checksOfService(tx, node, serviceId)) deleteCheckTxn(tx, idx, clock, node, c.checkId);
  tx.delete(tx.tables.services, key);
  tx.delete(tx.tables.services_by_name, serviceNamePrefix(s.service) + key);
  tx.setIndex("services", idx);
  tx.setIndex(serviceIndexName(s.service), idx);
}

export function deleteNodeTxn(tx: WriteTxn, idx: number, clock: WriteClock, node: string): void {
  const row = tx.tables.nodes.get(nodeKey(node));
  if (!row) return;
  for (const s of servicesOfNode(tx, node)) deleteServiceTxn(tx, idx, clock, node, s.id);
  for (const c of checksOfNode(tx, node)) deleteCheckTxn(tx, idx, clock, node, c.checkId);
  for (const s of tx.tables.sessions.all()) {
    if (nodeKey(s.node) === nodeKey(node)) sessionInvalidateTxn(tx, idx, clock, s.id);
  }
  // Consul deleteNodeTxn: the node's coordinates go with it.
  deleteNodeCoordinatesTxn(tx, idx, node);
  tx.delete(tx.tables.nodes, nodeKey(node));
  tx.setIndex("nodes", idx);
}

/** Consul's Deregister: a check, a service (with its checks), or the whole node. Unknown things are a no-op. */
export function deregisterTxn(tx: WriteTxn, idx: number, clock: WriteClock, req: CatalogDeregisterArgs): void {
  if (typeof req.node !== "string" || req.node === "") throw new StateError("Must provide node");
  if (req.serviceId) deleteServiceTxn(tx, idx, clock, req.node, req.serviceId);
  if (req.checkId) deleteCheckTxn(tx, idx, clock, req.node, req.checkId);
  if (!req.serviceId && !req.checkId) deleteNodeTxn(tx, idx, clock, req.node);
}

// ---- reads ----

export function catalogMaxIndex(tx: ReadTxn): number {
  return tx.maxIndex("nodes", "services", "checks");
}

/** Index of everything about one service; the catalog tables' index once it never existed. */
export function serviceMaxIndex(tx: ReadTxn, name: string): number {
  const i = tx.maxIndex(serviceIndexName(name));
  return i > 0 ? i : tx.maxIndex("nodes", "services");
}

export function matchesNodeMeta(node: Node, filters: Record<string, string> | undefined): boolean {
  if (!filters) return true;
  for (const [k, v] of Object.entries(filters)) if (node.meta[k] !== v) return false;
  return true;
}

/** Every node, sorted by name. */
export function nodesTxn(tx: ReadTxn, ws: WatchSet | undefined, metaFilters?: Record<string, string>): Indexed<Node[]> {
  const nodes = tx.tables.nodes.prefix("", ws).filter((n) => matchesNodeMeta(n, metaFilters));
  return { index: tx.maxIndex("nodes"), value: nodes };
}

export function nodeTxn(tx: ReadTxn, ws: WatchSet | undefined, node: string): Node | undefined {
  return tx.tables.nodes.getWatch(nodeKey(node), ws);
}

/** Service name → union of tags (Consul ServiceList / Services). */
export function servicesTxn(
  tx: ReadTxn,
  ws: WatchSet | undefined,
  metaFilters?: Record<string, string>,
  keep?: (sn: ServiceNode) => boolean,
  /** When given, filled with each listed service's number of instances. */
  counts?: Record<string, number>,
): Indexed<Record<string, string[]>> {
  if (ws) {
    tx.tables.services.watches.watchPrefix(ws, "");
    if (metaFilters || keep) tx.tables.nodes.watches.watchPrefix(ws, "");
  }
  const tags = new Map<string, Set<string>>();
  tx.tables.services.scan("", (s) => {
    if (metaFilters || keep) {
      const n = tx.tables.nodes.get(nodeKey(s.node));
      if (!n || !matchesNodeMeta(n, metaFilters)) return;
      if (keep && !keep({ node: n, service: toNodeService(s) })) return;
    }
    let set = tags.get(s.service);
    if (!set) tags.set(s.service, (set = new Set()));
    for (const t of s.tags) set.add(t);
    if (counts) counts[s.service] = (counts[s.service] ?? 0) + 1;
  });
  const out: Record<string, string[]> = {};
  for (const name of [...tags.keys()].sort()) out[name] = [...tags.get(name)!].sort();
  return { index: tx.maxIndex("nodes", "services"), value: out };
}

/**
 * Watch what every answer about one service depends on: its "service.<name>"
 * index. Every write that changes such an answer raises it (the service's
 * rows, its checks, a node-level check or the node of an instance), so one
 * registration replaces one per row read, and writes to other services never
 * wake the watcher.
 */
export function watchService(tx: ReadTxn, ws: WatchSet | undefined, name: string): void {
  if (ws) tx.watchIndex(ws, serviceIndexName(name));
}

/** Instances of one service (watching only that name), in node-then-ID order. */
export function serviceInstancesTxn(tx: ReadTxn, ws: WatchSet | undefined, name: string): ServiceRow[] {
  const out: ServiceRow[] = [];
  const prefix = serviceNamePrefix(name);
  if (ws) tx.tables.services_by_name.watches.watchPrefix(ws, prefix);
  const services = tx.tables.services;
  tx.tables.services_by_name.scan(prefix, (r) => {
    const s = services.get(r.ref);
    if (s) out.push(s);
  });
  return out;
}

export function hasAllTags(s: NodeService, tags: readonly string[] | undefined): boolean {
  if (!tags || tags.length === 0) return true;
  const have = new Set(s.tags.map((t) => t.toLowerCase()));
  return tags.every((t) => have.has(t.toLowerCase()));
}

export function toNodeService(row: ServiceRow): NodeService {
  const { node: _n, ...svc } = row;
  return svc;
}

/** Catalog.ServiceNodes. */
export function serviceNodesTxn(
  tx: ReadTxn,
  ws: WatchSet | undefined,
  q: { name: string; tags?: readonly string[]; nodeMeta?: Record<string, string> },
): Indexed<ServiceNode[]> {
  watchService(tx, ws, q.name);
  const out: ServiceNode[] = [];
  for (const s of serviceInstancesTxn(tx, undefined, q.name)) {
    if (!hasAllTags(s, q.tags)) continue;
    const node = tx.tables.nodes.get(nodeKey(s.node));
    if (!node || !matchesNodeMeta(node, q.nodeMeta)) continue;
    out.push({ node, service: toNodeService(s) });
  }
  return { index: serviceMaxIndex(tx, q.name), value: out };
}

/** Catalog.NodeServices: the node and its services (null when unknown). */
export function nodeServicesTxn(tx: ReadTxn, ws: WatchSet | undefined, node: string): Indexed<{ node: Node; services: NodeService[] } | null> {
  const n = tx.tables.nodes.getWatch(nodeKey(node), ws);
  const index = tx.maxIndex("nodes", "services");
  if (!n) return { index, value: null };
  return { index, value: { node: n, services: servicesOfNode(tx, node, ws).map(toNodeService) } };
}

/** Health.NodeChecks. */
export function nodeChecksTxn(tx: ReadTxn, ws: WatchSet | undefined, node: string): Indexed<HealthCheck[]> {
  return { index: tx.maxIndex("checks"), value: checksOfNode(tx, node, ws) };
}

/** Health.ServiceChecks: the checks of every instance of a service. */
export function serviceChecksTxn(tx: ReadTxn, ws: WatchSet | undefined, name: string, nodeMeta?: Record<string, string>): Indexed<HealthCheck[]> {
  watchService(tx, ws, name);
  const out: HealthCheck[] = [];
  for (const s of serviceInstancesTxn(tx, undefined, name)) {
    if (nodeMeta) {
      const n = tx.tables.nodes.get(nodeKey(s.node));
      if (!n || !matchesNodeMeta(n, nodeMeta)) continue;
    }
    out.push(...checksOfService(tx, s.node, s.id));
  }
  return { index: serviceMaxIndex(tx, name), value: out };
}

/** Health.ChecksInState ("any" = all checks). */
export function checksInStateTxn(tx: ReadTxn, ws: WatchSet | undefined, state: CheckStatus | "any", nodeMeta?: Record<string, string>): Indexed<HealthCheck[]> {
  if (ws && nodeMeta) tx.tables.nodes.watches.watchPrefix(ws, "");
  const out = tx.tables.checks.prefix("", ws).filter((c) => {
    if (state !== "any" && c.status !== state) return false;
    if (nodeMeta) {
      const n = tx.tables.nodes.get(nodeKey(c.node));
      if (!n || !matchesNodeMeta(n, nodeMeta)) return false;
    }
    return true;
  });
  return { index: tx.maxIndex("checks"), value: out };
}

/** Health.ServiceNodes: each instance with its node checks and its own checks. */
export function checkServiceNodesTxn(
  tx: ReadTxn,
  ws: WatchSet | undefined,
  q: { name: string; tags?: readonly string[]; nodeMeta?: Record<string, string>; passingOnly?: boolean },
): Indexed<CheckServiceNode[]> {
  watchService(tx, ws, q.name);
  const out: CheckServiceNode[] = [];
  for (const s of serviceInstancesTxn(tx, undefined, q.name)) {
    if (!hasAllTags(s, q.tags)) continue;
    const node = tx.tables.nodes.get(nodeKey(s.node));
    if (!node || !matchesNodeMeta(node, q.nodeMeta)) continue;
    // Node-level checks first, then the instance's own (Consul parseCheckServiceNodes).
    const checks = checksOfServiceInto(tx, s.node, s.id, checksOfServiceInto(tx, s.node, "", []));
    if (q.passingOnly && checks.some((c) => c.status !== "passing")) continue;
    out.push({ node, service: toNodeService(s), checks });
  }
  return { index: serviceMaxIndex(tx, q.name), value: out };
}

export { keySep };
