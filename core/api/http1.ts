// An HTTP/1.1 response read from raw bytes (RFC 9112): status line, headers,
// then a body framed by chunked transfer coding, Content-Length, or the end
// of the connection. Pure: bytes in, callbacks out. For the CLI's snapshot
// download (http_get_node.ts), which reads the socket into its own buffers:
// body bytes are handed on as views of the bytes pushed, never copied, and
// the chunk framing between them is dropped. Only what a GET needs: no
// upgrades, no request side.
import { CairnError } from "../errors.ts";

/** The answer could not be read as HTTP/1.1: bad framing, or it ended early. */
export class HttpProtocolError extends CairnError {
  constructor(message: string) {
    super("http_protocol", message);
  }
}

export interface Http1Head {
  status: number;
  reason: string;
  /** Lower-cased names; a repeated header's values joined with ", ". */
  headers: Map<string, string>;
}

export interface Http1Handlers {
  /** The final (non-1xx) status line and headers, once, before any body. */
  head(head: Http1Head): void;
  /** Body bytes, a view of pushed bytes (valid as long as those are). */
  body(chunk: Uint8Array): void;
}

/** Status line and headers larger than this are not an agent's answer. */
const maxHeadBytes = 64 * 1024;
/** A chunk-size line (with any extensions), or a trailer line. */
const maxLineBytes = 4 * 1024;

type State =
  | "head"
  /** Reading a chunk-size line. */
  | "size"
  /** Inside a chunk's data. */
  | "data"
  /** The CRLF after a chunk's data. */
  | "dataEnd"
  /** Trailer lines after the last chunk, up to an empty line. */
  | "trailer"
  /** A Content-Length body. */
  | "length"
  /** A body that runs to the end of the connection. */
  | "close"
  | "done";

const CR = 13;
const LF = 10;
const decoder = new TextDecoder("latin1");

/**
 * Feed it the bytes of one response as they arrive (`push`), and `end()`
 * when the connection ends. Throws HttpProtocolError on anything it cannot
 * read; `done` says the whole message was read (bytes after it are refused:
 * one request per connection).
 */
export class Http1ResponseParser {
  readonly #handlers: Http1Handlers;
  readonly #noBody: boolean;
  #state: State = "head";
  /** Bytes of a head or line not yet complete. */
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Bytes left in the current chunk or Content-Length body. */
  #left = 0;
  /** Of the CRLF after a chunk's data, how many bytes were seen. */
  #crlfSeen = 0;
  #bodyBytes = 0;

  /** `noBody`: the request was HEAD, so no answer has a body. */
  constructor(handlers: Http1Handlers, options: { noBody?: boolean } = {}) {
    this.#handlers = handlers;
    this.#noBody = options.noBody === true;
  }

  get done(): boolean {
    return this.#state === "done";
  }

  /** Body bytes handed on so far. */
  get bodyBytes(): number {
    return this.#bodyBytes;
  }

  push(bytes: Uint8Array): void {
    let i = 0;
    const n = bytes.length;
    while (i < n) {
      switch (this.#state) {
        case "head": {
          const l = this.#line(bytes, i, true, maxHeadBytes, "The answer's status line and headers are too long");
          if (!l) return;
          i = l.end;
          this.#startHead(l.line);
          break;
        }
        case "size": {
          const l = this.#line(bytes, i, false, maxLineBytes, "Bad chunk size line in the answer: too long");
          if (!l) return;
          i = l.end;
          this.#startChunk(l.line);
          break;
        }
        case "data": {
          i = this.#bodyPart(bytes, i);
          if (this.#left === 0) {
            this.#state = "dataEnd";
            this.#crlfSeen = 0;
          }
          break;
        }
        case "dataEnd": {
          const want = this.#crlfSeen === 0 ? CR : LF;
          if (bytes[i] !== want) throw new HttpProtocolError("Bad chunk in the answer: its data is not followed by CRLF");
          i++;
          if (++this.#crlfSeen === 2) this.#state = "size";
          break;
        }
        case "trailer": {
          const l = this.#line(bytes, i, false, maxLineBytes, "Bad trailer in the answer: too long");
          if (!l) return;
          i = l.end;
          if (l.line.length === 1 || (l.line.length === 2 && l.line[0] === CR)) this.#state = "done"; // the empty line
          break;
        }
        case "length": {
          i = this.#bodyPart(bytes, i);
          if (this.#left === 0) this.#state = "done";
          break;
        }
        case "close":
          this.#body(i === 0 ? bytes : bytes.subarray(i));
          return;
        case "done":
          throw new HttpProtocolError("The answer has bytes after its end");
      }
    }
  }

  /** The connection ended: fine only if the message is complete (or runs to the end). */
  end(): void {
    if (this.#state === "close") this.#state = "done";
    if (this.#state === "done") return;
    if (this.#state === "head") throw new HttpProtocolError(this.#pendingBytes === 0 ? "The agent closed the connection without answering" : "The agent closed the connection in the middle of the answer's headers");
    const where = this.#state === "length" ? `${this.#left} of its bytes missing` : "before its last chunk";
    throw new HttpProtocolError(`The answer ended early: the connection closed after ${this.#bodyBytes} bytes of body, ${where}`);
  }

  /**
   * The line (with `head`, the header block) that began in the pending bytes
   * or at `from`, and the index after it; undefined when `bytes` end inside
   * it (they are kept). Over `limit` bytes is an error saying `tooLong`.
   */
  #line(bytes: Uint8Array, from: number, head: boolean, limit: number, tooLong: string): { line: Uint8Array; end: number } | undefined {
    const end = this.#lineEnd(bytes, from, head);
    if (end < 0) {
      this.#keep(bytes.subarray(from), limit, tooLong);
      return undefined;
    }
    const line = this.#take(bytes, from, end);
    if (line.length > limit) throw new HttpProtocolError(tooLong);
    return { line, end };
  }

  /** Up to #left body bytes from `from` handed on; the index after them. */
  #bodyPart(bytes: Uint8Array, from: number): number {
    const take = Math.min(this.#left, bytes.length - from);
    this.#body(bytes.subarray(from, from + take));
    this.#left -= take;
    return from + take;
  }

  #body(view: Uint8Array): void {
    if (view.length === 0) return;
    this.#bodyBytes += view.length;
    this.#handlers.body(view);
  }

  /**
   * Where the line (or with `head`, the header block: up to an empty line)
   * that began in the pending bytes or at `from` ends in `bytes`: the index
   * after its LF, or -1 if it does not end in them.
   */
  #lineEnd(bytes: Uint8Array, from: number, head: boolean): number {
    for (let j = bytes.indexOf(LF, from); j >= 0; j = bytes.indexOf(LF, j + 1)) {
      if (!head) return j + 1;
      // An empty line ends the head: LF preceded by LF or by CRLF (looking back into pending bytes).
      const b1 = this.#byteBefore(bytes, from, j, 1);
      if (b1 === LF) return j + 1;
      if (b1 === CR && this.#byteBefore(bytes, from, j, 2) === LF) return j + 1;
    }
    return -1;
  }

  /** The byte `back` places before bytes[j], counting the pending bytes before `from`; -1 if none. */
  #byteBefore(bytes: Uint8Array, from: number, j: number, back: number): number {
    const k = j - back;
    if (k >= from) return bytes[k]!;
    let fromEnd = from - k; // 1 = the last pending byte
    for (let p = this.#pending.length - 1; p >= 0; p--) {
      const part = this.#pending[p]!;
      if (fromEnd <= part.length) return part[part.length - fromEnd]!;
      fromEnd -= part.length;
    }
    return -1;
  }

  #keep(rest: Uint8Array, limit: number, tooLong: string): void {
    this.#pendingBytes += rest.length;
    if (this.#pendingBytes > limit) throw new HttpProtocolError(tooLong);
    // Copied: the caller may reuse its buffer once push returns.
    this.#pending.push(rest.slice());
  }

  /** The pending bytes and bytes[from, end) as one array; clears pending. */
  #take(bytes: Uint8Array, from: number, end: number): Uint8Array {
    const tail = bytes.subarray(from, end);
    if (this.#pendingBytes === 0) return tail;
    const out = new Uint8Array(this.#pendingBytes + tail.length);
    let off = 0;
    for (const p of this.#pending) {
      out.set(p, off);
      off += p.length;
    }
    out.set(tail, off);
    this.#pending = [];
    this.#pendingBytes = 0;
    return out;
  }

  #startHead(raw: Uint8Array): void {
    const lines = decoder.decode(raw).split(/\r?\n/);
    const m = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]!);
    if (!m) throw new HttpProtocolError(`The answer is not HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 80))}`);
    const status = Number(m[2]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      if (line === "") continue;
      const colon = line.indexOf(":");
      if (colon <= 0) throw new HttpProtocolError(`Bad header line in the answer: ${JSON.stringify(line.slice(0, 80))}`);
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const had = headers.get(name);
      headers.set(name, had === undefined ? value : `${had}, ${value}`);
    }
    if (status >= 100 && status < 200 && status !== 101) return; // informational (100 Continue): the real answer follows
    if (status === 101) throw new HttpProtocolError("The agent switched protocols (101), which a GET never asks for");
    this.#handlers.head({ status, reason: m[3] ?? "", headers });
    const te = headers.get("transfer-encoding");
    const cl = headers.get("content-length");
    if (this.#noBody || status === 204 || status === 304) {
      this.#state = "done";
    } else if (te !== undefined) {
      // RFC 9112 6.1: chunked must be last; we take nothing else (no compression was asked for).
      if (te.toLowerCase() !== "chunked") throw new HttpProtocolError(`The answer's transfer coding "${te}" is not supported`);
      this.#state = "size";
    } else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl)) throw new HttpProtocolError(`Bad Content-Length in the answer: ${JSON.stringify(cl)}`);
      this.#left = Number(cl);
      this.#state = this.#left === 0 ? "done" : "length";
    } else {
      this.#state = "close";
    }
  }

  #startChunk(raw: Uint8Array): void {
    // chunk-size [ ; extensions ] CRLF; the size is hex.
    let j = 0;
    let size = 0;
    for (; j < raw.length; j++) {
      const d = hexDigit(raw[j]!);
      if (d < 0) break;
      if (j >= 13) throw new HttpProtocolError("Bad chunk size in the answer: too large");
      size = size * 16 + d;
    }
    const rest = raw[j];
    const endsWell = rest === CR || rest === LF || rest === 0x3b /* ; */ || rest === 0x20 || rest === 0x09;
    if (j === 0 || !endsWell) throw new HttpProtocolError(`Bad chunk size in the answer: ${JSON.stringify(decoder.decode(raw.subarray(0, 40)).trimEnd())}`);
    if (rest === CR && raw[j + 1] !== LF) throw new HttpProtocolError("Bad chunk size line in the answer: CR without LF");
    if (size === 0) {
      this.#state = "trailer";
      return;
    }
    this.#left = size;
    this.#state = "data";
  }
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  if (l >= 0x61 && l <= 0x66) return l - 0x61 + 10;
  return -1;
}
