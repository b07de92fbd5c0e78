// The agent's configured watches (consul agent/agent.go reloadWatches,
// agent/watch_handler.go): each `watches` entry is a watch plan (core/watch)
// run against this agent's own HTTP API, with a script or HTTP handler.
//
// Script handler: `args` run directly, or the deprecated `handler` string
// through `/bin/sh -c`; the view's JSON on stdin, CONSUL_INDEX in the
// environment; its output (the last 4 KiB) logged at debug, a failure at
// error. HTTP handler: the same JSON sent with the configured method
// (default POST), headers, Content-Type and X-Consul-Index, within the
// timeout (default 10 s); a non-2xx answer is logged.
//
// A reload stops the watches that are gone or changed and starts the new
// ones; a watch that is still configured the same keeps running (Consul
// restarts every watch, so its handlers fire again; cairn's do not).
import { request as httpRequest, type IncomingMessage } from "node:http";
import type { Clock } from "../clock/clock.ts";
import type { WatchConfig, WatchHttpHandlerConfig } from "../config/types.ts";
import { ApiClient } from "../api/client.ts";
import { ConfigError, errorMessage } from "../errors.ts";
import { spawn } from "../lazy_builtins_node.ts";
import type { Logger } from "../log/logger.ts";
import { runWatchPlan, watchQuery, type WatchClient } from "./mod.ts";

/** Consul's WatchBufSize: the handler output kept for the log. */
const outputMaxBytes = 4 * 1024;

export type WatchHandler = (index: string, data: unknown, signal: AbortSignal) => Promise<void>;

function body(data: unknown): Uint8Array {
  // Go's json.Encoder ends the document with a newline.
  return new TextEncoder().encode(`${JSON.stringify(data)}\n`);
}

function describe(w: WatchConfig): string {
  return w.args ? w.args.join(" ") : w.handler ?? w.httpHandlerConfig?.path ?? "";
}

/** Run a script handler once: resolves when it has exited (never rejects). */
export function runScriptHandler(w: Pick<WatchConfig, "args" | "handler">, index: string, data: unknown, logger: Logger): Promise<void> {
  const [cmd, argv] = w.args ? [w.args[0]!, w.args.slice(1)] : ["/bin/sh", ["-c", w.handler ?? ""]];
  const handler = w.args ? w.args.join(" ") : w.handler ?? "";
  return new Promise((resolve) => {
    let output = "";
    let total = 0;
    const keep = (chunk: Buffer) => {
      total += chunk.length;
      output = (output + chunk.toString()).slice(-outputMaxBytes);
    };
    const child = spawn(cmd, argv, { env: { ...process.env, CONSUL_INDEX: index }, stdio: ["pipe", "pipe", "pipe"] });
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.stdin?.on("error", () => {});
    child.stdin?.end(body(data));
    child.once("error", (err) => {
      logger.error("Failed to run watch handler", { handler, error: err.message });
      resolve();
    });
    child.once("close", (code, signal) => {
      if (code !== 0) logger.error("Failed to run watch handler", { handler, error: signal ? `signal: ${signal}` : `exit status ${code}` });
      const truncated = total > outputMaxBytes ? `\n\n[output truncated to ${outputMaxBytes} bytes]` : "";
      logger.debug("watch handler output", { handler, output: output + truncated });
      resolve();
    });
  });
}

function httpsRequest(): typeof import("node:https").request {
  return process.getBuiltinModule("node:https").request;
}

/** Call an HTTP handler once (never rejects): the data as JSON, within the configured timeout. */
export function runHttpHandler(cfg: WatchHttpHandlerConfig, index: string, data: unknown, logger: Logger): Promise<void> {
  let url: URL;
  try {
    url = new URL(cfg.path);
  } catch {
    logger.error("Failed to invoke http handler", { handler: cfg.path, error: "invalid URL" });
    return Promise.resolve();
  }
  const payload = body(data);
  const headers: Record<string, string | string[]> = {
    "Content-Type": "application/json",
    "X-Consul-Index": index,
    "Content-Length": String(payload.length),
  };
  for (const [k, v] of Object.entries(cfg.header)) headers[k] = v;
  const signal = AbortSignal.timeout(cfg.timeoutMs);
  return new Promise((resolve) => {
    const opts = {
      method: cfg.method,
      headers,
      signal,
      agent: false as const,
      ...(url.protocol === "https:" ? { rejectUnauthorized: !cfg.tlsSkipVerify } : {}),
    };
    const req = (url.protocol === "https:" ? httpsRequest() : httpRequest)(url, opts, (res: IncomingMessage) => {
      let output = "";
      res.on("data", (c: Buffer) => {
        if (output.length < outputMaxBytes) output += c.toString();
      });
      const done = () => {
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) logger.error("http handler returned not 2XX response code", { handler: cfg.path, response_code: code });
        else logger.debug("http handler output", { handler: cfg.path, output });
        resolve();
      };
      res.once("end", done);
      res.once("error", done);
    });
    req.once("error", (err) => {
      logger.error("Failed to invoke http handler", { handler: cfg.path, error: signal.aborted ? `timeout after ${cfg.timeoutMs}ms` : errorMessage(err) });
      resolve();
    });
    req.end(payload);
  });
}

/** The handler a watch configures. */
export function watchHandler(w: WatchConfig, logger: Logger): WatchHandler {
  if (w.handlerType === "http" && w.httpHandlerConfig) {
    const cfg = w.httpHandlerConfig;
    return (index, data) => runHttpHandler(cfg, index, data, logger);
  }
  return (index, data) => runScriptHandler(w, index, data, logger);
}

interface Running {
  abort: AbortController;
  done: Promise<unknown>;
}

/**
 * The agent's watches: `reload` with the configured list starts what is
 * new and stops what is gone; `stop` stops them all.
 */
export class WatchManager {
  readonly #client: WatchClient;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #handler: (w: WatchConfig, logger: Logger) => WatchHandler;
  readonly #running = new Map<string, Running>();

  constructor(options: { client: WatchClient; clock: Clock; logger: Logger; handler?: (w: WatchConfig, logger: Logger) => WatchHandler }) {
    this.#client = options.client;
    this.#clock = options.clock;
    this.#logger = options.logger;
    this.#handler = options.handler ?? watchHandler;
  }

  /** How many watches run (for tests). */
  get size(): number {
    return this.#running.size;
  }

  /** Make the running watches the configured ones; resolves once the removed ones have stopped. */
  async reload(watches: readonly WatchConfig[]): Promise<void> {
    const wanted = new Map(watches.map((w) => [JSON.stringify(w), w]));
    const stopping: Promise<unknown>[] = [];
    for (const [key, r] of this.#running) {
      if (wanted.has(key)) continue;
      r.abort.abort();
      stopping.push(r.done);
      this.#running.delete(key);
    }
    for (const [key, w] of wanted) {
      if (!this.#running.has(key)) this.#running.set(key, this.#start(w));
    }
    await Promise.all(stopping);
  }

  async stop(): Promise<void> {
    await this.reload([]);
  }

  #start(w: WatchConfig): Running {
    const abort = new AbortController();
    const logger = this.#logger.with({ type: w.type });
    if (w.handler !== undefined) {
      logger.warn("The 'handler' field in watches has been deprecated and replaced with the 'args' field. See https://developer.hashicorp.com/consul/docs/dynamic-app-config/watches");
    }
    const q = watchQuery(w);
    if (typeof q === "string") {
      // The config loader refuses these; a watch built some other way is logged and skipped.
      logger.error("Failed to run watch", { error: q });
      return { abort, done: Promise.resolve() };
    }
    const handle = this.#handler(w, logger);
    const signal = abort.signal;
    logger.debug("watch started", { handler: describe(w) });
    const done = runWatchPlan({
      client: this.#client,
      query: q,
      clock: this.#clock,
      signal,
      // A stopped watch does not wait for a handler still running (Consul leaves it to finish).
      onChange: (index, data) => untilAborted(handle(index, data, signal), signal),
      onError(err, { retryMs }) {
        logger.error("Watch errored", { error: errorMessage(err), retry: `${retryMs / 1000}s` });
      },
    }).catch((err: unknown) => logger.error("Failed to run watch", { error: errorMessage(err) }));
    return { abort, done };
  }
}

function untilAborted(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const onAbort = () => resolve();
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
      () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      },
    );
  });
}

/** The address to reach an HTTP listener bound to `host` from this machine. */
function localAddress(addr: { host: string; port: number }): string {
  const host = addr.host === "" || addr.host === "0.0.0.0" ? "127.0.0.1" : addr.host === "::" ? "::1" : addr.host;
  return host.includes(":") ? `[${host}]:${addr.port}` : `${host}:${addr.port}`;
}

/** The agent's watch manager, asking the agent's own HTTP listener; undefined when it has none. */
export function createAgentWatches(httpAddr: { host: string; port: number } | undefined, options: { clock: Clock; logger: Logger }): WatchManager | undefined {
  if (!httpAddr) return undefined;
  return new WatchManager({ client: new ApiClient({ address: localAddress(httpAddr) }), clock: options.clock, logger: options.logger });
}

/** Run exactly these watches (at start and on reload); watches need the HTTP API, as in Consul. */
export async function applyWatches(manager: WatchManager | undefined, watches: readonly WatchConfig[]): Promise<void> {
  if (!manager) {
    if (watches.length > 0) throw new ConfigError("Watch plans require an HTTP or HTTPS endpoint: ports.http is disabled");
    return;
  }
  await manager.reload(watches);
}
