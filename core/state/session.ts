// The `sessions` table (consul agent/consul/state/session.go). A session ties
// KV locks to a node and its health checks; when it is invalidated (destroy,
// node deregistered, a bound check critical, TTL lapsed) its locks are
// released or its keys deleted, and the keys get a lock delay.

import type { Session } from "../rpc/methods.ts";
import type { TableSchema } from "./table.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import { isIndex } from "./kvs_schema.ts";

export type { Session };

/** Consul's default lock delay (15 s). */
export const defaultLockDelayMs = 15_000;

function strList(v: unknown): string[] | undefined {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) && v.every((x) => typeof x === "string") ? [...v] : undefined;
}

/** A frozen Session with fields in a fixed order; missing fields take their defaults. */
export function makeSession(s: Partial<Session> & { id: string; createIndex: number; modifyIndex: number }): Session {
  return Object.freeze({
    id: s.id,
    name: s.name ?? "",
    node: s.node ?? "",
    lockDelayMs: s.lockDelayMs ?? 0,
    behavior: s.behavior ?? "release",
    ttl: s.ttl ?? "",
    nodeChecks: Object.freeze([...(s.nodeChecks ?? [])]) as string[],
    serviceChecks: Object.freeze((s.serviceChecks ?? []).map((c) => Object.freeze({ ...c }))) as Session["serviceChecks"],
    createIndex: s.createIndex,
    modifyIndex: s.modifyIndex,
  });
}

export const sessionsSchema: TableSchema<Session> = {
  name: "sessions",
  keyOf: (row) => row.id,
  fromRecord(raw) {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as Record<string, unknown>;
    if (typeof r.id !== "string" || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    const nodeChecks = strList(r.nodeChecks);
    if (!nodeChecks) return undefined;
    const serviceChecks = r.serviceChecks ?? [];
    if (!Array.isArray(serviceChecks) || !serviceChecks.every((c) => typeof c === "object" && c !== null && typeof c.id === "string")) {
      return undefined;
    }
    if (r.behavior !== undefined && r.behavior !== "release" && r.behavior !== "delete") return undefined;
    for (const f of ["name", "node", "ttl"]) if (r[f] !== undefined && typeof r[f] !== "string") return undefined;
    if (r.lockDelayMs !== undefined && !isIndex(r.lockDelayMs)) return undefined;
    return makeSession({
      id: r.id,
      name: r.name as string | undefined,
      node: r.node as string | undefined,
      lockDelayMs: r.lockDelayMs as number | undefined,
      behavior: r.behavior as Session["behavior"] | undefined,
      ttl: r.ttl as string | undefined,
      nodeChecks,
      serviceChecks: serviceChecks.map((c) => ({ id: c.id as string, ...(typeof c.namespace === "string" ? { namespace: c.namespace } : {}) })),
      createIndex: r.createIndex,
      modifyIndex: r.modifyIndex,
    });
  },
};

/** Insert a session with just an ID, bound to nothing (tests of KV locking use this). */
export function sessionCreateTxn(tx: WriteTxn, idx: number, id: string): void {
  const existing = tx.tables.sessions.get(id);
  tx.insert(tx.tables.sessions, makeSession({ ...existing, id, createIndex: existing?.createIndex ?? idx, modifyIndex: idx }));
  tx.setIndex("sessions", idx);
}

export function sessionGetTxn(tx: ReadTxn, id: string): Session | undefined {
  return tx.tables.sessions.get(id);
}
