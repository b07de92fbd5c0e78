// Session writes and reads (consul agent/consul/state/session.go). Creating
// checks the node and the bound checks; invalidating releases (or, with
// behavior "delete", deletes) the session's held keys and gives each a lock
// delay, and deletes the prepared queries bound to the session. Lock delays
// are not replicated state: each server computes them from the leader's wall
// clock carried in the command, as Consul's kvsLockDelay.

import { StateError } from "../errors.ts";
import type { Session } from "../rpc/methods.ts";
import { checkKey, nodeKey, serviceKey } from "./catalog_schema.ts";
import type { Indexed } from "./kvs.ts";
import { kvsSessionInvalidateTxn } from "./kvs.ts";
import { preparedQueriesDeleteBySessionTxn } from "./prepared_query.ts";
import { makeSession } from "./session.ts";
import type { Tables } from "./schema.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

/** Key → wall-clock ms until which a lock on it may not be acquired. Per store (its Tables object). */
const lockDelays = new WeakMap<Tables, Map<string, number>>();

/** Until when (wall-clock ms) the key may not be locked; 0 when free. */
export function kvsLockDelayUntil(tx: ReadTxn, key: string, nowMs: number): number {
  const m = lockDelays.get(tx.tables);
  const until = m?.get(key);
  if (until === undefined) return 0;
  if (until <= nowMs) {
    m!.delete(key);
    return 0;
  }
  return until;
}

function setLockDelay(tables: Tables, key: string, until: number): void {
  let m = lockDelays.get(tables);
  if (!m) lockDelays.set(tables, (m = new Map()));
  const prev = m.get(key) ?? 0;
  if (until > prev) m.set(key, until);
}

/** A session to create: the fields of Session without indexes, already defaulted and validated for shape. */
export type SessionCreate = Omit<Session, "createIndex" | "modifyIndex">;

/** Consul sessionCreateTxn: the node and every bound check must exist, and no bound check may be critical. */
export function sessionCreateFullTxn(tx: WriteTxn, idx: number, s: SessionCreate): Session {
  if (s.id === "") throw new StateError("Missing session ID");
  if (tx.tables.sessions.get(s.id)) throw new StateError(`Duplicate session ID ${JSON.stringify(s.id)}`);
  const node = tx.tables.nodes.get(nodeKey(s.node));
  if (!node) throw new StateError(`Missing node registration`);
  for (const id of s.nodeChecks) {
    const c = tx.tables.checks.get(checkKey(s.node, id));
    if (!c) throw new StateError(`Missing check '${id}' registration`);
    if (c.status === "critical") throw new StateError(`Check '${id}' is in ${c.status} state`);
  }
  for (const ref of s.serviceChecks) {
    const c = tx.tables.checks.get(checkKey(s.node, ref.id));
    if (!c) throw new StateError(`Missing check '${ref.id}' registration`);
    if (c.status === "critical") throw new StateError(`Check '${ref.id}' is in ${c.status} state`);
    if (c.serviceId !== "" && !tx.tables.services.get(serviceKey(s.node, c.serviceId))) {
      throw new StateError(`Missing service registration`);
    }
  }
  const row = makeSession({ ...s, node: node.node, createIndex: idx, modifyIndex: idx });
  tx.insert(tx.tables.sessions, row);
  tx.setIndex("sessions", idx);
  return row;
}

/**
 * Destroy a session: release (or delete) the keys it holds, each with the
 * session's lock delay from clock.nowMs. Returns whether it existed.
 */
export function sessionInvalidateTxn(tx: WriteTxn, idx: number, clock: { nowMs: number }, id: string): boolean {
  const s = tx.tables.sessions.get(id);
  if (!s) return false;
  const held = kvsSessionInvalidateTxn(tx, idx, id, s.behavior);
  if (s.lockDelayMs > 0 && held.length > 0) {
    const until = clock.nowMs + s.lockDelayMs;
    const tables = tx.tables;
    tx.defer(() => {
      for (const key of held) setLockDelay(tables, key, until);
    });
  }
  // Consul deleteSessionTxn: queries bound to the session go with it.
  preparedQueriesDeleteBySessionTxn(tx, idx, id);
  tx.delete(tx.tables.sessions, id);
  tx.setIndex("sessions", idx);
  return true;
}

/** Session.Get: [] or [session]. */
export function sessionGetReadTxn(tx: ReadTxn, ws: WatchSet | undefined, id: string): Indexed<Session[]> {
  const s = tx.tables.sessions.getWatch(id, ws);
  return { index: tx.maxIndex("sessions"), value: s ? [s] : [] };
}

/** Session.List: every session, by ID. */
export function sessionListTxn(tx: ReadTxn, ws: WatchSet | undefined): Indexed<Session[]> {
  return { index: tx.maxIndex("sessions"), value: tx.tables.sessions.prefix("", ws) };
}

/** Session.NodeSessions. */
export function nodeSessionsTxn(tx: ReadTxn, ws: WatchSet | undefined, node: string): Indexed<Session[]> {
  const all = tx.tables.sessions.prefix("", ws);
  return { index: tx.maxIndex("sessions"), value: all.filter((s) => nodeKey(s.node) === nodeKey(node)) };
}
