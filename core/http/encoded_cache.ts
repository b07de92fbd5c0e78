// One encoding for many readers (issue #24). The server hands every reader
// of the same service answer at the same index the same frozen array
// (core/server/read_cache.ts); here its JSON is written once and the bytes
// reused, so a thousand blocking watchers woken by one change, or a load
// balancer polling, cost one JSON.stringify between them. Only frozen arrays
// are shared: anything a request changed on its way here (?filter, ?near,
// WAN address translation, ACL filtering) is a new array and is encoded for
// itself. The bytes are held up to a budget (a 100-instance answer is about
// 100 KB), least recently used dropped first.

import { setMetaHeaders } from "./blocking.ts";
import type { QueryMeta } from "../rpc/mod.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";
import { jsonResponse, wantsPretty } from "./types.ts";

/** Bytes of encoded answers kept (both styles of every cached answer). */
export const encodedCacheBudgetBytes = 128 * 1024 * 1024;

interface Encoded {
  plain?: Buffer;
  pretty?: Buffer;
}

/** Answers by their (frozen) array, least recently used first. */
const encoded = new Map<object, Encoded>();
let heldBytes = 0;

/** Counters for tests and benchmarks. */
export const encodedCacheStats = { hits: 0, misses: 0, get heldBytes(): number { return heldBytes; }, get answers(): number { return encoded.size; } };

function evict(budget: number): void {
  for (const [rows, e] of encoded) {
    if (heldBytes <= budget) return;
    heldBytes -= (e.plain?.length ?? 0) + (e.pretty?.length ?? 0);
    encoded.delete(rows);
  }
}

/** `rows` as Consul's JSON (a list of toJson(row)), encoded once per frozen array and style. */
export function encodeRows<T>(rows: readonly T[], toJson: (row: T) => unknown, pretty: boolean): Buffer | string {
  const text = (): string => {
    const value = rows.map(toJson);
    return pretty ? `${JSON.stringify(value, null, 4)}\n` : JSON.stringify(value);
  };
  if (!Object.isFrozen(rows)) return text();
  let e = encoded.get(rows);
  if (e) encoded.delete(rows);
  else e = {};
  // Most recently used last.
  encoded.set(rows, e);
  const have = pretty ? e.pretty : e.plain;
  if (have) {
    encodedCacheStats.hits++;
    return have;
  }
  encodedCacheStats.misses++;
  const bytes = Buffer.from(text());
  if (pretty) e.pretty = bytes;
  else e.plain = bytes;
  heldBytes += bytes.length;
  evict(budgetBytes);
  return bytes;
}

let budgetBytes = encodedCacheBudgetBytes;

/** For tests: change the budget (dropping what no longer fits); returns the previous one. */
export function setEncodedCacheBudget(bytes: number): number {
  const prev = budgetBytes;
  budgetBytes = bytes;
  evict(bytes);
  return prev;
}

/** readResponse (catalog.ts) for a list answer, sharing the encoding of a frozen one. */
export function sharedListResponse<T>(req: HttpRequest, meta: QueryMeta, rows: readonly T[], toJson: (row: T) => unknown): HttpResponse {
  const headers = setMetaHeaders({}, meta);
  if (!Object.isFrozen(rows)) return jsonResponse(rows.map(toJson), { headers, pretty: wantsPretty(req) });
  headers["Content-Type"] = "application/json";
  return { status: 200, headers, body: encodeRows(rows, toJson, wantsPretty(req)), sharedBody: true };
}
