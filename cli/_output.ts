// Output helpers shared by commands: Consul's column tables (columnize with
// two spaces between columns), key/value blocks, `-format=json`.
import { ApiConnectionError, ApiError } from "../core/api/mod.ts";
import { errorMessage } from "../core/errors.ts";

/** Left-aligned columns separated by at least two spaces (ryanuber/columnize as Consul uses it). */
export function columns(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]! + 2))).join("").trimEnd())
    .join("\n");
}

/**
 * `Label   value` lines aligned like Go's tabwriter(minwidth 0, padding 6),
 * which is what `consul kv get -detailed` prints.
 */
export function keyValueBlock(pairs: readonly [string, string][], padding = 6): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length)) + padding;
  return pairs.map(([k, v]) => `${k.padEnd(width)}${v}`.trimEnd()).join("\n");
}

/** Go's json.MarshalIndent(v, "", "    "). */
export function prettyJson(value: unknown, indent: string = "    "): string {
  return JSON.stringify(value, null, indent);
}

export type OutputFormat = "pretty" | "json";

export function parseFormat(text: string): OutputFormat | undefined {
  return text === "pretty" || text === "json" ? text : undefined;
}

/** A one-line reason for a failed API call, as Consul's commands print it. */
export function apiErrorText(err: unknown): string {
  if (err instanceof ApiError || err instanceof ApiConnectionError) return err.message;
  return errorMessage(err);
}
