// Server RPC over TCP (default port 8300): a server that dispatches framed
// msgpack requests and one-way messages to handlers, and a client pool that
// keeps one connection per address with many calls in flight on it.
//
// Writes are batched: every frame queued in the same turn of the event loop
// goes out in one socket write (one syscall), so a Raft tick that emits many
// small messages costs one write per peer.

import { connect, createServer } from "node:net";
import { setImmediate } from "node:timers";
import type { Server, Socket } from "node:net";
import type { Clock, Timer } from "../clock/clock.ts";
import { dialFrom } from "../dial_node.ts";
import { systemClock } from "../clock/system_clock.ts";
import { byteLength, partsOf } from "../bytes.ts";
import { errorMessage, RpcError, RpcTimeoutError, TooLargeError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { Rpc, RpcArgs, RpcHandlers, RpcMethod, RpcReply } from "./methods.ts";
import { defaultMaxFrameBytes, encodeFrame, FrameDecoder, FrameKind, rpcProtocolV1, rpcTlsMarker } from "./frame.ts";
import type { Frame } from "./frame.ts";
import { fromWireError, toWireError } from "./wire_error.ts";

export const defaultRpcPort = 8300;

/** TCP keep-alive probes start after this much silence, so a peer that vanished without a FIN is noticed. */
const keepAliveMs = 30_000;

export interface RpcContext {
  /** "ip:port" of the calling connection. */
  remoteAddress: string;
  /** True for a one-way message (the result is discarded). */
  oneWay: boolean;
  /** Aborted when the calling connection closes (a blocking query can stop waiting). */
  signal: AbortSignal;
}

/** Answers one method. Thrown errors go back to the caller as wire errors. */
export type RpcServerHandler = (body: unknown, ctx: RpcContext) => unknown;

export interface RpcServerStats {
  accepted: number;
  open: number;
  requests: number;
  oneWay: number;
  unknownMethods: number;
  handlerErrors: number;
  /** Connections whose first byte was not a cairn protocol marker. */
  badProtocol: number;
  /** Connections closed for a garbage, oversized or misplaced frame. */
  badFrames: number;
  oversizedFrames: number;
  /** Connections closed because replies piled up unread. */
  slowConsumers: number;
  /** Plaintext connections refused because verify_incoming is set. */
  plaintextRefused: number;
  /** TLS connections refused: no certificate here, or a failed handshake (no or a foreign client certificate). */
  tlsRefused: number;
  /** Connections closed for not naming their protocol (or not finishing TLS) within rpc_handshake_timeout. */
  handshakeTimeouts: number;
}

export interface RpcServer {
  readonly host: string;
  readonly port: number;
  /** "host:port" to dial. */
  readonly address: string;
  readonly stats: Readonly<RpcServerStats>;
  /** Adds or replaces the handler for a method; `undefined` removes it. */
  handle(method: string, handler: RpcServerHandler | undefined): void;
  close(): Promise<void>;
}

export interface RpcServerOptions {
  /** Default "0.0.0.0". */
  host?: string;
  /** Default 8300; 0 picks a free port. */
  port?: number;
  handlers?: Record<string, RpcServerHandler> | Map<string, RpcServerHandler>;
  logger: Logger;
  maxFrameBytes?: number;
  /** A connection whose unsent replies exceed this is closed (a client that does not read). Default 64 MiB. */
  maxQueuedBytes?: number;
  /** TLS (tls.internal_rpc): read on every new connection, so a reload applies to the next one. */
  tls?: () => RpcServerTls | undefined;
  /**
   * limits.rpc_handshake_timeout: a connection must send its protocol byte within this,
   * and a TLS one must then finish its handshake within it again. Default 5 s; 0 = no limit.
   */
  handshakeTimeoutMs?: number;
}

export interface RpcServerTls {
  /** Certificate and CAs; undefined: no certificate, so TLS connections are refused. */
  secureContext?: import("node:tls").SecureContext;
  /** Refuse plaintext connections, and TLS ones without a client certificate from the CA. */
  verifyIncoming: boolean;
}

/** Splits "host:port" or "[v6]:port". */
export function parseAddress(address: string): { host: string; port: number } | undefined {
  const i = address.lastIndexOf(":");
  if (i <= 0) return undefined;
  let host = address.slice(0, i);
  const port = Number(address.slice(i + 1));
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (!Number.isInteger(port) || port <= 0 || port > 65535 || host === "") return undefined;
  return { host, port };
}

export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Collects frames written in one event-loop turn and writes them with one
 * socket write. The write waits for the check phase (setImmediate), not a
 * microtask: everything the turn's I/O callbacks produce shares it, and
 * replies written in the turn (HTTP answers to the writes Raft just applied)
 * go out before a commit notice wakes a follower that may take our CPU.
 */
/** A batch up to this size is copied into one buffer for its write; a bigger one is written as it is (corked). */
const gatherBytes = 256 * 1024;

class BatchWriter {
  #socket: Socket;
  #chunks: Uint8Array[] = [];
  #bytes = 0;
  #scheduled = false;
  /** Frames wait (a TLS handshake is under way) until release(). */
  #held: boolean;
  readonly #counters: { writes: number; framesSent: number } | undefined;

  constructor(socket: Socket, counters?: { writes: number; framesSent: number }, options: { held?: boolean } = {}) {
    this.#socket = socket;
    this.#counters = counters;
    this.#held = options.held ?? false;
  }

  /** Write to `socket` from now on (the TLS socket over the TCP one) and send what waited. */
  release(socket: Socket): void {
    this.#socket = socket;
    this.#held = false;
    this.flush();
  }

  /** Bytes waiting in our batch plus in the socket's buffer. */
  get queuedBytes(): number {
    return this.#bytes + this.#socket.writableLength;
  }

  /** One frame, in one buffer or as its parts end to end (each queued as it is, not copied). */
  enqueue(bytes: Uint8Array | readonly Uint8Array[]): void {
    const parts = partsOf(bytes);
    this.#chunks.push(...parts);
    this.#bytes += byteLength(parts);
    if (this.#counters) this.#counters.framesSent++;
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#held) return;
    if (this.#chunks.length === 0 || this.#socket.destroyed) {
      this.#chunks = [];
      this.#bytes = 0;
      return;
    }
    const chunks = this.#chunks;
    const bytes = this.#bytes;
    this.#chunks = [];
    this.#bytes = 0;
    if (this.#counters) this.#counters.writes++;
    if (chunks.length === 1) {
      this.#socket.write(chunks[0]!);
    } else if (bytes > gatherBytes) {
      // Big frames (InstallSnapshot chunks, snapshot pulls) are not copied
      // into one buffer: corked writes leave as one writev.
      this.#socket.cork();
      for (const c of chunks) this.#socket.write(c);
      this.#socket.uncork();
    } else {
      const out = new Uint8Array(bytes);
      let at = 0;
      for (const c of chunks) {
        out.set(c, at);
        at += c.length;
      }
      this.#socket.write(out);
    }
  }
}

export async function createRpcServer(options: RpcServerOptions): Promise<RpcServer> {
  const log = options.logger;
  const maxFrameBytes = options.maxFrameBytes ?? defaultMaxFrameBytes;
  const handlers = new Map<string, RpcServerHandler>(
    options.handlers instanceof Map ? options.handlers : Object.entries(options.handlers ?? {}),
  );
  const stats: RpcServerStats = {
    accepted: 0,
    open: 0,
    requests: 0,
    oneWay: 0,
    unknownMethods: 0,
    handlerErrors: 0,
    badProtocol: 0,
    badFrames: 0,
    oversizedFrames: 0,
    slowConsumers: 0,
    plaintextRefused: 0,
    tlsRefused: 0,
    handshakeTimeouts: 0,
  };
  const maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
  const sockets = new Set<Socket>();

  const server: Server = createServer((socket) => {
    stats.accepted++;
    stats.open++;
    sockets.add(socket);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, keepAliveMs);
    const remoteAddress = formatAddress(socket.remoteAddress ?? "?", socket.remotePort ?? 0);
    const writer = new BatchWriter(socket);
    const decoder = new FrameDecoder({ maxFrameBytes });
    let sawMarker = false;
    let closed = false;
    /** The socket frames travel on: the TCP one, or the TLS one over it. */
    let stream: Socket = socket;
    // One signal per call, not one per connection: under load hundreds of
    // handlers wait at once on a pooled connection, and the abort listeners
    // each adds (blocking waits, Raft applies, read barriers) must go with
    // its call. Made only when a handler reads it (Raft messages never do).
    const callsInFlight = new Set<AbortController>();
    let gone: RpcError | undefined;

    const drop = (why: string, fields: Record<string, unknown>): void => {
      if (closed) return;
      closed = true;
      log.warn(why, { remote: remoteAddress, ...fields });
      socket.destroy();
    };

    const answer = (id: number, result: Promise<unknown>, method: string): void => {
      result.then(
        (body) => {
          if (closed) return;
          let bytes: Uint8Array;
          try {
            bytes = encodeFrame({ t: FrameKind.Response, id, body });
          } catch (err) {
            stats.handlerErrors++;
            log.error("cannot encode RPC reply", { method, error: errorMessage(err) });
            bytes = encodeFrame({ t: FrameKind.Response, id, error: { code: "internal", message: `Cannot encode reply of "${method}"` } });
          }
          if (bytes.length - 4 > maxFrameBytes) {
            bytes = encodeFrame({
              t: FrameKind.Response,
              id,
              error: { code: "too_large", message: `Reply of "${method}" is ${bytes.length} bytes, over the limit of ${maxFrameBytes}` },
            });
          }
          writer.enqueue(bytes);
          if (writer.queuedBytes > maxQueuedBytes) {
            stats.slowConsumers++;
            drop("closing RPC connection: client is not reading its replies", { queuedBytes: writer.queuedBytes });
          }
        },
        (err: unknown) => {
          stats.handlerErrors++;
          log.debug("RPC handler failed", { method, error: errorMessage(err) });
          if (!closed) writer.enqueue(encodeFrame({ t: FrameKind.Response, id, error: toWireError(err) }));
        },
      );
    };

    const dispatch = (frame: Frame): void => {
      if (frame.t === FrameKind.Response) {
        stats.badFrames++;
        drop("closing RPC connection: client sent a response frame", { id: frame.id });
        return;
      }
      const oneWay = frame.t === FrameKind.OneWay;
      if (oneWay) stats.oneWay++;
      else stats.requests++;
      const handler = handlers.get(frame.method);
      if (!handler) {
        stats.unknownMethods++;
        log.debug("unknown RPC method", { method: frame.method, remote: remoteAddress });
        if (!oneWay) {
          writer.enqueue(encodeFrame({
            t: FrameKind.Response,
            id: frame.id,
            error: { code: "unknown_method", message: `Unknown RPC method "${frame.method}"` },
          }));
        }
        return;
      }
      let call: AbortController | undefined;
      let result: Promise<unknown>;
      try {
        result = Promise.resolve(handler(frame.body, {
          remoteAddress,
          oneWay,
          get signal() {
            if (!call) {
              call = new AbortController();
              if (gone) call.abort(gone);
              else callsInFlight.add(call);
            }
            return call.signal;
          },
        }));
      } catch (err) {
        result = Promise.reject(err);
      }
      const settled = (): void => {
        if (call) callsInFlight.delete(call);
      };
      result.then(settled, settled);
      if (oneWay) {
        result.catch((err: unknown) => {
          stats.handlerErrors++;
          log.debug("one-way RPC handler failed", { method: frame.method, error: errorMessage(err) });
        });
      } else {
        answer(frame.id, result, frame.method);
      }
    };

    const tlsNow = options.tls?.();
    const handshakeMs = options.handshakeTimeoutMs ?? 5_000;
    let handshakeTimer: ReturnType<typeof setTimeout> | undefined;
    const armHandshake = (what: string): void => {
      if (handshakeTimer) clearTimeout(handshakeTimer);
      if (handshakeMs <= 0) return;
      handshakeTimer = setTimeout(() => {
        if (sawMarker || closed) return;
        stats.handshakeTimeouts++;
        drop(`closing RPC connection: ${what} within rpc_handshake_timeout`, { timeoutMs: handshakeMs });
      }, handshakeMs);
      handshakeTimer.unref?.();
    };
    armHandshake("no protocol byte");
    const onData = (chunk: Uint8Array): void => {
      if (closed) return;
      let data = chunk;
      if (!sawMarker) {
        if (data.length === 0) return;
        if (data[0] === rpcTlsMarker && stream === socket) {
          startTls(data.length);
          return;
        }
        if (data[0] !== rpcProtocolV1) {
          stats.badProtocol++;
          drop("closing RPC connection: unknown protocol marker", { byte: data[0] });
          return;
        }
        if (stream === socket && tlsNow?.verifyIncoming) {
          stats.plaintextRefused++;
          drop("closing RPC connection: non-TLS connection attempted with verify_incoming set", {});
          return;
        }
        sawMarker = true;
        if (handshakeTimer) clearTimeout(handshakeTimer);
        data = data.subarray(1);
      }
      const { frames, error } = decoder.push(data);
      for (const f of frames) {
        if (closed) return;
        dispatch(f);
      }
      if (error) {
        stats.badFrames++;
        if (error.reason === "too_large") stats.oversizedFrames++;
        drop("closing RPC connection: bad frame", { reason: error.reason, error: error.message });
      }
    };
    /** The client asked for TLS: answer the marker, hand the socket to TLS, and read frames from inside it. */
    const startTls = (bytes: number): void => {
      if (bytes !== 1) {
        stats.badProtocol++;
        drop("closing RPC connection: data after the TLS marker before the answer", {});
        return;
      }
      if (!tlsNow?.secureContext) {
        stats.tlsRefused++;
        drop("closing RPC connection: TLS connection attempted but this agent has no certificate for RPC (tls.internal_rpc)", {});
        return;
      }
      socket.removeListener("data", onData);
      socket.write(new Uint8Array([rpcTlsMarker]));
      armHandshake("no TLS handshake");
      const secure = new (process.getBuiltinModule("node:tls").TLSSocket)(socket, {
        isServer: true,
        secureContext: tlsNow.secureContext,
        requestCert: tlsNow.verifyIncoming,
        rejectUnauthorized: tlsNow.verifyIncoming,
      });
      stream = secure;
      writer.release(secure);
      secure.on("data", onData);
      secure.on("error", (err) => {
        if (!sawMarker) {
          stats.tlsRefused++;
          drop("closing RPC connection: TLS handshake failed", { error: err.message });
        } else log.debug("RPC connection error", { remote: remoteAddress, error: err.message });
      });
    };
    socket.on("data", onData);
    socket.on("error", (err) => log.debug("RPC connection error", { remote: remoteAddress, error: err.message }));
    socket.on("close", () => {
      if (handshakeTimer) clearTimeout(handshakeTimer);
      closed = true;
      gone = new RpcError(`Connection from "${remoteAddress}" closed`);
      for (const c of callsInFlight) c.abort(gone);
      callsInFlight.clear();
      stats.open--;
      sockets.delete(socket);
    });
  });

  const host = options.host ?? "0.0.0.0";
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(new RpcError(`Cannot listen for RPC on "${formatAddress(host, options.port ?? defaultRpcPort)}": ${err.message}`, { cause: err }));
    server.once("error", onError);
    server.listen(options.port ?? defaultRpcPort, host, () => {
      server.off("error", onError);
      resolve();
    });
  });
  server.on("error", (err) => log.error("RPC listener error", { error: err.message }));
  const bound = server.address();
  const port = typeof bound === "object" && bound ? bound.port : (options.port ?? defaultRpcPort);
  log.info("RPC server listening", { address: formatAddress(host, port) });

  return {
    host,
    port,
    address: formatAddress(host, port),
    stats,
    handle(method, handler) {
      if (handler) handlers.set(method, handler);
      else handlers.delete(method);
    },
    close() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

// ---------------------------------------------------------------- client

export interface RpcClientStats {
  connects: number;
  connectFailures: number;
  calls: number;
  timeouts: number;
  /** Responses that came after their call timed out or was aborted. */
  lateResponses: number;
  oneWaySent: number;
  /** One-way messages dropped (peer backing off after a failure, queue full, too large). */
  oneWayDropped: number;
  /** Connections closed for a bad frame from the server. */
  badFrames: number;
  /** Socket writes (each may carry many frames). */
  writes: number;
  framesSent: number;
}

export interface RpcClientPoolOptions {
  logger: Logger;
  /** Timers for call and connect timeouts; default the system clock. */
  clock?: Clock;
  maxFrameBytes?: number;
  /** Default per-call timeout (ms). Default 30 s. */
  callTimeoutMs?: number;
  /** Default 5 s. */
  connectTimeoutMs?: number;
  /** After a failed connect, one-way messages to that address are dropped this long (ms). Default 250. */
  reconnectBackoffMs?: number;
  /** One-way messages are dropped while more than this many bytes wait to be written. Default 32 MiB. */
  maxQueuedBytes?: number;
  /** Dial from this address (a server's bind address), so peers and firewall rules can tell servers on one host apart. */
  localAddress?: string;
  /** TLS for new connections (verify_outgoing), read on every dial so a reload applies to the next one. */
  tls?: () => RpcClientTls | undefined;
}

export interface RpcClientTls {
  /** Our certificate (for servers that verify incoming), the CAs, whether the chain is checked. */
  options: import("node:tls").ConnectionOptions;
  /** verify_server_hostname: the name the server at `address` must have a certificate for (server.<dc>.<domain>). */
  serverName?: (address: string) => string | undefined;
}

export interface CallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

interface PendingCall {
  resolve(v: unknown): void;
  reject(err: unknown): void;
  timer: Timer;
  method: string;
}

class ClientConnection {
  readonly address: string;
  readonly #pool: RpcClientPool;
  readonly #socket: Socket;
  readonly #writer: BatchWriter;
  readonly #decoder: FrameDecoder;
  readonly #pending = new Map<number, PendingCall>();
  #nextId = 1;
  #connectTimer: Timer | undefined;
  #connected = false;
  closed = false;

  constructor(pool: RpcClientPool, address: string, host: string, port: number) {
    this.#pool = pool;
    this.address = address;
    this.#decoder = new FrameDecoder({ maxFrameBytes: pool.maxFrameBytes });
    this.#socket = connect({ host, port, localAddress: dialFrom(pool.localAddress ?? "", host) });
    this.#socket.setNoDelay(true);
    this.#socket.setKeepAlive(true, keepAliveMs);
    const tls = pool.tls?.();
    this.#writer = new BatchWriter(this.#socket, pool.stats, { held: tls !== undefined });
    this.#connectTimer = pool.clock.setTimer(pool.connectTimeoutMs, () => {
      this.#fail(new RpcError(`Cannot connect to "${address}": timed out after ${pool.connectTimeoutMs} ms`, { unsent: true }));
    });
    const ready = (): void => {
      this.#connected = true;
      this.#connectTimer?.cancel();
      this.#connectTimer = undefined;
      pool.onConnected(this);
    };
    if (!tls) {
      this.#socket.write(new Uint8Array([rpcProtocolV1]));
      this.#socket.on("connect", ready);
      this.#socket.on("data", (chunk: Uint8Array) => this.#onData(chunk));
    } else {
      // Ask for TLS, wait for the server's answer, then handshake on the same socket.
      this.#socket.write(new Uint8Array([rpcTlsMarker]));
      const onAnswer = (chunk: Uint8Array): void => {
        this.#socket.removeListener("data", onAnswer);
        if (chunk.length !== 1 || chunk[0] !== rpcTlsMarker) {
          this.#fail(new RpcError(`Cannot connect to "${address}": the server did not accept TLS`, { unsent: true }));
          return;
        }
        const serverName = tls.serverName?.(address);
        const secure = process.getBuiltinModule("node:tls").connect({
          ...tls.options,
          socket: this.#socket,
          ...(serverName !== undefined ? { servername: serverName } : {}),
        });
        secure.on("secureConnect", () => {
          secure.write(new Uint8Array([rpcProtocolV1]));
          this.#writer.release(secure);
          ready();
        });
        secure.on("data", (c: Uint8Array) => this.#onData(c));
        secure.on("error", (err) => {
          const what = this.#connected ? `Connection to "${address}" failed` : `TLS handshake with "${address}" failed`;
          this.#fail(new RpcError(`${what}: ${err.message}`, { cause: err, unsent: !this.#connected }));
        });
      };
      this.#socket.on("data", onAnswer);
    }
    this.#socket.on("error", (err) => {
      const what = this.#connected ? `Connection to "${address}" failed` : `Cannot connect to "${address}"`;
      // Before the connection is made no frame can have left: the caller may send the request elsewhere.
      this.#fail(new RpcError(`${what}: ${err.message}`, { cause: err, unsent: !this.#connected }));
    });
    this.#socket.on("close", () => this.#fail(new RpcError(`Connection to "${address}" closed`, { unsent: !this.#connected })));
  }

  get isConnected(): boolean {
    return this.#connected;
  }

  get queuedBytes(): number {
    return this.#writer.queuedBytes;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  call(method: string, body: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const pool = this.#pool;
    const id = this.#nextId++;
    let bytes: Uint8Array;
    try {
      bytes = encodeFrame({ t: FrameKind.Request, id, method, body });
    } catch (err) {
      return Promise.reject(new RpcError(`Cannot encode arguments of "${method}": ${errorMessage(err)}`, { cause: err, unsent: true }));
    }
    if (bytes.length - 4 > pool.maxFrameBytes) {
      return Promise.reject(new TooLargeError(`Request "${method}" is ${bytes.length} bytes, over the limit of ${pool.maxFrameBytes}`, pool.maxFrameBytes));
    }
    return new Promise<unknown>((resolve, reject) => {
      const finish = (): void => {
        this.#pending.delete(id);
        timer.cancel();
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = (): void => {
        finish();
        reject(signal?.reason ?? new RpcError(`RPC "${method}" to "${this.address}" was aborted`));
      };
      const timer = pool.clock.setTimer(timeoutMs, () => {
        finish();
        pool.stats.timeouts++;
        reject(new RpcTimeoutError(`RPC "${method}" to "${this.address}" timed out after ${timeoutMs} ms`));
      });
      this.#pending.set(id, {
        method,
        timer,
        resolve: (v) => {
          finish();
          resolve(v);
        },
        reject: (e) => {
          finish();
          reject(e);
        },
      });
      if (signal) {
        if (signal.aborted) {
          onAbort();
          return;
        }
        signal.addEventListener("abort", onAbort, { once: true });
      }
      this.#writer.enqueue(bytes);
    });
  }

  /** Queues a one-way frame (already encoded), in one buffer or as its parts. */
  send(bytes: Uint8Array | readonly Uint8Array[]): void {
    this.#writer.enqueue(bytes);
  }

  /** Writes the queued frames now (once connected; before that they wait for the socket). */
  flush(): void {
    this.#writer.flush();
  }

  close(): void {
    this.#fail(new RpcError(`Connection to "${this.address}" closed`));
  }

  #onData(chunk: Uint8Array): void {
    if (this.closed) return;
    const { frames, error } = this.#decoder.push(chunk);
    for (const f of frames) {
      if (f.t !== FrameKind.Response) {
        this.#pool.stats.badFrames++;
        this.#fail(new RpcError(`Connection to "${this.address}" closed: server sent a non-response frame`));
        return;
      }
      const p = this.#pending.get(f.id);
      if (!p) {
        this.#pool.stats.lateResponses++;
        continue;
      }
      if (f.error) p.reject(fromWireError(f.error));
      else p.resolve(f.body);
    }
    if (error) {
      this.#pool.stats.badFrames++;
      this.#pool.log.warn("closing RPC connection: bad frame from server", { address: this.address, reason: error.reason, error: error.message });
      this.#fail(new RpcError(`Connection to "${this.address}" closed: ${error.message}`));
    }
  }

  #fail(err: RpcError): void {
    if (this.closed) return;
    this.closed = true;
    this.#connectTimer?.cancel();
    this.#connectTimer = undefined;
    this.#socket.destroy();
    for (const p of [...this.#pending.values()]) p.reject(err);
    this.#pending.clear();
    this.#pool.onClosed(this, this.#connected, err);
  }
}

/**
 * One connection per address, created on first use and again after it is
 * lost. Calls are request/response with a timeout; `send` is one-way,
 * best effort (Raft messages).
 */
export class RpcClientPool {
  readonly log: Logger;
  readonly clock: Clock;
  readonly maxFrameBytes: number;
  readonly callTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly reconnectBackoffMs: number;
  readonly maxQueuedBytes: number;
  readonly #lostListeners = new Set<(address: string) => void>();
  readonly localAddress: string | undefined;
  readonly tls: (() => RpcClientTls | undefined) | undefined;
  readonly stats: RpcClientStats = {
    connects: 0,
    connectFailures: 0,
    calls: 0,
    timeouts: 0,
    lateResponses: 0,
    oneWaySent: 0,
    oneWayDropped: 0,
    badFrames: 0,
    writes: 0,
    framesSent: 0,
  };
  readonly #conns = new Map<string, ClientConnection>();
  readonly #backoffUntil = new Map<string, number>();
  #closed = false;

  constructor(options: RpcClientPoolOptions) {
    this.log = options.logger;
    this.clock = options.clock ?? systemClock;
    this.maxFrameBytes = options.maxFrameBytes ?? defaultMaxFrameBytes;
    this.callTimeoutMs = options.callTimeoutMs ?? 30_000;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.reconnectBackoffMs = options.reconnectBackoffMs ?? 250;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 32 * 1024 * 1024;
    this.localAddress = options.localAddress;
    this.tls = options.tls;
  }

  /** Calls `method` on the server at `address` ("host:port"). */
  call(address: string, method: string, body: unknown, options: CallOptions = {}): Promise<unknown> {
    this.stats.calls++;
    const conn = this.#get(address);
    if (conn instanceof Error) return Promise.reject(conn);
    return conn.call(method, body, options.timeoutMs ?? this.callTimeoutMs, options.signal);
  }

  /** Sends a one-way message. Returns false when it was dropped. */
  send(address: string, method: string, body: unknown): boolean {
    let bytes: Uint8Array;
    try {
      bytes = encodeFrame({ t: FrameKind.OneWay, method, body });
    } catch (err) {
      this.stats.oneWayDropped++;
      this.log.warn("cannot encode one-way RPC", { address, method, error: errorMessage(err) });
      return false;
    }
    return this.sendEncoded(address, method, bytes);
  }

  /**
   * Sends a one-way frame already encoded (`encodeFrame`, or
   * `encodeFrameWithBin` once its bytes are filled in), in one buffer or as
   * its parts end to end (`encodeFrameHeadForBin` and the bytes after it).
   * The frame is queued as it is, not copied: leave it unchanged. Returns
   * false when it was dropped.
   */
  sendEncoded(address: string, method: string, frame: Uint8Array | readonly Uint8Array[]): boolean {
    const length = byteLength(partsOf(frame));
    const until = this.#backoffUntil.get(address);
    if (until !== undefined) {
      if (this.clock.now() < until) {
        this.stats.oneWayDropped++;
        return false;
      }
      this.#backoffUntil.delete(address);
    }
    if (length - 4 > this.maxFrameBytes) {
      this.stats.oneWayDropped++;
      this.log.warn("dropping one-way RPC over the frame limit", { address, method, sizeBytes: length });
      return false;
    }
    const conn = this.#get(address);
    if (conn instanceof Error) {
      this.stats.oneWayDropped++;
      return false;
    }
    if (conn.queuedBytes > this.maxQueuedBytes) {
      this.stats.oneWayDropped++;
      this.log.debug("dropping one-way RPC: send queue full", { address, method });
      return false;
    }
    this.stats.oneWaySent++;
    conn.send(frame);
    return true;
  }

  /** Writes every connection's queued frames now instead of at the end of the event-loop turn. */
  flush(): void {
    for (const c of this.#conns.values()) c.flush();
  }

  /** A typed view of the server at `address`, implementing `Rpc`. */
  remote(address: string, options: { timeoutMs?: number } = {}): Rpc {
    return new RemoteRpc(this, address, options);
  }

  /** Number of open or opening connections. */
  get size(): number {
    return this.#conns.size;
  }

  /** Closes the connection to one address (pending calls fail). */
  closeAddress(address: string): void {
    this.#conns.get(address)?.close();
  }

  close(): void {
    this.#closed = true;
    for (const c of [...this.#conns.values()]) c.close();
    this.#conns.clear();
  }

  /** @internal */
  onConnected(conn: ClientConnection): void {
    this.stats.connects++;
    this.log.debug("RPC connection open", { address: conn.address });
  }

  /** @internal */
  onClosed(conn: ClientConnection, wasConnected: boolean, err: RpcError): void {
    if (this.#conns.get(conn.address) === conn) this.#conns.delete(conn.address);
    if (!wasConnected) {
      this.stats.connectFailures++;
      this.#backoffUntil.set(conn.address, this.clock.now() + this.reconnectBackoffMs);
    }
    if (!this.#closed) this.log.debug("RPC connection closed", { address: conn.address, error: err.message });
    if (wasConnected && !this.#closed) {
      for (const fn of this.#lostListeners) fn(conn.address);
    }
  }

  /** Called with the address when an established connection ends (the peer closed it, reset it, or died). */
  onConnectionLost(fn: (address: string) => void): () => void {
    this.#lostListeners.add(fn);
    return () => this.#lostListeners.delete(fn);
  }

  #get(address: string): ClientConnection | Error {
    if (this.#closed) return new RpcError("RPC client pool is closed", { unsent: true });
    const existing = this.#conns.get(address);
    if (existing && !existing.closed) return existing;
    const hp = parseAddress(address);
    if (!hp) return new RpcError(`Bad RPC address "${address}": expected "host:port"`, { unsent: true });
    const conn = new ClientConnection(this, address, hp.host, hp.port);
    this.#conns.set(address, conn);
    return conn;
  }
}

/** `Rpc` over the network to one server. Blocking reads get their wait added to the timeout. */
export class RemoteRpc implements Rpc {
  readonly #pool: RpcClientPool;
  readonly #address: string;
  readonly #timeoutMs: number | undefined;

  constructor(pool: RpcClientPool, address: string, options: { timeoutMs?: number } = {}) {
    this.#pool = pool;
    this.#address = address;
    this.#timeoutMs = options.timeoutMs;
  }

  async call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options: { signal?: AbortSignal } = {}): Promise<RpcReply<M>> {
    const base = this.#timeoutMs ?? this.#pool.callTimeoutMs;
    const reply = await this.#pool.call(this.#address, method, args, {
      timeoutMs: base + blockingWaitMs(args),
      signal: options.signal,
    });
    return reply as RpcReply<M>;
  }
}

/** The longest a blocking read may wait on the server, plus the jitter servers add (1/16). */
function blockingWaitMs(args: unknown): number {
  if (typeof args !== "object" || args === null) return 0;
  const q = (args as { query?: { minQueryIndex?: unknown; maxQueryTimeMs?: unknown } }).query;
  if (!q || typeof q.maxQueryTimeMs !== "number" || !(Number(q.minQueryIndex) > 0)) return 0;
  return Math.ceil(q.maxQueryTimeMs * (1 + 1 / 16));
}

/**
 * Server-side handlers for every `Family.Verb` in a handler table (core/server
 * `Server.handlers`). Arguments come from the network: the endpoints must
 * validate them. The handler's signal aborts when the caller disconnects.
 */
export function serveRpcHandlers(handlers: Partial<RpcHandlers>): Map<string, RpcServerHandler> {
  const out = new Map<string, RpcServerHandler>();
  for (const [method, h] of Object.entries(handlers)) {
    if (typeof h !== "function") continue;
    const fn = h as (args: unknown, options?: { signal?: AbortSignal }) => Promise<unknown>;
    out.set(method, (body, ctx) => fn(body, { signal: ctx.signal }));
  }
  return out;
}

/**
 * Server-side handlers that answer the listed `Family.Verb` methods from a
 * local `Rpc` (the server's endpoints). Arguments come from the network:
 * the endpoints must validate them.
 */
export function rpcHandlers(rpc: Rpc, methods: readonly RpcMethod[]): Map<string, RpcServerHandler> {
  const out = new Map<string, RpcServerHandler>();
  for (const m of methods) {
    out.set(m, (body, ctx) => rpc.call(m, body as RpcArgs<typeof m>, { signal: ctx.signal }));
  }
  return out;
}
