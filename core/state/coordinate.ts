// Network coordinates in the catalog (consul agent/consul/state/coordinate.go):
// one row per node and network segment, written by the CoordinateBatchUpdate
// command (MessageType 6) that the leader proposes every
// coordinate_update_period with the updates agents sent it. An update for a
// node the catalog does not know is dropped (a node's coordinates go when it
// is deregistered, and a late update must not bring them back). Reads watch
// the table; the "coordinates" index is what X-Consul-Index says.

import type { CoordinateEntry, VivaldiCoord } from "../rpc/methods.ts";
import { deepFreeze, nodeKey, nodePrefix } from "./catalog_schema.ts";
import type { Indexed } from "./kvs.ts";
import type { TableSchema } from "./table.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

export const coordinatesIndex = "coordinates";

function coordinateKey(node: string, segment: string): string {
  return nodePrefix(node) + segment;
}

/** A Vivaldi coordinate from a decoded command or snapshot row; undefined when malformed or not finite (Consul Coordinate.IsValid). */
export function vivaldiFrom(raw: unknown): VivaldiCoord | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
  if (!Array.isArray(r.vec) || r.vec.length === 0 || !r.vec.every(finite)) return undefined;
  if (!finite(r.error) || !finite(r.adjustment) || !finite(r.height)) return undefined;
  return { vec: [...r.vec], error: r.error, adjustment: r.adjustment, height: r.height };
}

/** One coordinate entry from a decoded command or snapshot row; undefined when malformed. */
export function coordinateEntryFrom(raw: unknown): CoordinateEntry | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r.node !== "string" || r.node === "" || typeof r.segment !== "string") return undefined;
  const coord = vivaldiFrom(r.coord);
  if (!coord) return undefined;
  return { node: r.node, segment: r.segment, coord };
}

function freezeEntry(e: CoordinateEntry): CoordinateEntry {
  return deepFreeze({ node: e.node, segment: e.segment, coord: { ...e.coord, vec: [...e.coord.vec] } });
}

export const coordinatesSchema: TableSchema<CoordinateEntry> = {
  name: "coordinates",
  keyOf: (row) => coordinateKey(row.node, row.segment),
  fromRecord(raw) {
    const e = coordinateEntryFrom(raw);
    return e ? freezeEntry(e) : undefined;
  },
};

/**
 * Store a batch (Consul CoordinateBatchUpdate): updates for unknown nodes are
 * skipped. Returns how many were stored; the index moves only when one was.
 */
export function coordinateBatchUpdateTxn(tx: WriteTxn, idx: number, updates: readonly CoordinateEntry[]): number {
  let stored = 0;
  for (const u of updates) {
    const node = tx.tables.nodes.get(nodeKey(u.node));
    if (!node) continue;
    // The row keeps the catalog's spelling of the node name.
    tx.insert(tx.tables.coordinates, freezeEntry({ node: node.node, segment: u.segment, coord: u.coord }));
    stored++;
  }
  if (stored > 0) tx.setIndex(coordinatesIndex, idx);
  return stored;
}

/** Delete every coordinate of a node (its deregistration); raises the index when there were any. */
export function deleteNodeCoordinatesTxn(tx: WriteTxn, idx: number, node: string): void {
  if (tx.deletePrefix(tx.tables.coordinates, nodePrefix(node)).length > 0) tx.setIndex(coordinatesIndex, idx);
}

/** Every coordinate, by node then segment (Consul Coordinates). */
export function coordinatesTxn(tx: ReadTxn, ws: WatchSet | undefined): Indexed<CoordinateEntry[]> {
  return { index: tx.maxIndex(coordinatesIndex), value: tx.tables.coordinates.prefix("", ws) };
}

/** One node's coordinates, one per segment (Consul Coordinate). */
export function nodeCoordinatesTxn(tx: ReadTxn, ws: WatchSet | undefined, node: string): Indexed<CoordinateEntry[]> {
  return { index: tx.maxIndex(coordinatesIndex), value: tx.tables.coordinates.prefix(nodePrefix(node), ws) };
}

/** The CoordinateBatchUpdate command: `{ updates }` → the number stored, or an Error when the list is malformed. */
export function applyCoordinateBatchCommand(
  state: { write<R>(idx: number, fn: (tx: WriteTxn) => R): R },
  index: number,
  cmd: Record<string, unknown>,
): unknown {
  if (!Array.isArray(cmd.updates)) return new Error("Invalid coordinate update: updates is not a list");
  const updates: CoordinateEntry[] = [];
  for (const raw of cmd.updates) {
    const e = coordinateEntryFrom(raw);
    if (!e) return new Error("Invalid coordinate update: malformed entry");
    updates.push(e);
  }
  return state.write(index, (tx) => coordinateBatchUpdateTxn(tx, index, updates));
}
