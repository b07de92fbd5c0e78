// Catalog reconcile (consul agent/consul/leader.go `reconcileMember`): what
// the leader registers or deregisters so that every LAN member is a catalog
// node with a `serfHealth` check following its gossip state (alive →
// passing, failed → critical, which invalidates the sessions bound to it),
// servers also get the `consul` service on their RPC port, and left, reaped
// or vanished members are deregistered. Pure: a member and the catalog's
// view of it in, an action out.
import type { CatalogRegisterArgs, HealthCheck, NodeService } from "../../rpc/methods.ts";
import { serfCheckAliveOutput, serfCheckFailedOutput, serfHealthRegistration } from "../catalog.ts";
import type { MemberLike } from "./membership.ts";

/** Consul's structs.ConsulServiceID / ConsulServiceName. */
export const consulServiceId = "consul";
export const consulServiceName = "consul";

/** What to do about one member (pure; tested directly). */
export type MemberAction =
  | { op: "none" }
  | { op: "register"; args: CatalogRegisterArgs }
  | { op: "deregister"; node: string };

/** The catalog's view of one node, as the reconcile reads it. */
export interface CatalogNodeView {
  id: string;
  address: string;
  serfHealth?: Pick<HealthCheck, "status" | "output">;
  consulService?: Pick<NodeService, "port">;
}

/** The `consul` service of a server member, or undefined for clients (Consul handleAliveMember). */
export function consulServiceOf(m: MemberLike): { id: string; service: string; port: number; meta: Record<string, string> } | undefined {
  const t = m.tags ?? {};
  if (t.role !== "consul") return undefined;
  const port = Number(t.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  const meta: Record<string, string> = {};
  if (t.raft_vsn !== undefined) meta.raft_version = t.raft_vsn;
  if (t.vsn !== undefined) meta.serf_protocol_current = t.vsn;
  if (t.vsn_min !== undefined) meta.serf_protocol_min = t.vsn_min;
  if (t.vsn_max !== undefined) meta.serf_protocol_max = t.vsn_max;
  if (t.build !== undefined) meta.version = t.build.split(":")[0] ?? t.build;
  meta.non_voter = t.nonvoter === "1" ? "true" : "false";
  meta.read_replica = t.read_replica === "1" ? "true" : "false";
  return { id: consulServiceId, service: consulServiceName, port, meta };
}

/**
 * Consul reconcileMember: alive → node + passing serfHealth (+ `consul`
 * service for servers), failed → critical serfHealth, left/reaped → node
 * deregistered (never our own). Already right → "none".
 */
export function memberAction(m: MemberLike, known: CatalogNodeView | undefined, self: string): MemberAction {
  const status = m.status === "reap" ? "reap" : m.status;
  if (status === "left" || status === "reap") {
    if (m.name === self || !known) return { op: "none" };
    return { op: "deregister", node: m.name };
  }
  const id = m.tags?.id ?? "";
  if (status === "alive") {
    const service = consulServiceOf(m);
    const nodeOk = known !== undefined && known.address === m.addr && (id === "" || known.id === id);
    const checkOk = known?.serfHealth?.status === "passing" && known.serfHealth.output === serfCheckAliveOutput;
    const serviceOk = !service || known?.consulService?.port === service.port;
    if (nodeOk && checkOk && serviceOk) return { op: "none" };
    const args = serfHealthRegistration({ name: m.name, id: id || undefined, address: m.addr, alive: true });
    if (nodeOk) args.skipNodeUpdate = true;
    if (service) args.service = service;
    return { op: "register", args };
  }
  if (status === "failed") {
    if (known?.serfHealth?.status === "critical" && known.serfHealth.output === serfCheckFailedOutput) return { op: "none" };
    const args = serfHealthRegistration({ name: m.name, id: id || undefined, address: known?.address || m.addr, alive: false });
    if (known) args.skipNodeUpdate = true;
    return { op: "register", args };
  }
  // "leaving": wait for left (Consul ignores other states).
  return { op: "none" };
}
