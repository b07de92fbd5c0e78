// RaftTransport over the server RPC connection (port 8300): each RaftMessage
// is a one-way frame `Raft.Message` whose body is the message itself (msgpack
// encodes it as is). Sends never block: they are queued on the pooled
// connection and written with everything else sent in the same turn (one
// syscall per peer per Raft tick). When a peer is down or slow, messages are
// dropped; Raft retries. Inbound bodies are validated with
// `validateRaftMessage` and malformed ones are counted and dropped.

import { byteLength } from "../bytes.ts";
import type { Logger } from "../log/logger.ts";
import { validateRaftMessage } from "../raft/codec.ts";
import type { PrefetchRequest, RaftMessage, RaftTransport, ServerId, SnapshotRequest } from "../raft/types.ts";
import { encodeFrameHeadForBin, encodeFrameWithBin, type Frame, FrameKind } from "./frame.ts";
import type { RpcClientPool, RpcServer } from "./transport_node.ts";

/** The one-way method carrying Raft messages. */
export const raftMessageMethod = "Raft.Message";

export interface TcpRaftTransportOptions {
  /** Receives `Raft.Message` (shared with the Family.Verb handlers). */
  server: RpcServer;
  /** Sends to peers (shared with forwarded calls). */
  pool: RpcClientPool;
  logger: Logger;
  /** The address peers dial; default `server.address`. Set it when listening on 0.0.0.0. */
  localAddress?: string;
}

export interface TcpRaftTransportStats {
  sent: number;
  /** Not queued: peer backing off, send queue full, or message over the frame limit. */
  dropped: number;
  received: number;
  /** Inbound bodies that were not valid RaftMessages. */
  invalid: number;
  /** Inbound messages that arrived before a handler was registered. */
  unhandled: number;
}

export class TcpRaftTransport implements RaftTransport {
  readonly localAddress: string;
  readonly stats: TcpRaftTransportStats = { sent: 0, dropped: 0, received: 0, invalid: 0, unhandled: 0 };
  readonly #server: RpcServer;
  readonly #pool: RpcClientPool;
  readonly #log: Logger;
  #handler: ((msg: RaftMessage) => void) | undefined;
  #closed = false;

  constructor(options: TcpRaftTransportOptions) {
    this.#server = options.server;
    this.#pool = options.pool;
    this.#log = options.logger;
    this.localAddress = options.localAddress ?? options.server.address;
    this.#server.handle(raftMessageMethod, (body, ctx) => {
      const msg = validateRaftMessage(body);
      if (!msg) {
        this.stats.invalid++;
        this.#log.debug("dropping malformed Raft message", { remote: ctx.remoteAddress });
        return;
      }
      this.stats.received++;
      if (!this.#handler) {
        this.stats.unhandled++;
        return;
      }
      try {
        this.#handler(msg);
      } catch (err) {
        this.#log.error("Raft message handler threw", { type: msg.type, from: msg.from, error: String(err) });
      }
    });
  }

  send(target: { id: ServerId; address: string }, msg: RaftMessage): void {
    if (this.#closed) return;
    if (this.#pool.send(target.address, raftMessageMethod, msg)) this.stats.sent++;
    else {
      this.stats.dropped++;
      this.#log.trace("Raft message dropped", { to: target.id, address: target.address, type: msg.type });
    }
  }

  prepareSnapshotChunk(target: { id: ServerId; address: string }, msg: SnapshotRequest | PrefetchRequest, chunkBytes: number): { chunk: Uint8Array; send(): void } | undefined {
    // The chunk last: encodeFrameWithBin fills in the frame's last value.
    const prepared = this.#encodeChunkFrame(target, msg, (frame) => encodeFrameWithBin(frame, chunkBytes));
    if (!prepared) return undefined;
    return { chunk: prepared.bin, send: () => void this.#sendFrame(target, msg.type, prepared.frame) };
  }

  sendSnapshotChunkParts(target: { id: ServerId; address: string }, msg: SnapshotRequest | PrefetchRequest, parts: readonly Uint8Array[]): boolean {
    const head = this.#encodeChunkFrame(target, msg, (frame) => encodeFrameHeadForBin(frame, byteLength(parts)));
    return head !== undefined && this.#sendFrame(target, msg.type, [head, ...parts]);
  }

  /** `msg` as a Raft.Message frame whose chunk (its last value) the caller supplies; undefined (counted as dropped) when it cannot be encoded. */
  #encodeChunkFrame<T>(target: { id: ServerId }, msg: SnapshotRequest | PrefetchRequest, encode: (frame: Frame) => T): T | undefined {
    if (this.#closed) return undefined;
    const { chunk: _, ...rest } = msg;
    try {
      return encode({ t: FrameKind.OneWay, method: raftMessageMethod, body: { ...rest, chunk: new Uint8Array(0) } });
    } catch (err) {
      this.stats.dropped++;
      this.#log.warn("cannot encode InstallSnapshot chunk", { to: target.id, error: String(err) });
      return undefined;
    }
  }

  #sendFrame(target: { id: ServerId; address: string }, type: string, frame: Uint8Array | readonly Uint8Array[]): boolean {
    if (this.#closed) return false;
    if (this.#pool.sendEncoded(target.address, raftMessageMethod, frame)) {
      this.stats.sent++;
      return true;
    }
    this.stats.dropped++;
    this.#log.trace("Raft message dropped", { to: target.id, address: target.address, type });
    return false;
  }

  onMessage(handler: (msg: RaftMessage) => void): void {
    this.#handler = handler;
  }

  flush(): void {
    if (!this.#closed) this.#pool.flush();
  }

  /** Stops sending and receiving; the shared server and pool stay open. */
  close(): Promise<void> {
    this.#closed = true;
    this.#handler = undefined;
    this.#server.handle(raftMessageMethod, undefined);
    return Promise.resolve();
  }
}

export function createTcpRaftTransport(options: TcpRaftTransportOptions): TcpRaftTransport {
  return new TcpRaftTransport(options);
}
