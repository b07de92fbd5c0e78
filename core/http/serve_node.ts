// node:http adapter for the Router: keep-alive, body limits enforced while
// reading, client aborts cancel blocking queries, clear listen errors,
// graceful close. The only file in core/http that touches sockets.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { httpDate } from "../clock/utc_text.ts";
import type { QueryTimes } from "../server/blocking.ts";
import { errorMessage, ListenError, listenErrorText } from "../errors.ts";

export { ListenError };
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import { bodyTooLargeResponse, type RequestAcl, type Router } from "./router.ts";
import { textResponse, type HttpRequest, type HttpResponse } from "./types.ts";
import { lazyZlib } from "../lazy_builtins_node.ts";
import { drained } from "../drained_node.ts";

// node:zlib loads on the first answer a client asks gzipped.
const zlib = lazyZlib;

/**
 * Answers shorter than this go as they are even to a client that accepts
 * gzip: below about one packet, compressing saves no round trip and costs CPU.
 */
export const gzipMinBytes = 1400;

/** Gzipped forms of shared answer bodies (HttpResponse.sharedBody), kept as long as the body is. */
const gzippedShared = new WeakMap<Uint8Array, Buffer>();

/**
 * Whether an Accept-Encoding header admits gzip: "gzip" or "*" listed
 * without q=0 (RFC 9110 12.5.3). Go's HTTP client, and so Consul's API
 * client, consul-template and most tools built on them, send "gzip".
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  for (const item of (Array.isArray(header) ? header.join(",") : header).split(",")) {
    const [coding, ...params] = item.split(";").map((x) => x.trim().toLowerCase());
    if (coding !== "gzip" && coding !== "*") continue;
    const q = params.find((p) => p.startsWith("q="));
    if (q === undefined || Number(q.slice(2)) > 0) return true;
  }
  return false;
}

/**
 * The body to send gzipped, or undefined to send it as it is. Consul gzips
 * every answer for a client that asks (its HTTP handlers are wrapped in a
 * gzip handler); here text and JSON answers of at least gzipMinBytes are,
 * unless the handler set its own Content-Encoding, at zlib's level 1
 * (fastest: a 100 KB answer in about a millisecond, to ~8 KB). A shared body
 * is compressed once for all its readers, any other for its request.
 */
export function gzipBody(accept: string | string[] | undefined, r: HttpResponse): Buffer | undefined {
  const length = typeof r.body === "string" ? Buffer.byteLength(r.body) : r.body.length;
  if (length < gzipMinBytes || r.status === 204 || r.status === 304 || !acceptsGzip(accept)) return undefined;
  if (r.headers["Content-Encoding"] !== undefined) return undefined;
  const type = (r.headers["Content-Type"] ?? "").toLowerCase();
  if (!type.startsWith("application/json") && !type.startsWith("text/")) return undefined;
  if (r.sharedBody && typeof r.body !== "string") {
    let z = gzippedShared.get(r.body);
    if (!z) gzippedShared.set(r.body, (z = zlib().gzipSync(r.body, { level: 1 })));
    return z;
  }
  return zlib().gzipSync(r.body, { level: 1 });
}

export interface HttpServerOptions {
  router: Router;
  logger?: Logger;
  /** Idle keep-alive connections are closed after this long (default 30 s). */
  keepAliveTimeoutMs?: number;
  /**
   * After a 413, the rest of an oversized body is read and thrown away (so the
   * connection stays usable and the client sees the answer) up to this many
   * bytes; beyond it the connection is closed. Default 8 MiB.
   */
  discardLimitBytes?: number;
  /**
   * Open connections one client IP may hold (Consul limits.http_max_conns_per_client);
   * one more is answered with a bare 429 and closed. 0 or absent: no limit.
   */
  maxConnsPerClient?: number;
  /** HTTPS: certificates and client-certificate checking (core/tls_context_node.ts tlsServerOptions). */
  tls?: import("node:tls").TlsOptions;
}

export interface HttpServer {
  /** Resolves with the bound address (port 0 picks a free one). */
  listen(addr: { host: string; port: number }): Promise<{ host: string; port: number }>;
  /** Stop accepting, cancel blocking queries, close connections. */
  close(options?: { graceMs?: number }): Promise<void>;
  /** Requests handed to a handler and not yet answered. */
  inFlight(): number;
  readonly server: Server;
  /** HTTPS only: new certificates for new connections (cairn reload). */
  setSecureContext?(options: import("node:tls").SecureContextOptions): void;
}

const emptyBody = new Uint8Array(0);

/**
 * A request whose AbortSignal is made on first use. A class with the getter
 * on its prototype, not an object literal with `get signal()`: V8 stores such
 * a literal's getter in an AccessorPair allocated straight in the old
 * generation, which points at the getter's closure, so every request's
 * objects (the closure context: req, res, parser state, the handler's
 * promises) stayed reachable for young-generation GCs through dead pairs
 * until the next full GC and were all promoted. At 64 connections that made
 * the leader's scavenges long and frequent, and full GCs frequent (figures in
 * docs/performance.md).
 */
class NodeRequest implements HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Uint8Array;
  /** A `streamBody` route's body, read as it arrives (`body` is then empty). */
  bodyStream?: AsyncIterable<Uint8Array>;
  // Set by the Router before the handler runs; declared so every request has one shape.
  queryTimes?: QueryTimes = undefined;
  discoveryMaxStaleMs?: number = undefined;
  defaultToken?: string = undefined;
  acl?: RequestAcl = undefined;
  readonly #signal: () => AbortSignal;

  constructor(method: string, path: string, query: URLSearchParams, headers: NodeRequest["headers"], body: Uint8Array, signal: () => AbortSignal) {
    this.method = method;
    this.path = path;
    this.query = query;
    this.headers = headers;
    this.body = body;
    this.#signal = signal;
  }

  get signal(): AbortSignal {
    return this.#signal();
  }
}

/** A request body as chunks, refused once it passes `limit` bytes. */
async function* limitedBody(req: IncomingMessage, limit: number): AsyncGenerator<Uint8Array> {
  let size = 0;
  for await (const chunk of req as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > limit) throw new Error(`Request body is larger than ${limit} bytes`);
    yield chunk;
  }
}

export function listenErrorMessage(host: string, port: number, err: unknown): string {
  return listenErrorText({ what: "", host, port, portFlag: "-http-port", checkWith: "ss -ltnp", err });
}

export function createHttpServer(options: HttpServerOptions): HttpServer {
  const { router } = options;
  const logger = options.logger ?? nullLogger();
  const discardLimit = options.discardLimitBytes ?? 8 * 1024 * 1024;
  /** Requests handed to a handler and not yet answered. */
  let active = 0;
  /** Controllers of requests whose handler took the AbortSignal. */
  const cancellable = new Set<AbortController>();
  let closing = false;
  let onIdle: (() => void) | undefined;

  const keepAliveTimeout = options.keepAliveTimeoutMs ?? 30_000;
  // node:https is loaded only when HTTPS is on. Its Server carries node:http's
  // request machinery (same events, closeIdleConnections, …), only on a TLS socket.
  const server = options.tls
    ? (process.getBuiltinModule("node:https").createServer({ ...options.tls, keepAliveTimeout }) as unknown as Server)
    : createServer({ keepAliveTimeout });
  if ((options.maxConnsPerClient ?? 0) > 0) limitConnsPerClient(server, options.maxConnsPerClient!, logger);

  /** The Date header, made once a second (as node:http does) but without Date's time-zone lookup (see utc_text.ts). */
  let dateSecond = -1;
  let dateText = "";
  function dateHeader(): string {
    const nowMs = Date.now();
    const second = Math.floor(nowMs / 1000);
    if (second !== dateSecond) {
      dateSecond = second;
      dateText = httpDate(nowMs);
    }
    return dateText;
  }

  function send(res: ServerResponse, r: HttpResponse): void {
    if (res.headersSent || res.destroyed) return;
    if (closing) r.headers["Connection"] = "close";
    res.sendDate = false;
    r.headers["Date"] ??= dateHeader();
    if (r.stream) {
      void sendStream(res, r.status, r.headers, r.stream);
      return;
    }
    const gz = gzipBody(res.req.headers["accept-encoding"], r);
    if (gz) {
      r.headers["Content-Encoding"] = "gzip";
      r.headers["Vary"] = "Accept-Encoding";
    }
    const body = gz ?? r.body;
    // A known length instead of chunked encoding, as Go's server does for small answers.
    r.headers["Content-Length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.length);
    res.writeHead(r.status, r.headers);
    res.end(body);
  }

  /** Chunked: headers at once, then each piece as it comes, waiting for the socket to drain. */
  async function sendStream(res: ServerResponse, status: number, headers: Record<string, string>, stream: AsyncIterable<Uint8Array | string>): Promise<void> {
    res.writeHead(status, headers);
    res.flushHeaders();
    try {
      for await (const piece of stream) {
        if (res.destroyed) break;
        if (!res.write(piece)) await drained(res);
      }
    } catch (err) {
      logger.debug("response stream failed", { error: errorMessage(err) });
    }
    if (!res.destroyed) res.end();
  }

  /** Answer 413 now; read and drop the rest of the body, or cut the connection if it is huge. */
  function rejectTooLarge(req: IncomingMessage, res: ServerResponse, limit: number, declared: number): void {
    const answer = bodyTooLargeResponse(limit);
    const huge = declared > limit + discardLimit;
    if (huge) answer.headers["Connection"] = "close";
    logger.debug("request body too large", { path: redactToken(req.url ?? ""), limitBytes: limit, declaredBytes: declared });
    send(res, answer);
    if (huge) {
      res.once("finish", () => req.socket.destroy());
      return;
    }
    let dropped = 0;
    req.removeAllListeners("data");
    req.on("data", (chunk: Uint8Array) => {
      dropped += chunk.length;
      if (dropped > discardLimit) req.socket.destroy();
    });
    req.resume();
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const rawPath = q < 0 ? url : url.slice(0, q);
    const rawQuery = q < 0 ? "" : url.slice(q + 1);
    let path: string;
    try {
      path = rawPath.includes("%") ? decodeURIComponent(rawPath) : rawPath;
    } catch {
      send(res, textResponse(400, `Invalid URL path "${rawPath}": bad percent-encoding`));
      return;
    }
    const method = req.method ?? "GET";
    const found = router.lookup(method, path, rawQuery);
    if (found.kind === "response") {
      send(res, found.response);
      return;
    }
    const limit = found.maxBodyBytes;
    const lengthHeader = req.headers["content-length"];
    const declared = lengthHeader === undefined ? 0 : Number(lengthHeader);
    if (declared > limit) {
      rejectTooLarge(req, res, limit, declared);
      return;
    }

    // The AbortSignal is made only when a handler asks for it (blocking
    // queries do); most requests never pay for a controller and a listener.
    let ac: AbortController | undefined;
    const signal = (): AbortSignal => {
      if (ac) return ac.signal;
      const controller = new AbortController();
      ac = controller;
      cancellable.add(controller);
      res.once("close", () => {
        cancellable.delete(controller);
        if (!res.writableFinished) controller.abort();
      });
      // The client may already be gone (a body upload that was cut off).
      if (req.socket.destroyed) controller.abort();
      return controller.signal;
    };
    req.once("error", (err) => {
      logger.debug("request read failed", { path, error: err.message });
      ac?.abort();
    });

    const run = (body: Uint8Array, bodyStream?: AsyncIterable<Uint8Array>): void => {
      const request = new NodeRequest(method, path, new URLSearchParams(rawQuery), req.headers, body, signal);
      if (bodyStream) request.bodyStream = bodyStream;
      active++;
      const startedMs = logger.isEnabled("trace") ? performance.now() : 0;
      void router.dispatch(found.route, request).then((r) => {
        active--;
        send(res, r);
        if (closing && active === 0) onIdle?.();
        if (startedMs === 0) return;
        // Consul logs "Request finished" at debug; here it is trace so dev
        // mode (debug) does not pay a log line per request.
        logger.trace("request finished", {
          method,
          url: redactToken(url),
          from: `${req.socket.remoteAddress ?? ""}:${req.socket.remotePort ?? ""}`,
          status: r.status,
          latencyMs: Math.round((performance.now() - startedMs) * 1000) / 1000,
        });
      });
    };

    if (lengthHeader === undefined && req.headers["transfer-encoding"] === undefined) {
      run(emptyBody);
      return;
    }
    if (found.route.streamBody) {
      // The handler reads the body as it arrives (PUT /v1/snapshot: archives of any size).
      run(emptyBody, limitedBody(req, limit));
      return;
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    let rejected = false;
    req.on("data", (chunk: Uint8Array) => {
      if (rejected) return;
      size += chunk.length;
      if (size > limit) {
        // Chunked or lying Content-Length: stop buffering at the limit.
        rejected = true;
        chunks.length = 0;
        rejectTooLarge(req, res, limit, size);
        return;
      }
      chunks.push(chunk);
    });
    req.once("end", () => {
      if (rejected) return;
      if (chunks.length === 1) run(chunks[0]!);
      else {
        const body = new Uint8Array(size);
        let off = 0;
        for (const c of chunks) {
          body.set(c, off);
          off += c.length;
        }
        run(body);
      }
    });
  }

  server.on("request", onRequest);
  // Answer 413 before "100 Continue" when the declared body is already too big.
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    let path = q < 0 ? url : url.slice(0, q);
    try {
      path = decodeURIComponent(path);
    } catch { /* onRequest answers 400 */ }
    const found = router.lookup(req.method ?? "GET", path);
    const declared = Number(req.headers["content-length"] ?? 0);
    if (found.kind === "route" && declared > found.maxBodyBytes) {
      const answer = bodyTooLargeResponse(found.maxBodyBytes);
      answer.headers["Connection"] = "close";
      send(res, answer);
      return;
    }
    res.writeContinue();
    onRequest(req, res);
  });
  server.on("clientError", (err: Error & { code?: string }, socket) => {
    // Resets of idle keep-alive connections land here too: nothing to answer. So do
    // HTTPS handshake failures and timeouts (through node's tlsClientError), where no
    // HTTP can be spoken: the connection just goes.
    const handshake = !!options.tls && (err.code?.startsWith("ERR_TLS") || err.code?.startsWith("ERR_SSL") || "library" in err);
    if (err.code === "ECONNRESET" || handshake || !socket.writable || socket.destroyed) {
      socket.destroy();
      return;
    }
    logger.debug("bad HTTP request", { error: err.message, code: err.code });
    const status = err.code === "HPE_HEADER_OVERFLOW" ? "431 Request Header Fields Too Large" : "400 Bad Request";
    const text = err.code === "HPE_HEADER_OVERFLOW" ? "Request header fields too large" : `Bad request: ${err.message}`;
    socket.end(`HTTP/1.1 ${status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${new TextEncoder().encode(text).length}\r\nConnection: close\r\n\r\n${text}`);
  });

  if (options.tls) {
    server.on("tlsClientError", (err: Error, socket: Socket) => {
      logger.warn("HTTPS handshake failed", { remote: `${socket.remoteAddress}:${socket.remotePort}`, error: err.message });
    });
  }

  return {
    server,
    ...(options.tls
      ? { setSecureContext: (o: import("node:tls").SecureContextOptions) => (server as unknown as import("node:tls").Server).setSecureContext(o) }
      : {}),
    inFlight: () => active,
    listen: ({ host, port }) =>
      new Promise((resolve, reject) => {
        const onError = (err: Error): void => {
          reject(new ListenError(listenErrorMessage(host, port, err), { host, port, cause: err }));
        };
        server.once("error", onError);
        // A deep accept queue (Go asks for somaxconn too): a burst of
        // thousands of watchers connecting at once must not overflow it.
        server.listen({ host, port, backlog: 4096 }, () => {
          server.off("error", onError);
          const addr = server.address();
          const bound = typeof addr === "object" && addr ? { host: addr.address, port: addr.port } : { host, port };
          logger.debug("HTTP server listening", bound);
          resolve(bound);
        });
      }),
    close: async ({ graceMs = 2_000 } = {}) => {
      if (!server.listening) return;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const ac of cancellable) ac.abort(new Error("HTTP server is shutting down"));
      server.closeIdleConnections();
      const drained = new Promise<void>((resolve) => {
        if (active === 0) resolve();
        else onIdle = resolve;
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([drained, new Promise<void>((resolve) => { timer = setTimeout(resolve, graceMs); })]);
      clearTimeout(timer);
      server.closeAllConnections();
      await closed;
    },
  };
}

const tooManyConnsText = "Your IP is issuing too many concurrent connections, please rate limit your calls\n";
/** What Consul's connlimit writes to a client over its limit (go-connlimit HTTPConnStateFuncWithDefault429Handler). */
const tooManyRequests = "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\n" +
  `Content-Length: ${tooManyConnsText.length}\r\nConnection: close\r\n\r\n${tooManyConnsText}`;
/** A refused connection the client keeps open is closed after this long. */
const refusedLingerMs = 1_000;

/**
 * Consul's per-client-IP connection limit (hashicorp/go-connlimit, counted
 * from accept to close): a connection past the limit never reaches the HTTP
 * parser; it gets Consul's 429 and a FIN (its input is drained, so the close
 * is not a reset that could lose the answer), and is destroyed once the
 * client closes or after a second.
 */
function limitConnsPerClient(server: Server, max: number, logger: Logger): void {
  const open = new Map<string, number>();
  // node:http parses a connection from its own "connection" listener; it runs only for admitted ones.
  const accept = server.listeners("connection") as ((socket: Socket) => void)[];
  server.removeAllListeners("connection");
  server.on("connection", (socket: Socket) => {
    // Keyed by IP as Go prints it: an IPv4-mapped IPv6 address counts as the IPv4 one.
    const ip = (socket.remoteAddress ?? "").replace(/^::ffff:(?=\d+\.)/i, "");
    const n = open.get(ip) ?? 0;
    if (n >= max) {
      logger.debug("HTTP connection over the per-client limit", { client: ip, limit: max });
      socket.on("error", () => socket.destroy());
      const timer = setTimeout(() => socket.destroy(), refusedLingerMs);
      socket.once("close", () => clearTimeout(timer));
      socket.resume();
      socket.end(tooManyRequests);
      return;
    }
    open.set(ip, n + 1);
    socket.once("close", () => {
      const left = (open.get(ip) ?? 1) - 1;
      if (left > 0) open.set(ip, left);
      else open.delete(ip);
    });
    for (const listener of accept) listener.call(server, socket);
  });
}

/** A request URL for the log: a `?token=` value is never written (Consul logs `token=<hidden>`). */
export function redactToken(url: string): string {
  return /token=/i.test(url) ? url.replace(/([?&]token=)[^&]*/gi, "$1<hidden>") : url;
}
