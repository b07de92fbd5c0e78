// A GET whose body is read off the socket into buffers of our own, for
// answers of any size that a caller consumes piece by piece (the CLI's
// snapshot download). node:http cost the CLI ~0.35 CPU s per 100 MiB
// received: a Buffer per socket read, the stream machinery, its parser;
// `onread` reads straight into slabs we hand out, and http1.ts takes the
// status line, headers and chunk framing out from between the body bytes
// without copying them (docs/performance.md, "snapshot"). The same
// connection sends a request body from the caller's own buffers (the CLI's
// snapshot upload, `httpRequest`). Plain HTTP and HTTPS with the CLI's TLS
// options (the same material tlsFetch uses).
import type * as NodeNet from "node:net";
import { drained } from "../drained_node.ts";
import { ApiClient, ApiConnectionError, ApiError, connectionReason, type RawRequest } from "./client.ts";
import { Http1ResponseParser, type Http1Head } from "./http1.ts";
import { clientTlsConnectOptions, readClientTls, type ClientTlsMaterial, type ClientTlsOptions } from "./tls_fetch_node.ts";

/** The socket reads into slabs of this size, each read into the part not yet filled... */
const slabBytes = 4 * 1024 * 1024;
/** ...at most this much per read; a slab with less than `minReadBytes` left is replaced. */
const readBytes = 1024 * 1024;
const minReadBytes = 64 * 1024;
/** Body bytes handed on at a time, at most (reads that follow each other in a slab are joined up to it). */
const pieceBytes = 1024 * 1024;
/** How much of an error answer is kept for its message. */
const maxErrorTextBytes = 64 * 1024;

export interface HttpGetAnswer {
  readonly status: number;
  readonly headers: Map<string, string>;
  /**
   * Receive the body: `onPiece` gets it in pieces, views of buffers that
   * are never reused (keep them as long as needed). Returning false stops
   * reading until `resume()`. Resolves once the whole body came (the
   * connection is then closed); rejects if the answer breaks or ends early.
   * Call once.
   */
  read(onPiece: (piece: Uint8Array) => boolean | void): Promise<void>;
  resume(): void;
  /** Close the connection (the body is not wanted, or the caller failed). */
  close(): void;
}

/** A request body sent from our own buffers (the CLI's snapshot upload). */
export interface HttpUpload {
  /** Bytes in all: the Content-Length. */
  readonly length: number;
  /** The next bytes, in a buffer the caller does not touch again; undefined once `length` bytes were given. */
  next(): Promise<Uint8Array | undefined>;
}

/**
 * Send a GET on a connection of its own and wait for the answer's head.
 * Rejects with the node error when the connection fails before one.
 */
export function httpGet(url: string, options: { headers?: Record<string, string>; tls?: ClientTlsOptions; tlsMaterial?: ClientTlsMaterial; readInPlace?: boolean } = {}): Promise<HttpGetAnswer> {
  return httpRequest(url, { ...options, method: "GET" });
}

/**
 * The same for any method, with `upload` as the request body: written to
 * the socket as it is read, each buffer once the socket took the one before
 * (no node:http, no web stream in between: they cost the CLI ~0.4 CPU s
 * per 100 MiB restored). The answer may come before the body was all sent
 * (a refusal): sending stops there.
 */
export function httpRequest(url: string, options: { method: string; upload?: HttpUpload; headers?: Record<string, string>; tls?: ClientTlsOptions; tlsMaterial?: ClientTlsMaterial; readInPlace?: boolean }): Promise<HttpGetAnswer> {
  const u = new URL(url);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new TypeError(`Protocol "${u.protocol}" not supported. Expected "http:"`); // node:http's words, as before
  const isTls = u.protocol === "https:";
  const host = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
  const port = u.port === "" ? (isTls ? 443 : 80) : Number(u.port);
  if (!/^[A-Z]+$/.test(options.method)) throw new TypeError(`Invalid method ${JSON.stringify(options.method)}`);
  const upload = options.upload;
  const lines = [`${options.method} ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`];
  for (const [k, v] of Object.entries(options.headers ?? {})) {
    if (/[\r\n\0]/.test(k) || /[\r\n\0]/.test(v)) throw new TypeError(`Invalid character in header content ["${k}"]`);
    lines.push(`${k}: ${v}`);
  }
  if (upload) lines.push(`Content-Length: ${upload.length}`);
  lines.push("Connection: close", "", "");
  const request = lines.join("\r\n");

  let slab = Buffer.allocUnsafeSlow(slabBytes);
  let fill = 0;
  const nextRegion = (): Uint8Array => {
    if (slabBytes - fill < minReadBytes) {
      slab = Buffer.allocUnsafeSlow(slabBytes);
      fill = 0;
    }
    return slab.subarray(fill, Math.min(fill + readBytes, slabBytes));
  };

  // Body views wait here until `read` takes them; reads that follow each
  // other in a slab are joined into one view (no copy) up to pieceBytes.
  let piece: Uint8Array | undefined;
  let queued: Uint8Array[] = [];
  let onPiece: ((p: Uint8Array) => boolean | void) | undefined;
  let paused = false;
  let head: Http1Head | undefined;
  let settled = false;
  let failed: unknown;
  let resolveHead!: (a: HttpGetAnswer) => void;
  let rejectHead!: (err: unknown) => void;
  const headPromise = new Promise<HttpGetAnswer>((res, rej) => {
    resolveHead = res;
    rejectHead = rej;
  });
  let resolveBody: (() => void) | undefined;
  let rejectBody: ((err: unknown) => void) | undefined;

  const deliver = (p: Uint8Array): void => {
    if (!onPiece) {
      queued.push(p);
      return;
    }
    if (onPiece(p) === false) pause();
  };
  const flushPiece = (): void => {
    if (piece === undefined) return;
    const p = piece;
    piece = undefined;
    deliver(p);
  };
  const parser = new Http1ResponseParser({
    head(h) {
      head = h;
    },
    body(view) {
      if (piece !== undefined) {
        if (piece.buffer === view.buffer && piece.byteOffset + piece.length === view.byteOffset && piece.length + view.length <= pieceBytes) {
          piece = new Uint8Array(piece.buffer, piece.byteOffset, piece.length + view.length);
          return;
        }
        flushPiece();
      }
      piece = view;
      if (piece.length >= pieceBytes) flushPiece();
    },
  });

  const net = process.getBuiltinModule("node:net");
  const received = (bytes: Uint8Array): void => {
    try {
      parser.push(bytes);
      if (parser.done) flushPiece();
      if (head !== undefined && !settled) {
        settled = true;
        // The caller decides what to do with the body: nothing more is read until it does.
        pause();
        resolveHead(answer);
      }
      if (parser.done) finish();
    } catch (err) {
      fail(err);
    }
  };
  // Deno's node:net has no `onread` (a socket given one would never hand on a byte): there, 'data'
  // events, each a buffer of its own (`readInPlace: false` does the same here, for tests).
  const inPlace = options.readInPlace ?? typeof (globalThis as { Deno?: unknown }).Deno === "undefined";
  const onread = !inPlace ? undefined : {
    buffer: nextRegion,
    callback: (n: number, buf: Uint8Array): boolean => {
      fill += n;
      received(buf.subarray(0, n));
      return true;
    },
  };
  const socket: NodeNet.Socket = isTls
    ? process.getBuiltinModule("node:tls").connect({
      host,
      port,
      ...clientTlsConnectOptions(options.tls ?? {}, options.tlsMaterial ?? readClientTls(options.tls ?? {})),
      // SNI and the name checked: the host, as node:https does, unless -tls-server-name says otherwise.
      ...(options.tls?.serverName || net.isIP(host) !== 0 ? {} : { servername: host }),
      ...(onread ? { onread } : {}),
    } as import("node:tls").ConnectionOptions)
    : net.connect({ host, port, ...(onread ? { onread } : {}) });
  if (!onread) socket.on("data", (c: Uint8Array) => received(c));
  socket.setNoDelay(true);
  socket.once(isTls ? "secureConnect" : "connect", () => {
    socket.write(request);
    if (upload) void send(upload);
  });
  socket.on("error", (err) => fail(err));
  socket.on("end", () => {
    try {
      parser.end();
      flushPiece();
      finish();
    } catch (err) {
      fail(err);
    }
  });
  socket.on("close", () => {
    if (!parser.done) fail(failed ?? new Error("The connection closed before the answer ended"));
  });

  /** The upload, a buffer at a time, each written once the socket took the last (or drained); it stops once an answer or a failure came. */
  async function send(body: HttpUpload): Promise<void> {
    let sent = 0;
    const stopped = () => failed !== undefined || head !== undefined || socket.destroyed;
    try {
      for (;;) {
        if (stopped()) return;
        const chunk = await body.next();
        if (chunk === undefined) break;
        if (stopped()) return;
        sent += chunk.length;
        if (sent > body.length) throw new Error(`The request body is longer than the ${body.length} bytes announced`);
        if (!socket.write(chunk)) await drained(socket);
      }
      if (sent !== body.length) throw new Error(`The request body ended after ${sent} of the ${body.length} bytes announced`);
    } catch (err) {
      fail(err);
    }
  }

  function pause(): void {
    if (paused) return;
    paused = true;
    socket.pause();
  }
  function finish(): void {
    if (failed !== undefined) return;
    socket.destroy();
    if (!onPiece) return; // read() will find it done
    resolveBody?.();
  }
  function fail(err: unknown): void {
    if (failed !== undefined) return;
    failed = err;
    socket.destroy();
    if (!settled) {
      settled = true;
      rejectHead(err);
      return;
    }
    rejectBody?.(err);
  }

  const answer: HttpGetAnswer = {
    get status() {
      return head!.status;
    },
    get headers() {
      return head!.headers;
    },
    read(cb) {
      if (onPiece) throw new Error("read() was called twice");
      onPiece = cb;
      const done = new Promise<void>((res, rej) => {
        resolveBody = res;
        rejectBody = rej;
      });
      // Marked handled: a caller that gave up (and closed) need not await it.
      done.catch(() => {});
      let wantsMore = true;
      for (const p of queued) if (cb(p) === false) wantsMore = false;
      queued = [];
      if (failed !== undefined) return Promise.reject(failed);
      if (parser.done) return Promise.resolve();
      if (wantsMore) answer.resume();
      return done;
    },
    resume() {
      if (!paused || failed !== undefined) return;
      paused = false;
      socket.resume();
    },
    close() {
      socket.destroy();
    },
  };
  return headPromise;
}

/**
 * A request to the agent's API on a connection of its own (`httpRequest`),
 * for a body the caller reads piece by piece or one it sends from its own
 * buffers (`upload`): the URL and token of `client`,
 * errors as its other requests give them (ApiConnectionError when the agent
 * cannot be reached, ApiError with the agent's text for a status outside
 * 2xx).
 */
export async function apiStream(client: ApiClient, req: RawRequest, options: { tls?: ClientTlsOptions; tlsMaterial?: ClientTlsMaterial; upload?: HttpUpload } = {}): Promise<HttpGetAnswer> {
  const { url, headers } = client.prepare(req);
  let answer: HttpGetAnswer;
  try {
    answer = await httpRequest(url, { method: req.method, headers, ...options });
  } catch (err) {
    throw new ApiConnectionError(client.address, connectionReason(err), { cause: err });
  }
  if (answer.status >= 200 && answer.status < 300) return answer;
  const parts: Uint8Array[] = [];
  let kept = 0;
  try {
    await answer.read((p) => {
      if (kept >= maxErrorTextBytes) return;
      parts.push(p.subarray(0, maxErrorTextBytes - kept));
      kept += Math.min(p.length, maxErrorTextBytes - kept);
    });
  } catch {
    // The status says what went wrong; a body cut short still says what it can.
  }
  throw new ApiError(answer.status, Buffer.concat(parts).toString("utf8"));
}
