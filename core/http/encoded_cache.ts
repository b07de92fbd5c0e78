// One encoding for many readers (issue #24). The server hands every reader
// of the same service answer at the same index the same frozen array
// (core/server/read_cache.ts); here its JSON is written once and the bytes
// reused, so a thousand blocking watchers woken by one change, or a load
// balancer polling, cost one JSON.stringify between them. Only frozen arrays
// are shared: anything a request changed on its way here (?filter, ?near,
// WAN address translation, ACL filtering) is a new array and is encoded for
// itself. The bytes die with the array (WeakMap), so the cache needs no bound
// of its own beyond the server's.

import { setMetaHeaders } from "./blocking.ts";
import type { QueryMeta } from "../rpc/mod.ts";
import type { HttpRequest, HttpResponse } from "./types.ts";
import { jsonResponse, wantsPretty } from "./types.ts";

interface Encoded {
  plain?: Buffer;
  pretty?: Buffer;
}

const encoded = new WeakMap<object, Encoded>();

/** Counters for tests and benchmarks. */
export const encodedCacheStats = { hits: 0, misses: 0 };

/** `rows` as Consul's JSON (a list of toJson(row)), encoded once per frozen array and style. */
export function encodeRows<T>(rows: readonly T[], toJson: (row: T) => unknown, pretty: boolean): Buffer | string {
  const text = (): string => {
    const value = rows.map(toJson);
    return pretty ? `${JSON.stringify(value, null, 4)}\n` : JSON.stringify(value);
  };
  if (!Object.isFrozen(rows)) return text();
  let e = encoded.get(rows);
  if (!e) encoded.set(rows, (e = {}));
  const have = pretty ? e.pretty : e.plain;
  if (have) {
    encodedCacheStats.hits++;
    return have;
  }
  encodedCacheStats.misses++;
  const bytes = Buffer.from(text());
  if (pretty) e.pretty = bytes;
  else e.plain = bytes;
  return bytes;
}

/** readResponse (catalog.ts) for a list answer, sharing the encoding of a frozen one. */
export function sharedListResponse<T>(req: HttpRequest, meta: QueryMeta, rows: readonly T[], toJson: (row: T) => unknown): HttpResponse {
  const headers = setMetaHeaders({}, meta);
  if (!Object.isFrozen(rows)) return jsonResponse(rows.map(toJson), { headers, pretty: wantsPretty(req) });
  headers["Content-Type"] = "application/json";
  return { status: 200, headers, body: encodeRows(rows, toJson, wantsPretty(req)) };
}
