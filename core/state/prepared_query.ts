// The `prepared_queries` table (consul agent/consul/state/prepared_query.go).
// Rows are keyed by ID. Names are unique without regard to case, a name may
// not be another query's ID, there is one template per name prefix (one
// catch-all with the empty name), and a bound session must exist. A query
// bound to a session goes when the session is invalidated (session_ops.ts).
// Resolution: by ID, then by exact name, then the template with the longest
// name prefix of the looked-up name, rendered for that name.

import { NotFoundError, StateError } from "../errors.ts";
import type { PreparedQuery, PreparedQueryBody } from "../rpc/methods.ts";
import type { Indexed } from "./kvs.ts";
import { isIndex } from "./kvs_schema.ts";
import { compileTemplate, isTemplate, renderTemplate } from "./prepared_query_template.ts";
import type { TableSchema } from "./table.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

export const preparedQueriesTable = "prepared_queries";

/** Consul ErrQueryNotFound. */
export const queryNotFoundMessage = "Query not found";

const uuidPattern = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;

export function isUuid(s: string): boolean {
  return s.length === 36 && uuidPattern.test(s);
}

const isStr = (v: unknown): v is string => typeof v === "string";
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
const isStrList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isStr);
const isStrMap = (v: unknown): v is Record<string, string> => isObj(v) && Object.values(v).every(isStr);

/** A frozen query with every field present. */
export function makePreparedQuery(q: PreparedQueryBody & { createIndex: number; modifyIndex: number }): PreparedQuery {
  const s = q.service;
  return Object.freeze({
    id: q.id,
    name: q.name,
    session: q.session,
    token: q.token,
    template: Object.freeze({ type: q.template.type, regexp: q.template.regexp, removeEmptyTags: q.template.removeEmptyTags }),
    service: Object.freeze({
      service: s.service,
      failover: Object.freeze({ nearestN: s.failover.nearestN, datacenters: Object.freeze([...s.failover.datacenters]) as string[] }),
      ignoreCheckIds: Object.freeze([...s.ignoreCheckIds]) as string[],
      onlyPassing: s.onlyPassing,
      near: s.near,
      tags: Object.freeze([...s.tags]) as string[],
      nodeMeta: Object.freeze({ ...s.nodeMeta }),
      serviceMeta: Object.freeze({ ...s.serviceMeta }),
      connect: s.connect,
    }),
    dns: Object.freeze({ ttl: q.dns.ttl }),
    createIndex: q.createIndex,
    modifyIndex: q.modifyIndex,
  });
}

/** Check the shape of a query body (a command from the log, a snapshot row); undefined when malformed. */
export function preparedQueryBodyFrom(raw: unknown): PreparedQueryBody | undefined {
  if (!isObj(raw)) return undefined;
  const t = raw.template, s = raw.service, d = raw.dns;
  if (!isStr(raw.id) || !isStr(raw.name) || !isStr(raw.session) || !isStr(raw.token)) return undefined;
  if (!isObj(t) || !isStr(t.type) || !isStr(t.regexp) || typeof t.removeEmptyTags !== "boolean") return undefined;
  if (!isObj(d) || !isStr(d.ttl)) return undefined;
  if (!isObj(s) || !isStr(s.service) || !isStr(s.near) || typeof s.onlyPassing !== "boolean" || typeof s.connect !== "boolean") return undefined;
  const f = s.failover;
  if (!isObj(f) || !Number.isSafeInteger(f.nearestN) || !isStrList(f.datacenters)) return undefined;
  if (!isStrList(s.ignoreCheckIds) || !isStrList(s.tags) || !isStrMap(s.nodeMeta) || !isStrMap(s.serviceMeta)) return undefined;
  return {
    id: raw.id,
    name: raw.name,
    session: raw.session,
    token: raw.token,
    template: { type: t.type, regexp: t.regexp, removeEmptyTags: t.removeEmptyTags },
    service: {
      service: s.service,
      failover: { nearestN: f.nearestN as number, datacenters: [...f.datacenters] },
      ignoreCheckIds: [...s.ignoreCheckIds],
      onlyPassing: s.onlyPassing,
      near: s.near,
      tags: [...s.tags],
      nodeMeta: { ...s.nodeMeta },
      serviceMeta: { ...s.serviceMeta },
      connect: s.connect,
    },
    dns: { ttl: d.ttl },
  };
}

export const preparedQueriesSchema: TableSchema<PreparedQuery> = {
  name: preparedQueriesTable,
  keyOf: (row) => row.id,
  fromRecord(raw) {
    const body = preparedQueryBodyFrom(raw);
    if (!body || body.id === "") return undefined;
    const r = raw as Record<string, unknown>;
    if (!isIndex(r.createIndex) || !isIndex(r.modifyIndex)) return undefined;
    return makePreparedQuery({ ...body, createIndex: r.createIndex, modifyIndex: r.modifyIndex });
  },
};

function sameName(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * Why the state store would refuse to store q (Consul preparedQuerySetTxn), or
 * undefined. The leader asks before proposing; the FSM asks again.
 */
export function preparedQuerySetProblem(tx: ReadTxn, op: "create" | "update", q: PreparedQueryBody): string | undefined {
  if (q.id === "") return "Missing Query ID";
  const rows = tx.tables.prepared_queries;
  const existing = rows.get(q.id);
  if (op === "create" && existing) return `Prepared query ID '${q.id}' already exists`;
  if (op === "update" && !existing) return `Cannot modify non-existent prepared query: '${q.id}'`;
  for (const other of rows.all()) {
    if (other.id === q.id) continue;
    if (q.name !== "" && sameName(other.name, q.name)) return `name '${q.name}' aliases an existing query name`;
    if (q.name === "" && isTemplate(q) && isTemplate(other) && other.name === "") {
      return "a query template with an empty name already exists";
    }
  }
  if (isUuid(q.name) && rows.get(q.name)) return `name '${q.name}' aliases an existing query ID`;
  if (q.session !== "" && !tx.tables.sessions.get(q.session)) return `invalid session ${JSON.stringify(q.session)}`;
  if (isTemplate(q)) {
    try {
      compileTemplate(makePreparedQuery({ ...q, createIndex: 0, modifyIndex: 0 }));
    } catch (err) {
      return `failed compiling template: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  return undefined;
}

/** Create or update a query at idx. Throws StateError when refused (nothing changes). */
export function preparedQuerySetTxn(tx: WriteTxn, idx: number, op: "create" | "update", q: PreparedQueryBody): PreparedQuery {
  const problem = preparedQuerySetProblem(tx, op, q);
  if (problem) throw new StateError(problem);
  const existing = tx.tables.prepared_queries.get(q.id);
  const row = makePreparedQuery({ ...q, createIndex: existing?.createIndex ?? idx, modifyIndex: idx });
  tx.insert(tx.tables.prepared_queries, row);
  tx.setIndex(preparedQueriesTable, idx);
  return row;
}

/** Delete a query by ID; a missing one is not an error here (Consul). Returns whether it existed. */
export function preparedQueryDeleteTxn(tx: WriteTxn, idx: number, id: string): boolean {
  if (!tx.delete(tx.tables.prepared_queries, id)) return false;
  tx.setIndex(preparedQueriesTable, idx);
  return true;
}

/** Delete every query bound to a session (its invalidation); returns their IDs. */
export function preparedQueriesDeleteBySessionTxn(tx: WriteTxn, idx: number, session: string): string[] {
  const ids = tx.tables.prepared_queries.all().filter((q) => q.session === session).map((q) => q.id);
  for (const id of ids) preparedQueryDeleteTxn(tx, idx, id);
  return ids;
}

export function preparedQueryGetTxn(tx: ReadTxn, ws: WatchSet | undefined, id: string): Indexed<PreparedQuery | undefined> {
  return { index: tx.maxIndex(preparedQueriesTable), value: tx.tables.prepared_queries.getWatch(id, ws) };
}

export function preparedQueryListTxn(tx: ReadTxn, ws: WatchSet | undefined): Indexed<PreparedQuery[]> {
  return { index: tx.maxIndex(preparedQueriesTable), value: tx.tables.prepared_queries.prefix("", ws) };
}

/**
 * The query an ID or name stands for, rendered when it is a template
 * (Consul PreparedQueryResolve); undefined when none. Throws StateError for
 * a template looked up by ID and for a template that fails to render.
 */
export function preparedQueryResolveTxn(tx: ReadTxn, idOrName: string): Indexed<PreparedQuery | undefined> {
  const index = tx.maxIndex(preparedQueriesTable);
  if (idOrName === "") throw new StateError("Missing Query ID");
  const rows = tx.tables.prepared_queries;
  if (isUuid(idOrName)) {
    const byId = rows.get(idOrName) ?? rows.get(idOrName.toLowerCase());
    if (byId) {
      if (isTemplate(byId)) throw new StateError("prepared query templates can only be resolved up by name, not by ID");
      return { index, value: byId };
    }
  }
  const all = rows.all();
  const prep = (q: PreparedQuery): Indexed<PreparedQuery> => {
    if (!isTemplate(q)) return { index, value: q };
    try {
      return { index, value: renderTemplate(q, idOrName) };
    } catch (err) {
      throw new StateError(err instanceof Error ? err.message : String(err));
    }
  };
  const exact = all.find((q) => q.name !== "" && sameName(q.name, idOrName));
  if (exact) return prep(exact);
  const lower = idOrName.toLowerCase();
  let best: PreparedQuery | undefined;
  for (const q of all) {
    if (!isTemplate(q) || !lower.startsWith(q.name.toLowerCase())) continue;
    if (!best || q.name.length > best.name.length) best = q;
  }
  return best ? prep(best) : { index, value: undefined };
}

/** Resolve or throw NotFoundError("Query not found"). */
export function preparedQueryResolveOrThrow(tx: ReadTxn, idOrName: string): Indexed<PreparedQuery> {
  const r = preparedQueryResolveTxn(tx, idOrName);
  if (!r.value) throw new NotFoundError(queryNotFoundMessage);
  return { index: r.index, value: r.value };
}

export type PreparedQueryCommand =
  | { op: "create" | "update"; query: PreparedQueryBody }
  | { op: "delete"; id: string };

/** The PreparedQuery FSM command (Consul applyPreparedQueryOperation): the row, true for a delete, or an Error. */
export function applyPreparedQueryCommand(
  state: { write<R>(idx: number, fn: (tx: WriteTxn) => R): R },
  index: number,
  cmd: Record<string, unknown>,
): unknown {
  try {
    if (cmd.op === "create" || cmd.op === "update") {
      const op = cmd.op;
      const body = preparedQueryBodyFrom(cmd.query);
      if (!body) return new Error("Invalid prepared query request: malformed query");
      return state.write(index, (tx) => preparedQuerySetTxn(tx, index, op, body)).id;
    }
    if (cmd.op === "delete") {
      if (typeof cmd.id !== "string" || cmd.id === "") return new Error("Invalid prepared query request: missing query ID");
      const id = cmd.id;
      state.write(index, (tx) => preparedQueryDeleteTxn(tx, index, id));
      return true;
    }
    return new Error(`Unknown prepared query operation: ${String(cmd.op)}`);
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
