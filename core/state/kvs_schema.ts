// The `kvs` table: DirEntry rows keyed by their key.

import { isKvFlags, type DirEntry } from "../rpc/methods.ts";
import type { TableSchema } from "./table.ts";

export const kvsSchema: TableSchema<DirEntry> = {
  name: "kvs",
  keyOf: (row) => row.key,
  fromRecord(raw) {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as Record<string, unknown>;
    if (typeof r.key !== "string") return undefined;
    if (!isKvFlags(r.flags) || !isIndex(r.lockIndex) || !isIndex(r.createIndex) || !isIndex(r.modifyIndex)) {
      return undefined;
    }
    const value = r.value === undefined || r.value === null ? new Uint8Array(0) : r.value;
    if (!(value instanceof Uint8Array)) return undefined;
    const session = r.session === undefined || r.session === null ? "" : r.session;
    if (typeof session !== "string") return undefined;
    return makeDirEntry({
      key: r.key,
      flags: r.flags,
      value,
      session,
      lockIndex: r.lockIndex,
      createIndex: r.createIndex,
      modifyIndex: r.modifyIndex,
    });
  },
};

/** A frozen DirEntry with fields in a fixed order (stable hidden class). */
export function makeDirEntry(e: DirEntry): DirEntry {
  return Object.freeze({
    key: e.key,
    flags: e.flags,
    value: e.value,
    session: e.session,
    lockIndex: e.lockIndex,
    createIndex: e.createIndex,
    modifyIndex: e.modifyIndex,
  });
}

export function isIndex(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}
