// The `sessions` table, minimal for now: KV lock/unlock only needs to know a
// session exists. The sessions work extends Session (node, checks, behavior,
// ttl, lockDelay) and adds create/destroy/renew with lock release.

import type { TableSchema } from "./table.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import { isIndex } from "./kvs_schema.ts";

export interface Session {
  id: string;
  createIndex: number;
  modifyIndex: number;
}

export const sessionsSchema: TableSchema<Session> = {
  name: "sessions",
  keyOf: (row) => row.id,
  fromRecord(raw) {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as Record<string, unknown>;
    if (typeof r.id !== "string" || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    return Object.freeze({ ...(r as object), id: r.id, createIndex: r.createIndex, modifyIndex: r.modifyIndex });
  },
};

/** Insert a session with just an ID (tests and the dev path use this until sessions land). */
export function sessionCreateTxn(tx: WriteTxn, idx: number, id: string): void {
  const existing = tx.tables.sessions.get(id);
  tx.insert(tx.tables.sessions, Object.freeze({ id, createIndex: existing?.createIndex ?? idx, modifyIndex: idx }));
  tx.setIndex("sessions", idx);
}

export function sessionGetTxn(tx: ReadTxn, id: string): Session | undefined {
  return tx.tables.sessions.get(id);
}
