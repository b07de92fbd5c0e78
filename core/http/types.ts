// Plain request/response shapes for the HTTP front end. Handlers are
// `(req: HttpRequest) => Promise<HttpResponse>`; serve_node.ts adapts
// node:http to them and tests call handlers directly, without sockets.
// Plain objects instead of WHATWG Request/Response keep the hot path cheap.
import type { QueryTimes } from "../server/blocking.ts";
import type { RequestAcl } from "./router.ts";

export interface HttpRequest {
  /** Upper-case method: "GET", "PUT", ... */
  method: string;
  /** Path without the query string, already percent-decoded. */
  path: string;
  /** The raw query string, parsed. Flags count as set when present whatever their value. */
  query: URLSearchParams;
  /** Header names are lower case (as node:http gives them). */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: Uint8Array;
  /**
   * Only for a route with `streamBody` (serve_node.ts): the body as it
   * arrives, within the route's limit; `body` is then empty. Absent when
   * the whole body is in `body` (tests, other adapters).
   */
  bodyStream?: AsyncIterable<Uint8Array>;
  /** Aborted when the client goes away or the server shuts down. */
  signal?: AbortSignal;
  /** The agent's default_query_time and max_query_time (the Router sets them); absent: Consul's 5 and 10 minutes. */
  queryTimes?: QueryTimes;
  /** The agent's discovery_max_stale in ms (the Router sets it); absent or 0: off. */
  discoveryMaxStaleMs?: number;
  /** The agent's default token (acl.tokens.default; the Router sets it): parseToken's answer when the request names none. */
  defaultToken?: string;
  /** What the request's token may do (the Router sets it when ACLs are on), for handlers that filter. */
  acl?: RequestAcl;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array | string;
  /**
   * A body that keeps coming (`/v1/agent/monitor`): sent chunked after the
   * headers, `body` ignored. It should end when the request's signal aborts.
   */
  stream?: AsyncIterable<Uint8Array | string>;
  /**
   * `body` is one buffer shared by many answers and never changed
   * (encoded_cache.ts): its gzipped form may be kept and sent to every
   * client that accepts gzip, instead of compressing it again each time.
   */
  sharedBody?: boolean;
}

export type Handler = (req: HttpRequest) => Promise<HttpResponse>;

const emptyBody = new Uint8Array(0);

/** A request for tests and adapters: only what is given, the rest empty. */
export function makeRequest(
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: Uint8Array | string; signal?: AbortSignal } = {},
): HttpRequest {
  const q = target.indexOf("?");
  const rawPath = q < 0 ? target : target.slice(0, q);
  const body = typeof options.body === "string" ? new TextEncoder().encode(options.body) : options.body ?? emptyBody;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.headers ?? {})) headers[k.toLowerCase()] = v;
  return {
    method: method.toUpperCase(),
    path: decodeURIComponent(rawPath),
    query: new URLSearchParams(q < 0 ? "" : target.slice(q + 1)),
    headers,
    body,
    signal: options.signal,
  };
}

export function jsonResponse(
  value: unknown,
  options: { status?: number; headers?: Record<string, string>; pretty?: boolean; /** the value holds rawJsonNumber()s */ rawNumbers?: boolean } = {},
): HttpResponse {
  const headers = options.headers ?? {};
  headers["Content-Type"] = "application/json";
  let text = options.pretty ? `${JSON.stringify(value, null, 4)}\n` : JSON.stringify(value);
  if (options.rawNumbers) text = text.replace(rawNumberPattern, "$1");
  return { status: options.status ?? 200, headers, body: text };
}

/** A value made by rawJsonNumber, as JSON.stringify writes it (U+0000 escaped). */
const rawNumberPattern = /"\\u0000#(\d+)"/g;

/**
 * An integer JSON must show digit for digit but a JS number cannot hold (KV
 * flags above 2^53): jsonResponse writes it bare, as Go writes a uint64.
 */
export function rawJsonNumber(digits: string): number {
  return `\u0000#${digits}` as unknown as number;
}

/** A plain-text answer, as Consul writes its errors. */
export function textResponse(status: number, text: string, headers: Record<string, string> = {}): HttpResponse {
  headers["Content-Type"] = "text/plain; charset=utf-8";
  return { status, headers, body: text };
}

/** Whether a query flag is present (`?recurse`, `?recurse=1`, `?recurse=false` all count). */
export function hasFlag(req: HttpRequest, name: string): boolean {
  return req.query.has(name);
}

/** `?pretty` asks for indented JSON, as Consul. */
export function wantsPretty(req: HttpRequest): boolean {
  return req.query.has("pretty");
}
