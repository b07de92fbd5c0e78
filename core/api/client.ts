// Typed HTTP client for the agent's /v1 API, modelled on consul `api/`
// (api.go: Config, QueryOptions, QueryMeta, the `Unexpected response code`
// error). Uses only `fetch`, so it runs on Node 20 and Deno 2.
import { CairnError } from "../errors.ts";
import { Agent } from "./agent.ts";
import { Catalog, Health } from "./catalog.ts";
import { Kv } from "./kv.ts";
import { Sessions } from "./session.ts";
import { Status } from "./status.ts";

export const DEFAULT_HTTP_ADDR = "127.0.0.1:8500";

/** The server answered with an unexpected status (Consul: `Unexpected response code: 500 (body)`). */
export class ApiError extends CairnError {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string) {
    super("api", `Unexpected response code: ${status} (${body.trim()})`);
    this.status = status;
    this.body = body;
  }
}

/** The agent could not be reached at all (refused, unknown host, reset). */
export class ApiConnectionError extends CairnError {
  readonly address: string;
  constructor(address: string, reason: string, options?: { cause?: unknown }) {
    super("connection", `Cannot reach the agent at "${address}": ${reason}`, options);
    this.address = address;
  }
}

export interface ApiClientOptions {
  /** `host:port`, `http://host:port` or `https://host:port`. Default `127.0.0.1:8500`. */
  address?: string;
  token?: string;
  datacenter?: string;
  /** Use https when the address has no scheme (CONSUL_HTTP_SSL). */
  useTls?: boolean;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

export interface QueryOptions {
  datacenter?: string;
  token?: string;
  /** `?stale`: any server may answer. */
  allowStale?: boolean;
  /** `?consistent`. */
  requireConsistent?: boolean;
  /** Blocking query: wait for an index above this. */
  waitIndex?: number;
  waitTimeMs?: number;
  signal?: AbortSignal;
}

export interface WriteOptions {
  datacenter?: string;
  token?: string;
  signal?: AbortSignal;
}

export interface QueryMeta {
  /** X-Consul-Index. */
  lastIndex: number;
  /** X-Consul-Index as sent: event-list indexes are 64-bit hashes that a number cannot hold exactly. */
  lastIndexText?: string;
  /** X-Consul-KnownLeader. */
  knownLeader: boolean;
  /** X-Consul-LastContact, ms. */
  lastContactMs: number;
}

/** Normalise `host:port` / `http://host:port` to a base URL without a trailing slash. */
export function normalizeAddress(address: string, useTls = false): string {
  let a = address.trim();
  if (a === "") a = DEFAULT_HTTP_ADDR;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(a)) a = `${useTls ? "https" : "http"}://${a}`;
  return a.replace(/\/+$/, "");
}

function queryMeta(headers: Headers): QueryMeta {
  return {
    lastIndex: Number(headers.get("X-Consul-Index") ?? 0) || 0,
    lastIndexText: headers.get("X-Consul-Index") ?? "0",
    knownLeader: headers.get("X-Consul-KnownLeader") === "true",
    lastContactMs: Number(headers.get("X-Consul-LastContact") ?? 0) || 0,
  };
}

export interface RawRequest {
  method: "GET" | "PUT" | "POST" | "DELETE";
  path: string;
  params?: Record<string, string | number | boolean | undefined>;
  /** A ReadableStream is sent as it is read (chunked), for bodies of any size (`PUT /v1/snapshot`). */
  body?: Uint8Array | string | ReadableStream<Uint8Array>;
  query?: QueryOptions;
  write?: WriteOptions;
  /** Statuses returned to the caller instead of thrown (404 for a missing key, 409 for a failed txn). */
  accept?: number[];
}

export interface RawResponse {
  status: number;
  text: string;
  meta: QueryMeta;
}

export class ApiClient {
  readonly address: string;
  readonly kv: Kv;
  readonly status: Status;
  readonly agent: Agent;
  readonly catalog: Catalog;
  readonly health: Health;
  readonly session: Sessions;
  #token: string;
  #datacenter: string;
  #fetch: typeof fetch | undefined;

  constructor(options: ApiClientOptions = {}) {
    this.address = normalizeAddress(options.address ?? DEFAULT_HTTP_ADDR, options.useTls);
    this.#token = options.token ?? "";
    this.#datacenter = options.datacenter ?? "";
    // The global fetch is looked up when first used: touching it loads undici (~10 ms), which a command on its own socket never needs.
    this.#fetch = options.fetch;
    this.kv = new Kv(this);
    this.status = new Status(this);
    this.agent = new Agent(this);
    this.catalog = new Catalog(this);
    this.health = new Health(this);
    this.session = new Sessions(this);
  }

  /** One HTTP round trip; throws ApiError for statuses outside 2xx and `accept`. */
  async request(req: RawRequest): Promise<RawResponse> {
    const res = await this.#send(req);
    const text = await res.text();
    const ok = (res.status >= 200 && res.status < 300) || (req.accept ?? []).includes(res.status);
    if (!ok) throw new ApiError(res.status, text);
    return { status: res.status, text, meta: queryMeta(res.headers) };
  }

  /** Like request(), for a binary answer (`/v1/snapshot`). */
  async requestBytes(req: RawRequest): Promise<{ status: number; bytes: Uint8Array; meta: QueryMeta }> {
    const res = await this.#send(req);
    if (res.status < 200 || res.status >= 300) throw new ApiError(res.status, await res.text());
    return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()), meta: queryMeta(res.headers) };
  }

  /** A response body that keeps coming (`/v1/agent/monitor`), piece by piece; ApiError outside 2xx. */
  async stream(req: RawRequest): Promise<AsyncIterable<Uint8Array>> {
    const res = await this.#send(req);
    if (res.status < 200 || res.status >= 300) throw new ApiError(res.status, await res.text());
    return readBody(res.body);
  }

  /**
   * The URL and headers a request goes out with: `?dc`, the consistency
   * and blocking parameters, `params`, and the token header. For a caller
   * that sends it on its own connection (the snapshot download).
   */
  prepare(req: RawRequest): { url: string; headers: Record<string, string> } {
    const url = new URL(this.address + req.path);
    const opts = { ...req.write, ...req.query };
    const dc = opts.datacenter || this.#datacenter;
    if (dc) url.searchParams.set("dc", dc);
    const q = req.query;
    if (q?.allowStale) url.searchParams.set("stale", "");
    if (q?.requireConsistent) url.searchParams.set("consistent", "");
    if (q?.waitIndex) url.searchParams.set("index", String(q.waitIndex));
    if (q?.waitTimeMs) url.searchParams.set("wait", `${Math.ceil(q.waitTimeMs)}ms`);
    for (const [k, v] of Object.entries(req.params ?? {})) {
      if (v === undefined || v === false) continue;
      url.searchParams.set(k, v === true ? "" : String(v));
    }
    const headers: Record<string, string> = {};
    const token = opts.token || this.#token;
    if (token) headers["X-Consul-Token"] = token;
    return { url: url.toString().replace(/=(&|$)/g, "$1"), headers };
  }

  async #send(req: RawRequest): Promise<Response> {
    const { url, headers } = this.prepare(req);
    const opts = { ...req.write, ...req.query };
    try {
      const f = this.#fetch ?? globalThis.fetch.bind(globalThis);
      return await f(url, {
        method: req.method,
        headers,
        body: req.body as BodyInit | undefined,
        signal: opts.signal,
        // fetch sends a stream body only when told it is half duplex.
        ...(req.body instanceof ReadableStream ? { duplex: "half" } : {}),
      } as RequestInit);
    } catch (err) {
      throw new ApiConnectionError(this.address, connectionReason(err), { cause: err });
    }
  }
}

async function* readBody(body: ReadableStream<Uint8Array> | null): AsyncGenerator<Uint8Array> {
  if (!body) return;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Why a connection failed, in the words of `Cannot reach the agent`: from fetch's error (the node error as its `cause`) or a node error itself. */
export function connectionReason(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; code?: string } | undefined;
  const cause = e?.cause ?? (typeof e?.code === "string" ? (err as { code?: string; message?: string }) : undefined);
  if (cause?.code === "ECONNREFUSED") return "connection refused";
  if (cause?.code === "ENOTFOUND") return "no such host";
  if (cause?.code === "ECONNRESET") return "connection reset";
  if (cause?.message) return cause.message;
  return err instanceof Error ? err.message : String(err);
}
