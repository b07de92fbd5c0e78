// The graveyard (consul agent/consul/state/graveyard.go): a deleted KV key
// leaves a tombstone holding the delete's Raft index, so the index of a
// prefix listing never goes backwards when keys disappear. Tombstones are
// reaped by index once every blocking reader has moved past them.

import type { TableSchema } from "./table.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import { isIndex } from "./kvs_schema.ts";

export interface Tombstone {
  key: string;
  index: number;
}

export const tombstonesSchema: TableSchema<Tombstone> = {
  name: "tombstones",
  keyOf: (row) => row.key,
  fromRecord(raw) {
    if (typeof raw !== "object" || raw === null) return undefined;
    const r = raw as Record<string, unknown>;
    if (typeof r.key !== "string" || !isIndex(r.index)) return undefined;
    return Object.freeze({ key: r.key, index: r.index });
  },
};

/** Add (or replace) the tombstone for key at idx. */
export function graveyardInsertTxn(tx: WriteTxn, key: string, idx: number): void {
  tx.insert(tx.tables.tombstones, Object.freeze({ key, index: idx }));
  tx.setIndex("tombstones", idx);
}

/**
 * Highest tombstone index that bears on prefix (0 if none): stones under it,
 * and stones of delete-tree calls on an ancestor prefix (deleting "a/" also
 * emptied "a/b/"). Consul looks only under the prefix, which lets a listing of
 * "a/b/" go backwards after a delete-tree of "a/"; we also look up.
 */
export function graveyardMaxIndexTxn(tx: ReadTxn, prefix: string): number {
  const stones = tx.tables.tombstones;
  let max = 0;
  stones.scan(prefix, (s) => {
    if (s.index > max) max = s.index;
  });
  if (stones.size > 0) {
    for (let i = 0; i < prefix.length; i++) {
      const s = stones.get(prefix.slice(0, i));
      if (s && s.index > max) max = s.index;
    }
  }
  return max;
}

/** Delete every tombstone whose index is ≤ idx. Returns how many went. */
export function graveyardReapTxn(tx: WriteTxn, idx: number): number {
  const doomed: string[] = [];
  tx.tables.tombstones.scan("", (s, key) => {
    if (s.index <= idx) doomed.push(key);
  });
  for (const key of doomed) tx.delete(tx.tables.tombstones, key);
  return doomed.length;
}
