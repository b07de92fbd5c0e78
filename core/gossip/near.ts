// `?near=<node>` (Consul): sort answers by estimated round-trip time from a
// node, using the Vivaldi coordinates of this agent's LAN pool. `_agent`
// means this agent. Rows whose node has no coordinate keep their order after
// the sorted ones; with no coordinate for the `near` node nothing is sorted.
import { distanceSeconds, isCompatible, type Coordinate } from "./coordinate.ts";

export type CoordinateSource = () => ReadonlyArray<{ node: string; coord: Coordinate }>;

export interface NearOptions {
  coordinates?: CoordinateSource;
  agentNode: () => string;
}

export function sortNear<T>(rows: T[], nodeOf: (row: T) => string, near: string, options: NearOptions): T[] {
  if (near === "" || !options.coordinates) return rows;
  const from = near === "_agent" ? options.agentNode() : near;
  const coords = new Map(options.coordinates().map((c) => [c.node, c.coord]));
  const origin = coords.get(from);
  if (!origin) return rows;
  const keyed = rows.map((row, i) => {
    const c = coords.get(nodeOf(row));
    const d = c && isCompatible(origin, c) ? distanceSeconds(origin, c) : Number.POSITIVE_INFINITY;
    return { row, i, d };
  });
  keyed.sort((a, b) => (a.d === b.d ? a.i - b.i : a.d < b.d ? -1 : 1));
  return keyed.map((k) => k.row);
}
