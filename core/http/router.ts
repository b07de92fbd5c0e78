// The router (Go's ServeMux, as Consul's agent/http.go uses it): method +
// path pattern → route. A pattern ending in "/" matches every path under it
// (longest pattern wins); any other pattern matches exactly. Every route
// names what the caller's token needs (its authorization rule); the Router
// asks a RouteAuthorizer before the handler runs. The table of /v1 routes
// is routes.ts.
import { PermissionDeniedError } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { Metrics } from "../metrics/metrics.ts";
import type { QueryTimes } from "../server/blocking.ts";
import { errorResponse } from "./http_error.ts";
import { textResponse, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** Body limit for routes that do not name one. */
export const defaultMaxBodyBytes = 512 * 1024;

/** ACL resource families a route may need (consul acl.Authorizer: KeyRead, NodeWrite, OperatorRead, ...). */
export type AuthzResource = "acl" | "agent" | "event" | "key" | "keyring" | "node" | "operator" | "query" | "service" | "session";

/**
 * `read` and `write` on one named resource, or on the family when no name is
 * given; `list`: the route lists a family or a key prefix (Consul filters
 * such answers by read on each item, and asks key:list for KV listings when
 * the policy enables it).
 */
export type AuthzAccess = "read" | "write" | "list";

/** What a request needs from the caller's token before its handler runs. */
export type AuthzRequirement =
  /** Nothing at the route: public (status), or the endpoint checks each item it touches (txn). */
  | { readonly resource: "none" }
  | {
    readonly resource: AuthzResource;
    readonly access: AuthzAccess;
    /**
     * The resource's name when the path carries it (a key, node, service or
     * event name); absent when the names come from the body (catalog
     * register, agent service register) or the rule covers the family.
     */
    readonly name?: string;
  };

/**
 * A route's rule: one requirement, or one derived from the request (method,
 * query) and `rest`, the path after a prefix pattern ("/v1/kv/" + rest; ""
 * for an exact pattern).
 */
export type RouteAuthz = AuthzRequirement | ((req: HttpRequest, rest: string) => AuthzRequirement);

/** What an allowed request's token may do, for handlers that filter what they answer (members). */
export interface RequestAcl {
  readonly accessorId: string;
  allowed(resource: AuthzResource, access: "read" | "write" | "list", name: string): boolean;
}

export type AuthzDecision = { readonly allowed: true; readonly acl?: RequestAcl } | { readonly allowed: false; readonly reason?: string; readonly accessorId?: string };

/** One answered request, for the audit log (never the token itself, nor the query string). */
export interface AuditEntry {
  method: string;
  path: string;
  status: number;
  durationMs: number;
  /** The AccessorID of the request's token; "" when unknown (ACLs off, unknown token). */
  accessorId: string;
}

export interface AuditSink {
  /** Monotonic ms, for durations. */
  now(): number;
  record(entry: AuditEntry): void;
}

/**
 * The hook the Router calls with each request and its route's requirement,
 * before the handler. A refusal is answered 403 and the handler never runs.
 * Resolving the request's token is the authorizer's business.
 */
export interface RouteAuthorizer {
  authorize(req: HttpRequest, need: AuthzRequirement): AuthzDecision | Promise<AuthzDecision>;
}

const allowed: AuthzDecision = { allowed: true };

/** Without ACLs every request is allowed. */
export const allowAll: RouteAuthorizer = { authorize: () => allowed };

export interface Route {
  /** "/v1/kv/" (prefix) or "/v1/status/leader" (exact). */
  pattern: string;
  methods: readonly string[];
  handler: Handler;
  /** Largest request body; larger → 413 (enforced while reading by serve_node). */
  maxBodyBytes?: number;
  /** The handler reads the body as it arrives (`req.bodyStream`) instead of serve_node buffering it. */
  streamBody?: boolean;
  /** What the caller's token needs; checked by the Router's RouteAuthorizer before the handler. */
  authz: RouteAuthz;
}

export type RouteLookup =
  | { kind: "route"; route: Route; maxBodyBytes: number }
  | { kind: "response"; response: HttpResponse };

export class Router {
  readonly #exact = new Map<string, Route>();
  /** Prefix routes, longest first. */
  #prefixes: Route[] = [];
  readonly #logger: Logger;
  readonly #authorizer: RouteAuthorizer;
  /** Handed to every handler on its request (blocking waits). */
  readonly #queryTimes: QueryTimes | undefined;
  readonly #discoveryMaxStaleMs: number;
  /** acl.default_policy, sent as X-Consul-Default-ACL-Policy on every answer (ACLs on). */
  readonly #defaultAclPolicy: string | undefined;
  /** The agent's default token (acl.tokens.default), for requests that carry none. */
  readonly #defaultToken: (() => string) | undefined;
  /** `audit {}`: one entry per answered request. */
  readonly #audit: AuditSink | undefined;
  /** consul.api.http timings (method, route path) when set. */
  metrics: Metrics | undefined;
  /** Each route's `path` label, as Consul writes it: "/v1/kv/" → "v1.kv._". */
  readonly #pathLabels = new WeakMap<Route, string>();

  constructor(routes: readonly Route[] = [], options: { logger?: Logger; metrics?: Metrics; authorizer?: RouteAuthorizer; queryTimes?: QueryTimes; discoveryMaxStaleMs?: number; defaultAclPolicy?: string; defaultToken?: () => string; audit?: AuditSink } = {}) {
    this.#audit = options.audit;
    this.#defaultAclPolicy = options.defaultAclPolicy;
    this.#defaultToken = options.defaultToken;
    this.#logger = options.logger ?? nullLogger();
    this.#queryTimes = options.queryTimes;
    this.#discoveryMaxStaleMs = options.discoveryMaxStaleMs ?? 0;
    this.#authorizer = options.authorizer ?? allowAll;
    this.metrics = options.metrics;
    for (const r of routes) this.add(r);
  }

  /** Register a route (createRoutes registers the whole table at once). */
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
    return this.routes().map((r) => r.pattern);
  }

  /** Every route, by pattern. */
  routes(): Route[] {
    return [...this.#exact.values(), ...this.#prefixes].sort((a, b) => (a.pattern < b.pattern ? -1 : a.pattern > b.pattern ? 1 : 0));
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
    // With a catch-all "/" (the web UI's redirect) the subtree rule still comes first, as in Go's ServeMux.
    if (!route || (route.pattern === "/" && path !== "/")) {
      // Go's ServeMux redirects "/v1/kv" to "/v1/kv/" when only the subtree is registered.
      const subtree = this.#prefixes.find((r) => r.pattern === `${path}/`);
      if (subtree) {
        const location = rawQuery ? `${subtree.pattern}?${rawQuery}` : subtree.pattern;
        return { kind: "response", response: textResponse(301, `Moved Permanently: use "${location}"`, { Location: location }) };
      }
    }
    if (!route) {
      return { kind: "response", response: textResponse(404, `Not found: no endpoint for "${path}"`) };
    }
    if (!route.methods.includes(method)) {
      const allow = ["OPTIONS", ...route.methods].join(",");
      if (method === "OPTIONS") return { kind: "response", response: { status: 200, headers: { Allow: allow }, body: "" } };
      return { kind: "response", response: textResponse(405, `method ${method} not allowed`, { Allow: allow }) };
    }
    return { kind: "route", route, maxBodyBytes: route.maxBodyBytes ?? defaultMaxBodyBytes };
  }

  /** Authorize, then run the route's handler; errors become Consul's plain-text answers. Never throws. */
  async dispatch(route: Route, req: HttpRequest): Promise<HttpResponse> {
    const metrics = this.metrics;
    const start = metrics?.now() ?? 0;
    const auditStart = this.#audit?.now() ?? 0;
    let accessorId = "";
    let r: HttpResponse;
    try {
      // The request's context is set on the request itself, not on a copy: a
      // spread costs an object clone per request and drops what a request
      // class keeps on its prototype (serve_node's lazily made `signal`).
      if (this.#defaultToken) {
        const t = this.#defaultToken();
        if (t) req.defaultToken = t;
      }
      const need = typeof route.authz === "function" ? route.authz(req, route.pattern.endsWith("/") ? req.path.slice(route.pattern.length) : "") : route.authz;
      let decision = this.#authorizer.authorize(req, need);
      if (decision instanceof Promise) decision = await decision;
      if (!decision.allowed) {
        accessorId = decision.accessorId ?? "";
        throw new PermissionDeniedError(decision.reason);
      }
      if (decision.acl) {
        accessorId = decision.acl.accessorId;
        req.acl = decision.acl;
      }
      if (this.#queryTimes || this.#discoveryMaxStaleMs) {
        req.queryTimes = this.#queryTimes;
        req.discoveryMaxStaleMs = this.#discoveryMaxStaleMs;
      }
      r = await route.handler(req);
    } catch (err) {
      r = errorResponse(err, this.#logger, { method: req.method, path: req.path });
    }
    if (metrics) metrics.sample("api.http", metrics.now() - start, { method: req.method, path: this.#pathLabel(route) });
    if (this.#defaultAclPolicy) r.headers["X-Consul-Default-ACL-Policy"] = this.#defaultAclPolicy;
    if (this.#audit) {
      try {
        this.#audit.record({ method: req.method, path: req.path, status: r.status, durationMs: this.#audit.now() - auditStart, accessorId });
      } catch (err) {
        this.#logger.warn("cannot write the audit log", { error: err instanceof Error ? err.message : String(err) });
      }
    }
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

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A decoded path as it goes in a Location header: each segment
 * percent-encoded, RFC 3986 sub-delims kept. A lone surrogate (which
 * encodeURIComponent throws on) becomes U+FFFD, so lookup never throws.
 */
function escapePath(path: string): string {
  return path.split("/").map((seg) => encodeURIComponent(seg.replace(loneSurrogate, "\ufffd")).replace(/%(21|24|26|27|28|29|2A|2B|2C|3B|3D|3A|40)/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))).join("/");
}

export function bodyTooLargeResponse(limitBytes: number): HttpResponse {
  return textResponse(413, `Request body too large: the limit is ${limitBytes} bytes (${formatBytes(limitBytes)})`);
}

function formatBytes(n: number): string {
  if (n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} B`;
}
