// The route table (consul agent/http_register.go): method + path pattern →
// handler. A pattern ending in "/" matches every path under it (Go ServeMux
// semantics, longest pattern wins); any other pattern matches exactly.
import type { Logger } from "../log/mod.ts";
import type { CoordinateSource } from "../gossip/near.ts";
import { nullLogger } from "../log/mod.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { Rpc } from "../rpc/mod.ts";
import { agentSelfHandler, type AgentInfo } from "./agent.ts";
import { catalogRoutes } from "./catalog_routes.ts";
import { errorResponse } from "./http_error.ts";
import { kvMaxValueBytes, kvPrefix, kvsHandler } from "./kvs.ts";
import { queryRoutes } from "./prepared_query.ts";
import { snapshotRoutes } from "./snapshot.ts";
import { statusLeaderHandler, statusPeersHandler } from "./status.ts";
import { txnHandler, txnMaxRequestBytes } from "./txn.ts";
import { textResponse, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** Body limit for routes that do not name one. */
export const defaultMaxBodyBytes = 512 * 1024;

export interface Route {
  /** "/v1/kv/" (prefix) or "/v1/status/leader" (exact). */
  pattern: string;
  methods: readonly string[];
  handler: Handler;
  /** Largest request body; larger → 413 (enforced while reading by serve_node). */
  maxBodyBytes?: number;
}

export type RouteLookup =
  | { kind: "route"; route: Route; maxBodyBytes: number }
  | { kind: "response"; response: HttpResponse };

export class Router {
  readonly #exact = new Map<string, Route>();
  /** Prefix routes, longest first. */
  #prefixes: Route[] = [];
  readonly #logger: Logger;
  /** consul.api.http timings (method, route path) when set. */
  metrics: Metrics | undefined;
  /** Each route's `path` label, as Consul writes it: "/v1/kv/" → "v1.kv._". */
  readonly #pathLabels = new WeakMap<Route, string>();

  constructor(routes: readonly Route[] = [], options: { logger?: Logger; metrics?: Metrics } = {}) {
    this.#logger = options.logger ?? nullLogger();
    this.metrics = options.metrics;
    for (const r of routes) this.add(r);
  }

  /** Register a route; later layers (catalog, health, ...) add theirs here. */
  add(route: Route): void {
    if (!route.pattern.startsWith("/")) throw new TypeError(`Route pattern must start with "/": "${route.pattern}"`);
    if (route.pattern.endsWith("/")) {
      if (this.#prefixes.some((r) => r.pattern === route.pattern)) throw new TypeError(`Route "${route.pattern}" is registered twice`);
      this.#prefixes.push(route);
      this.#prefixes.sort((a, b) => b.pattern.length - a.pattern.length);
    } else {
      if (this.#exact.has(route.pattern)) throw new TypeError(`Route "${route.pattern}" is registered twice`);
      this.#exact.set(route.pattern, route);
    }
  }

  patterns(): string[] {
    return [...this.#exact.keys(), ...this.#prefixes.map((r) => r.pattern)].sort();
  }

  #match(path: string): Route | undefined {
    const exact = this.#exact.get(path);
    if (exact) return exact;
    for (const r of this.#prefixes) if (path.startsWith(r.pattern)) return r;
    return undefined;
  }

  /** Which route serves a request, or the answer when none does (404, 405, OPTIONS, redirect). */
  lookup(method: string, path: string, rawQuery = ""): RouteLookup {
    // Go's ServeMux answers an unclean path ("//", "/./", "/../") with 301 to the clean one, query kept.
    const clean = cleanPath(path);
    if (clean !== path) {
      const location = rawQuery ? `${escapePath(clean)}?${rawQuery}` : escapePath(clean);
      return { kind: "response", response: textResponse(301, `Moved Permanently: use "${location}"`, { Location: location }) };
    }
    const route = this.#match(path);
    if (!route) {
      // Go's ServeMux redirects "/v1/kv" to "/v1/kv/" when only the subtree is registered.
      const subtree = this.#prefixes.find((r) => r.pattern === `${path}/`);
      if (subtree) {
        const location = rawQuery ? `${subtree.pattern}?${rawQuery}` : subtree.pattern;
        return { kind: "response", response: textResponse(301, `Moved Permanently: use "${location}"`, { Location: location }) };
      }
      return { kind: "response", response: textResponse(404, `Not found: no endpoint for "${path}"`) };
    }
    if (!route.methods.includes(method)) {
      const allow = ["OPTIONS", ...route.methods].join(",");
      if (method === "OPTIONS") return { kind: "response", response: { status: 200, headers: { Allow: allow }, body: "" } };
      return { kind: "response", response: textResponse(405, `method ${method} not allowed`, { Allow: allow }) };
    }
    return { kind: "route", route, maxBodyBytes: route.maxBodyBytes ?? defaultMaxBodyBytes };
  }

  /** Run a route's handler; errors become Consul's plain-text answers. Never throws. */
  async dispatch(route: Route, req: HttpRequest): Promise<HttpResponse> {
    const metrics = this.metrics;
    const start = metrics?.now() ?? 0;
    let r: HttpResponse;
    try {
      r = await route.handler(req);
    } catch (err) {
      r = errorResponse(err, this.#logger, { method: req.method, path: req.path });
    }
    if (metrics) metrics.sample("api.http", metrics.now() - start, { method: req.method, path: this.#pathLabel(route) });
    return r;
  }

  #pathLabel(route: Route): string {
    let label = this.#pathLabels.get(route);
    if (label === undefined) {
      const p = route.pattern.slice(1);
      label = p.endsWith("/") ? `${p.slice(0, -1).replaceAll("/", ".")}._` : p.replaceAll("/", ".");
      this.#pathLabels.set(route, label);
    }
    return label;
  }

  /** Lookup + body limit + dispatch, for callers that already hold the whole request (tests). */
  async handle(req: HttpRequest): Promise<HttpResponse> {
    const found = this.lookup(req.method, req.path, req.query.toString());
    if (found.kind === "response") return found.response;
    if (req.body.length > found.maxBodyBytes) return bodyTooLargeResponse(found.maxBodyBytes);
    return await this.dispatch(found.route, req);
  }
}

/**
 * Go's `path.Clean` with ServeMux's rule on top: one slash between
 * segments, no "." segments, ".." eats the segment before it (never above
 * the root), and a trailing slash stays.
 */
export function cleanPath(path: string): string {
  if (path === "") return "/";
  const p = path.startsWith("/") ? path : `/${path}`;
  if (!p.includes("//") && !p.includes("/.")) return p;
  const out: string[] = [];
  for (const seg of p.split("/")) {
    if (seg === "" || seg === ".") continue;
    if (seg === "..") out.pop();
    else out.push(seg);
  }
  let clean = `/${out.join("/")}`;
  if (p.endsWith("/") && clean !== "/") clean += "/";
  return clean;
}

/** A decoded path as it goes in a Location header: each segment percent-encoded, RFC 3986 sub-delims kept. */
function escapePath(path: string): string {
  return path.split("/").map((seg) => encodeURIComponent(seg).replace(/%(21|24|26|27|28|29|2A|2B|2C|3B|3D|3A|40)/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))).join("/");
}

export function bodyTooLargeResponse(limitBytes: number): HttpResponse {
  return textResponse(413, `Request body too large: the limit is ${limitBytes} bytes (${formatBytes(limitBytes)})`);
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} B`;
}

export interface RouteDeps {
  rpc: Rpc;
  agent: AgentInfo;
  logger?: Logger;
  /** LAN coordinates for `?near` sorting (from the agent's gossip pool). */
  coordinates?: CoordinateSource;
  /** KV value limit (Consul kv_max_value_size), default 512 KiB. */
  kvMaxValueBytes?: number;
  metrics?: Metrics;
}

/** Cairn's /v1 routes for KV, txn, status and agent/self. */
export function createRoutes(deps: RouteDeps): Router {
  const { rpc } = deps;
  const logger = deps.logger ?? nullLogger();
  const maxValueBytes = deps.kvMaxValueBytes ?? kvMaxValueBytes;
  return new Router([
    { pattern: kvPrefix, methods: ["GET", "PUT", "DELETE"], handler: kvsHandler({ rpc, maxValueBytes }), maxBodyBytes: maxValueBytes },
    { pattern: "/v1/txn", methods: ["PUT"], handler: txnHandler({ rpc, maxValueBytes }), maxBodyBytes: txnMaxRequestBytes },
    { pattern: "/v1/status/leader", methods: ["GET"], handler: statusLeaderHandler({ rpc }) },
    { pattern: "/v1/status/peers", methods: ["GET"], handler: statusPeersHandler({ rpc }) },
    { pattern: "/v1/agent/self", methods: ["GET"], handler: agentSelfHandler({ agent: deps.agent }) },
    ...catalogRoutes({ rpc, nodeName: () => deps.agent.nodeName, coordinates: deps.coordinates }),
    ...snapshotRoutes({ rpc }),
    ...queryRoutes({ rpc, nodeName: () => deps.agent.nodeName, datacenter: deps.agent.datacenter }),
  ], { logger, metrics: deps.metrics });
}
