// Server RPC wire format (pure: no sockets, no timers).
//
// A connection starts with one protocol marker byte so later versions (or
// other protocols sharing the port) can be told apart. After the marker the
// stream is a sequence of frames:
//
//   u32 big-endian length | msgpack body (length bytes)
//
// The body is a map with a numeric kind `t`:
//   request   { t: 0, id, method, body }         answered by a response
//   response  { t: 1, id, body } | { t: 1, id, error: { code, message, leader?, minEpoch? } }
//   one-way   { t: 2, method, body }              no answer (Raft messages)
//
// Many requests are in flight on one connection; responses are matched by id
// and may arrive in any order.

import { Decoder, Encoder } from "@msgpack/msgpack";

/** First byte of a cairn server RPC connection, protocol version 1. */
export const rpcProtocolV1 = 0xca;

/**
 * First byte of a connection that wants TLS (as Consul's RPCTLS byte): the
 * server answers with the same byte, then both run a TLS handshake on the
 * socket and the protocol starts again inside it (rpcProtocolV1, frames).
 * The answer keeps the client from sending its ClientHello before the
 * server has handed the socket to TLS.
 */
export const rpcTlsMarker = 0xcb;

/** Default largest frame body accepted (bytes). */
export const defaultMaxFrameBytes = 16 * 1024 * 1024;

export const frameHeaderBytes = 4;

export const FrameKind = { Request: 0, Response: 1, OneWay: 2 } as const;

export interface WireError {
  code: string;
  message: string;
  /** For `not_leader` and `leadership_lost`: the leader's address when known. */
  leader?: string;
  /** For `request_expired`: the lowest issuer epoch the request table accepts. */
  minEpoch?: number;
}

export interface RequestFrame {
  t: typeof FrameKind.Request;
  id: number;
  method: string;
  body: unknown;
}

export interface ResponseFrame {
  t: typeof FrameKind.Response;
  id: number;
  body?: unknown;
  error?: WireError;
}

export interface OneWayFrame {
  t: typeof FrameKind.OneWay;
  method: string;
  body: unknown;
}

export type Frame = RequestFrame | ResponseFrame | OneWayFrame;

const encoder = new Encoder({ ignoreUndefined: true });

/** Encodes one frame: length prefix plus msgpack body, in one buffer. */
export function encodeFrame(frame: Frame): Uint8Array {
  const body = encoder.encodeSharedRef(frame);
  const out = new Uint8Array(frameHeaderBytes + body.length);
  new DataView(out.buffer).setUint32(0, body.length, false);
  out.set(body, frameHeaderBytes);
  return out;
}

/**
 * Encodes a frame whose body ends with an empty Uint8Array (the last value
 * of the last field) as if that field held `binBytes` bytes, and returns the
 * frame with a view of those bytes for the caller to fill before sending.
 * An InstallSnapshot chunk is read from the snapshot file straight into its
 * frame this way: encoding a 4 MiB chunk copied it twice (into msgpack's
 * buffer, then into the frame), which was a third of a restoring leader's CPU
 * while it shipped the snapshot (docs/performance.md, snapshot).
 */
export function encodeFrameWithBin(frame: Frame, binBytes: number): { frame: Uint8Array; bin: Uint8Array } {
  const head = encodeFrameHeadForBin(frame, binBytes);
  // Not zeroed (a snapshot chunk's frame is 4 MiB, and zeroing it cost as
  // much as reading the chunk): the caller fills `bin` whole before the
  // frame is sent, and does not send it when it could not.
  const out: Uint8Array = Buffer.allocUnsafeSlow(head.length + binBytes);
  out.set(head);
  return { frame: out, bin: out.subarray(head.length) };
}

/**
 * The same frame's bytes up to its last value's data: sent with those
 * `binBytes` bytes after it (views of buffers already in memory, written
 * with one writev), the frame is never assembled in one buffer.
 */
export function encodeFrameHeadForBin(frame: Frame, binBytes: number): Uint8Array {
  const head = encoder.encodeSharedRef(frame);
  // An empty bin is `c4 00`; it becomes a bin 32 header `c6 <u32 length>`.
  if (head.length < 2 || head[head.length - 2] !== 0xc4 || head[head.length - 1] !== 0x00) {
    throw new TypeError("Frame body does not end with an empty byte array");
  }
  if (!Number.isSafeInteger(binBytes) || binBytes < 0 || binBytes > 0xffffffff) throw new RangeError(`Invalid byte array length ${binBytes}`);
  const prefix = head.length - 2;
  const bodyBytes = prefix + 5 + binBytes;
  const out = new Uint8Array(frameHeaderBytes + prefix + 5);
  const view = new DataView(out.buffer);
  view.setUint32(0, bodyBytes, false);
  out.set(head.subarray(0, prefix), frameHeaderBytes);
  out[frameHeaderBytes + prefix] = 0xc6;
  view.setUint32(frameHeaderBytes + prefix + 1, binBytes, false);
  return out;
}

/** Why a byte stream was refused; the connection carrying it must be closed. */
export type FrameErrorReason = "too_large" | "bad_msgpack" | "bad_frame" | "empty";

export class FrameError extends Error {
  readonly reason: FrameErrorReason;
  constructor(reason: FrameErrorReason, message: string) {
    super(message);
    this.name = "FrameError";
    this.reason = reason;
  }
}

/**
 * Incremental frame reader. `push` bytes as they arrive; it returns the
 * complete frames so far, or a `FrameError` once the stream is bad (after
 * which the decoder stays failed). Never throws.
 */
export class FrameDecoder {
  readonly maxFrameBytes: number;
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #failed: FrameError | undefined;
  #decoder: Decoder;

  constructor(options: { maxFrameBytes?: number } = {}) {
    this.maxFrameBytes = options.maxFrameBytes ?? defaultMaxFrameBytes;
    this.#decoder = new Decoder({
      maxStrLength: this.maxFrameBytes,
      maxBinLength: this.maxFrameBytes,
      maxArrayLength: this.maxFrameBytes,
      maxMapLength: this.maxFrameBytes,
      maxExtLength: this.maxFrameBytes,
    });
  }

  /** Bytes received but not yet part of a complete frame. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): { frames: Frame[]; error?: FrameError } {
    const frames: Frame[] = [];
    if (this.#failed) return { frames, error: this.#failed };
    if (chunk.length > 0) {
      // Node hands us Buffers; decode from plain views so values are plain Uint8Arrays.
      if (chunk.constructor !== Uint8Array) chunk = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    for (;;) {
      if (this.#buffered < frameHeaderBytes) break;
      const header = this.#peek(frameHeaderBytes);
      const length = new DataView(header.buffer, header.byteOffset, frameHeaderBytes).getUint32(0, false);
      if (length > this.maxFrameBytes) {
        return this.#fail(frames, "too_large", `Frame of ${length} bytes is over the limit of ${this.maxFrameBytes}`);
      }
      if (length === 0) return this.#fail(frames, "empty", "Frame of 0 bytes");
      if (this.#buffered < frameHeaderBytes + length) break;
      const all = this.#take(frameHeaderBytes + length);
      const body = all.subarray(frameHeaderBytes);
      let value: unknown;
      try {
        value = this.#decoder.decode(body);
      } catch (err) {
        return this.#fail(frames, "bad_msgpack", `Frame body is not msgpack: ${err instanceof Error ? err.message : String(err)}`);
      }
      const frame = validateFrame(value);
      if (!frame) return this.#fail(frames, "bad_frame", "Frame body is not a request, response or one-way message");
      frames.push(frame);
    }
    return { frames };
  }

  #fail(frames: Frame[], reason: FrameErrorReason, message: string): { frames: Frame[]; error: FrameError } {
    this.#failed = new FrameError(reason, message);
    this.#chunks = [];
    this.#buffered = 0;
    return { frames, error: this.#failed };
  }

  /** The first n buffered bytes without consuming them (n <= buffered). */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[0]!;
    if (first.length >= n) return first.subarray(0, n);
    const out = new Uint8Array(n);
    let filled = 0;
    for (const c of this.#chunks) {
      const part = c.subarray(0, n - filled);
      out.set(part, filled);
      filled += part.length;
      if (filled === n) break;
    }
    return out;
  }

  /** Consumes and returns the first n buffered bytes (n <= buffered). */
  #take(n: number): Uint8Array {
    const first = this.#chunks[0]!;
    if (first.length >= n) {
      const out = first.subarray(0, n);
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      this.#buffered -= n;
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const c = this.#chunks[0]!;
      const want = n - filled;
      if (c.length <= want) {
        out.set(c, filled);
        filled += c.length;
        this.#chunks.shift();
      } else {
        out.set(c.subarray(0, want), filled);
        this.#chunks[0] = c.subarray(want);
        filled += want;
      }
    }
    this.#buffered -= n;
    return out;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function isId(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** Checks the shape of a decoded body; undefined when it is not a frame. */
export function validateFrame(v: unknown): Frame | undefined {
  if (!isRecord(v)) return undefined;
  switch (v.t) {
    case FrameKind.Request:
      if (!isId(v.id) || typeof v.method !== "string") return undefined;
      return { t: FrameKind.Request, id: v.id, method: v.method, body: v.body };
    case FrameKind.Response: {
      if (!isId(v.id)) return undefined;
      if (v.error !== undefined && v.error !== null) {
        const e = v.error;
        if (!isRecord(e) || typeof e.code !== "string" || typeof e.message !== "string") return undefined;
        const error: WireError = { code: e.code, message: e.message };
        if (typeof e.leader === "string") error.leader = e.leader;
        if (typeof e.minEpoch === "number" && Number.isSafeInteger(e.minEpoch)) error.minEpoch = e.minEpoch;
        return { t: FrameKind.Response, id: v.id, error };
      }
      return { t: FrameKind.Response, id: v.id, body: v.body };
    }
    case FrameKind.OneWay:
      if (typeof v.method !== "string") return undefined;
      return { t: FrameKind.OneWay, method: v.method, body: v.body };
    default:
      return undefined;
  }
}
