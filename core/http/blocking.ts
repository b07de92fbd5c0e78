// One place for Consul's read parameters and X-Consul-* headers
// (consul agent/http.go parseWait, parseConsistency, parseDC, parseToken,
// setMeta). Blocking itself happens on the server; this only parses and clamps.
import { BadRequestError } from "../errors.ts";
import type { QueryMeta, QueryOptions, Rpc } from "../rpc/mod.ts";
import { consulQueryTimes } from "../server/blocking.ts";
import type { HttpRequest } from "./types.ts";

/** Blocking wait when `?wait` is absent or not positive (Consul DefaultQueryTime). */
export const defaultQueryTimeMs = consulQueryTimes.defaultMs;
/** Longest blocking wait (Consul MaxQueryTime). */
export const maxQueryTimeMs = consulQueryTimes.maxMs;

/**
 * A `?wait` in ms (undefined when absent or not positive) as the blocking
 * wait: the agent's default_query_time when none, capped at max_query_time
 * (Consul's client does the same before it sends a blocking RPC:
 * QueryOptions.BlockingTimeout; the server clamps again with its own).
 */
export function clampWaitMs(req: HttpRequest, requestedMs: number | undefined): number {
  const times = req.queryTimes ?? consulQueryTimes;
  if (requestedMs === undefined || !(requestedMs > 0)) return times.defaultMs;
  return Math.min(Math.ceil(requestedMs), times.maxMs);
}

const unitMs: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3, // U+00B5 micro sign
  "μs": 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/**
 * Parses a Go duration (`20s`, `120000ms`, `4.98s`, `1m30s`, `1h`, `0`) into
 * milliseconds. Returns undefined when the text is not one.
 */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith("-") || s.startsWith("+")) {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  let total = 0;
  const re = /^(\d*)(?:\.(\d*))?([a-z\u00b5\u03bc]+)/; // µ (micro sign) and μ (Greek mu), escaped: see scripts/build.ts
  while (s.length > 0) {
    const m = re.exec(s);
    if (!m) return undefined;
    const [whole, intPart = "", fracPart, unit = ""] = m;
    if (intPart === "" && (fracPart === undefined || fracPart === "")) return undefined;
    const per = unitMs[unit];
    if (per === undefined) return undefined;
    const value = Number(`${intPart || "0"}.${fracPart ?? ""}`.replace(/\.$/, ""));
    total += value * per;
    s = s.slice(whole.length);
  }
  return sign * total;
}

/** Datacenter from `?dc` ("" when absent). */
export function parseDatacenter(req: HttpRequest): string {
  return req.query.get("dc") ?? "";
}

function header(req: HttpRequest, name: string): string {
  const v = req.headers[name];
  return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
}

/** Token from `?token`, then `X-Consul-Token`, then `Authorization: Bearer` (Consul's order). */
export function parseToken(req: HttpRequest): string {
  const q = req.query.get("token");
  if (q) return q;
  const x = header(req, "x-consul-token");
  if (x) return x;
  const auth = header(req, "authorization").trim();
  const m = /^bearer\s+(.+)$/i.exec(auth);
  return m ? m[1]!.trim() : req.defaultToken ?? "";
}

function parseUint(name: string, text: string): number {
  if (!/^\d+$/.test(text)) {
    throw new BadRequestError(`Invalid ${name} "${text}": must be a non-negative integer`);
  }
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new BadRequestError(`Invalid ${name} "${text}": larger than ${Number.MAX_SAFE_INTEGER}`);
  return n;
}

/** The request context of a read: `?index`, `?wait`, `?stale`, `?max_stale`, `?consistent`, `?dc`, the token, `?filter`, `?near`. */
export function parseQueryOptions(req: HttpRequest): QueryOptions {
  const q = req.query;
  let waitMs = clampWaitMs(req, undefined);
  const wait = q.get("wait");
  if (wait !== null && wait !== "") {
    const ms = parseGoDuration(wait);
    if (ms === undefined) {
      throw new BadRequestError(`Invalid wait time "${wait}": use a Go duration such as "20s", "1m30s" or "120000ms"`);
    }
    waitMs = clampWaitMs(req, ms);
  }
  const index = q.get("index");
  const minQueryIndex = index !== null && index !== "" ? parseUint("index", index) : 0;
  let allowStale = q.has("stale");
  const requireConsistent = q.has("consistent");
  // consul parseConsistency: ?max_stale implies ?stale.
  let maxStaleMs = 0;
  const maxStale = q.get("max_stale");
  if (maxStale !== null) {
    const ms = parseGoDuration(maxStale);
    if (ms === undefined || ms < 0) throw new BadRequestError(`Invalid max_stale value "${maxStale}"`);
    maxStaleMs = ms;
    allowStale = true;
  }
  if (allowStale && requireConsistent) {
    throw new BadRequestError("Cannot specify ?stale with ?consistent, conflicting semantics.");
  }
  // consul parseConsistency: discovery_max_stale makes catalog and health reads
  // that name no consistency stale ones, bounded by it.
  const discovery = req.discoveryMaxStaleMs ?? 0;
  if (discovery > 0 && !allowStale && !requireConsistent && !q.has("leader") && (req.path.startsWith("/v1/catalog") || req.path.startsWith("/v1/health"))) {
    allowStale = true;
    maxStaleMs = discovery;
  }
  const options: QueryOptions = { minQueryIndex, maxQueryTimeMs: waitMs, allowStale, requireConsistent };
  if (maxStaleMs > 0) options.maxStaleMs = maxStaleMs;
  const dc = parseDatacenter(req);
  if (dc) options.datacenter = dc;
  const token = parseToken(req);
  if (token) options.token = token;
  const filter = q.get("filter");
  if (filter !== null && filter.trim() !== "") options.filter = filter;
  const near = q.get("near");
  if (near !== null && near !== "") options.near = near;
  return options;
}

/**
 * The one place `?max_stale` is honoured (consul's endpoints RETRY_ONCE):
 * a read answered stale by a server that last heard from the leader longer
 * ago than max_stale is asked once more, of the leader. Every HTTP read goes
 * through the Rpc this returns.
 */
export function withMaxStale(rpc: Rpc): Rpc {
  return {
    async call(method, args, options) {
      const reply = await rpc.call(method, args, options);
      const query = (args as { query?: QueryOptions }).query;
      const meta = (reply as { meta?: QueryMeta } | undefined)?.meta;
      if (!query?.allowStale || !query.maxStaleMs || !meta || !(meta.lastContactMs > query.maxStaleMs)) return reply;
      const fresh = { ...query, allowStale: false, maxStaleMs: 0 };
      return await rpc.call(method, { ...args, query: fresh } as typeof args, options);
    },
  };
}

/** Write options: only the datacenter and token matter. */
export function parseWriteOptions(req: HttpRequest): { datacenter?: string; token?: string } {
  const out: { datacenter?: string; token?: string } = {};
  const dc = parseDatacenter(req);
  if (dc) out.datacenter = dc;
  const token = parseToken(req);
  if (token) out.token = token;
  return out;
}

/** X-Consul-* headers from a read's QueryMeta (consul setMeta; the index is never 0). */
export function setMetaHeaders(headers: Record<string, string>, meta: QueryMeta): Record<string, string> {
  headers["X-Consul-Index"] = String(meta.index > 0 ? Math.floor(meta.index) : 1);
  headers["X-Consul-KnownLeader"] = meta.knownLeader ? "true" : "false";
  headers["X-Consul-LastContact"] = String(meta.lastContactMs > 0 ? Math.floor(meta.lastContactMs) : 0);
  headers["X-Consul-Effective-Consistency"] = meta.consistencyLevel;
  if (meta.resultsFilteredByAcls) headers["X-Consul-Results-Filtered-By-ACLs"] = "true";
  return headers;
}

/** Parse a non-negative integer query parameter (flags, cas); a bad one is a 400 naming it. */
export function parseUintParam(req: HttpRequest, name: string): number | undefined {
  const v = req.query.get(name);
  if (v === null) return undefined;
  return parseUint(name, v);
}
