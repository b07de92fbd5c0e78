// A lean keep-alive HTTP/1.1 client for the benchmarks' closed-loop load:
// each request takes an idle connection (or opens one, up to `maxSockets`),
// writes the request in one write and reads the answer (Content-Length or
// chunked). node:http's Agent and ClientRequest cost a closed-loop client
// 60-140 µs of CPU per request (most of it agent bookkeeping; twice that over
// node:https), more than the servers under test spend, on the same two cores.
// This one costs a fraction of that, over TCP and TLS alike, so a benchmark
// measures the servers rather than its own client.
import { connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";

export interface LeanReply {
  status: number;
  body: Buffer;
}

export interface LeanTarget {
  host: string;
  port: number;
  /** HTTPS, trusting this CA (the certificate's name is checked against `servername` or the host). */
  ca?: Buffer;
  servername?: string;
}

const crlf = Buffer.from("\r\n\r\n");

/** One keep-alive connection; one request at a time. */
class LeanConn {
  readonly socket: Socket;
  #buf: Buffer = Buffer.alloc(0);
  #waiting: { ok(r: LeanReply): void; fail(e: Error): void } | undefined;
  #ready: Promise<void>;
  dead = false;

  constructor(t: LeanTarget) {
    this.socket = t.ca
      ? tlsConnect({ host: t.host, port: t.port, ca: t.ca, ...(t.servername !== undefined ? { servername: t.servername } : {}) })
      : netConnect({ host: t.host, port: t.port });
    this.socket.setNoDelay(true);
    this.#ready = new Promise((ok, fail) => {
      this.socket.once(t.ca ? "secureConnect" : "connect", () => ok());
      this.socket.once("error", fail);
    });
    this.#ready.catch(() => {});
    this.socket.on("data", (c: Buffer) => this.#onData(c));
    const gone = (err?: Error) => {
      this.dead = true;
      const w = this.#waiting;
      this.#waiting = undefined;
      w?.fail(err ?? new Error("connection closed"));
    };
    this.socket.on("error", gone);
    this.socket.on("close", () => gone());
  }

  /** Settles when the connection is up (TLS: handshake done) or failed. */
  get ready(): Promise<void> {
    return this.#ready;
  }

  async request(head: string, body: Buffer | undefined): Promise<LeanReply> {
    await this.#ready;
    if (this.dead) throw new Error("connection closed");
    return new Promise<LeanReply>((ok, fail) => {
      this.#waiting = { ok, fail };
      this.socket.write(body ? Buffer.concat([Buffer.from(head, "latin1"), body]) : Buffer.from(head, "latin1"));
    });
  }

  #onData(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const w = this.#waiting;
    if (!w) return;
    const r = parseReply(this.#buf);
    if (r === undefined) return;
    if (r instanceof Error) {
      this.#waiting = undefined;
      this.socket.destroy();
      w.fail(r);
      return;
    }
    this.#buf = this.#buf.subarray(r.used);
    this.#waiting = undefined;
    w.ok(r.reply);
  }
}

/** A whole response at the start of `b`, undefined when more bytes are needed. */
export function parseReply(b: Buffer): { reply: LeanReply; used: number } | Error | undefined {
  const end = b.indexOf(crlf);
  if (end < 0) return undefined;
  const head = b.toString("latin1", 0, end);
  const status = Number(head.slice(9, 12));
  if (!head.startsWith("HTTP/1.") || !Number.isInteger(status)) return new Error(`bad response head: ${JSON.stringify(head.slice(0, 80))}`);
  const start = end + 4;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) {
    const n = Number(length[1]);
    if (b.length < start + n) return undefined;
    return { reply: { status, body: b.subarray(start, start + n) }, used: start + n };
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    // No body (204, 304) or one that runs to the close: not used by the benchmarks.
    return status === 204 || status === 304 ? { reply: { status, body: Buffer.alloc(0) }, used: start } : new Error(`response without a length (status ${status})`);
  }
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const eol = b.indexOf("\r\n", at, "latin1");
    if (eol < 0) return undefined;
    const size = parseInt(b.toString("latin1", at, eol), 16);
    if (!Number.isFinite(size)) return new Error("bad chunk size");
    if (size === 0) {
      const trailerEnd = b.indexOf("\r\n", eol + 2, "latin1");
      if (trailerEnd < 0) return undefined;
      return { reply: { status, body: Buffer.concat(parts) }, used: trailerEnd + 2 };
    }
    if (b.length < eol + 2 + size + 2) return undefined;
    parts.push(b.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** Up to `maxSockets` keep-alive connections to one target, handed to one request at a time. */
export class LeanAgent {
  readonly #target: LeanTarget;
  readonly #max: number;
  readonly #idle: LeanConn[] = [];
  readonly #all = new Set<LeanConn>();
  readonly #queue: Array<(c: LeanConn) => void> = [];

  constructor(target: LeanTarget, maxSockets: number) {
    this.#target = target;
    this.#max = maxSockets;
  }

  async call(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<LeanReply> {
    const conn = await this.#take();
    let head = `${method} ${path} HTTP/1.1\r\nHost: ${this.#target.host}:${this.#target.port}\r\n`;
    for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
    if (body) head += `Content-Length: ${body.length}\r\n`;
    head += "\r\n";
    try {
      return await conn.request(head, body);
    } finally {
      this.#give(conn);
    }
  }

  /**
   * Opens connections up to `maxSockets` and waits for them (TLS handshakes
   * included), so that timed load starts on warm keep-alive connections
   * instead of paying for 64 handshakes in its first slice.
   */
  async open(): Promise<void> {
    const fresh: LeanConn[] = [];
    while (this.#all.size < this.#max) {
      const c = new LeanConn(this.#target);
      this.#all.add(c);
      fresh.push(c);
    }
    await Promise.all(fresh.map((c) => c.ready.catch(() => {})));
    for (const c of fresh) this.#give(c);
  }

  destroy(): void {
    for (const c of this.#all) c.socket.destroy();
    this.#all.clear();
    this.#idle.length = 0;
  }

  #take(): Promise<LeanConn> {
    while (this.#idle.length > 0) {
      const c = this.#idle.pop()!;
      if (!c.dead) return Promise.resolve(c);
      this.#all.delete(c);
    }
    if (this.#all.size < this.#max) {
      const c = new LeanConn(this.#target);
      this.#all.add(c);
      return Promise.resolve(c);
    }
    return new Promise((ok) => this.#queue.push(ok));
  }

  #give(c: LeanConn): void {
    if (c.dead) {
      this.#all.delete(c);
      c.socket.destroy();
      const next = this.#queue.shift();
      if (next) void this.#take().then(next);
      return;
    }
    const next = this.#queue.shift();
    if (next) next(c);
    else this.#idle.push(c);
  }
}
