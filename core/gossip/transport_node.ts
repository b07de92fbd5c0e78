// The real gossip network: one UDP socket and one TCP listener on the same
// port (memberlist, docs/gossip-wire.md sections 1, 4 and 5), implementing the
// GossipTransport contract of driver.ts with P = Uint8Array:
//
// - onPacket(from, bytes): one datagram, decrypted if a keyring is set
//   (CRC/compound/compress are left to the codec: wire/memberlist.ts
//   `decodePacket`). Empty, undecryptable and (optionally) undecodable
//   datagrams are counted and dropped here.
// - onStream(from, bytes): exactly one stream message read from an accepted
//   connection, decrypted, still in its sent form (plain or 0x09 compress):
//   decode it with `parseStream`. (The transport only frames it, with
//   `measureStream`: the message is decoded once, by the receiver.) The returned reply is encrypted and written,
//   then the connection is closed.
// - sendStream: connect, write (encrypting), read one reply the same way.
//
// Encryption happens here (WebCrypto is async); the protocol core and the
// codec stay synchronous. Everything is closed explicitly by close().

import * as dgram from "node:dgram";
import * as net from "node:net";
import { dialFrom } from "../dial_node.ts";
import type { Logger } from "../log/mod.ts";
import type { GossipTransport, GossipTransportHandlers, StreamResult } from "./driver.ts";
import { MessageType } from "./wire/messages.ts";
import type { WireError } from "./wire/messages.ts";
import { decodePacket, encodeErr, encodeStream, measureStream } from "./wire/memberlist.ts";
import {
  decryptPacket,
  decryptStreamFrame,
  encryptPacket,
  encryptStream,
  maxEncryptedStreamBytes,
  peekEncryptedStream,
} from "./wire/crypto.ts";
import type { Keyring, NonceSource } from "./wire/crypto.ts";
import { joinHostPort, splitHostPort } from "./wire/addr.ts";

export interface NodeTransportOptions {
  /** Address to bind, e.g. "127.0.0.1" or "0.0.0.0". */
  bindAddr: string;
  /** Port for both UDP and TCP; 0 picks a free one shared by both. */
  bindPort: number;
  /** Address advertised in `localAddr` (default: bindAddr, or 127.0.0.1 for a wildcard bind). */
  advertiseAddr?: string;
  logger: Logger;
  /** Gossip encryption keyring; absent = plaintext. */
  keyring?: Keyring;
  /** Accept plaintext when a keyring is set (migration; default true = verify). */
  verifyIncoming?: boolean;
  /** Encrypt outgoing traffic when a keyring is set (default true). */
  verifyOutgoing?: boolean;
  /** Whole-exchange deadline for a TCP connection (memberlist TCPTimeout; default 10 s). */
  tcpTimeoutMs?: number;
  /** Largest stream message accepted (default 10 MiB). */
  maxStreamBytes?: number;
  /** Concurrent incoming streams served; more are closed (default 128). */
  maxInboundStreams?: number;
  /** Compress error replies like Go does (default true). */
  compressReplies?: boolean;
  /**
   * Decode each datagram once here and drop those with no message before
   * delivering (default true). A handler that decodes itself (the gossip
   * driver) turns this off and returns false for garbage instead.
   */
  dropUndecodablePackets?: boolean;
  /** Nonce source for encryption (tests). */
  nonce?: NonceSource;
  /**
   * memberlist CIDRsAllowed (Consul's serf_lan_allowed_cidrs): packets and
   * connections from an IP this refuses are counted and dropped. Absent:
   * every address is allowed.
   */
  allowIp?: (ip: string) => boolean;
}

export interface NodeTransportStats {
  packetsReceived: number;
  packetsSent: number;
  packetsEmpty: number;
  packetsGarbage: number;
  packetsDecryptFailed: number;
  packetsUnhandled: number;
  sendErrors: number;
  streamsAccepted: number;
  streamsRejected: number;
  streamsGarbage: number;
  streamsTooLarge: number;
  streamsTimedOut: number;
  streamsDecryptFailed: number;
  streamsOpened: number;
  streamsFailed: number;
  /** Dropped because the sender's IP is outside the allowed CIDRs. */
  packetsNotAllowed: number;
  streamsNotAllowed: number;
}

function newStats(): NodeTransportStats {
  return {
    packetsReceived: 0,
    packetsSent: 0,
    packetsEmpty: 0,
    packetsGarbage: 0,
    packetsDecryptFailed: 0,
    packetsUnhandled: 0,
    sendErrors: 0,
    streamsAccepted: 0,
    streamsRejected: 0,
    streamsGarbage: 0,
    streamsTooLarge: 0,
    streamsTimedOut: 0,
    streamsDecryptFailed: 0,
    streamsOpened: 0,
    streamsFailed: 0,
    packetsNotAllowed: 0,
    streamsNotAllowed: 0,
  };
}

export { joinHostPort, splitHostPort } from "./wire/addr.ts";

type ReadOutcome =
  | { ok: true; message: Uint8Array; encrypted: boolean }
  | { ok: false; kind: "garbage" | "too_large" | "timeout" | "decrypt" | "closed" | "plain_rejected"; error: string };

/**
 * Reads exactly one stream message from a socket (decrypting when the
 * stream is encrypted). Resolves once; never rejects.
 */
function readOneMessage(
  socket: net.Socket,
  options: { keyring?: Keyring; verifyIncoming: boolean; maxBytes: number },
): Promise<ReadOutcome> {
  return new Promise((resolve) => {
    let buf = new Uint8Array(0);
    let settled = false;
    let working = false;
    const finish = (r: ReadOutcome): void => {
      if (settled) return;
      settled = true;
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
      resolve(r);
    };
    const bad = (kind: Extract<ReadOutcome, { ok: false }>["kind"], e: WireError | string): void =>
      finish({ ok: false, kind, error: typeof e === "string" ? e : e.message });
    const step = (): void => {
      if (settled || working || buf.length === 0) return;
      const frame = peekEncryptedStream(buf, Math.min(options.maxBytes + 64, maxEncryptedStreamBytes));
      if (frame.status === "error") return bad("too_large", frame.error);
      if (frame.status === "more") return;
      if (frame.status === "frame") {
        if (!options.keyring) return bad("garbage", "Remote state is encrypted and encryption is not configured");
        working = true;
        void decryptStreamFrame(options.keyring, frame.header, frame.blob).then((plain) => {
          working = false;
          if (!plain.ok) return bad("decrypt", plain.error);
          const r = measureStream(plain.value, { maxBytes: options.maxBytes });
          if (r.status !== "ok") {
            return bad("garbage", r.status === "error" ? r.error : "Encrypted stream message is incomplete");
          }
          finish({ ok: true, message: plain.value.subarray(0, r.consumed), encrypted: true });
        });
        return;
      }
      if (options.keyring && options.verifyIncoming) {
        return bad("plain_rejected", "Encryption is configured but remote state is not encrypted");
      }
      const r = measureStream(buf, { maxBytes: options.maxBytes });
      if (r.status === "ok") return finish({ ok: true, message: buf.subarray(0, r.consumed), encrypted: false });
      if (r.status === "error") return bad(r.error.code === "too_large" ? "too_large" : "garbage", r.error);
      if (buf.length > options.maxBytes) return bad("too_large", `Stream message exceeds ${options.maxBytes} bytes`);
    };
    const onData = (chunk: Uint8Array): void => {
      const next = new Uint8Array(buf.length + chunk.length);
      next.set(buf);
      next.set(chunk, buf.length);
      buf = next;
      if (buf.length > options.maxBytes + 64 && buf[0] !== MessageType.encrypt) {
        // Give the parser one last chance, then give up.
        step();
        if (!settled) bad("too_large", `Stream message exceeds ${options.maxBytes} bytes`);
        return;
      }
      step();
    };
    const onEnd = (): void => {
      if (!working) bad("closed", "Connection closed before a complete message arrived");
    };
    socket.on("data", onData);
    socket.on("end", onEnd);
    socket.on("close", onEnd);
  });
}

/** UDP + TCP gossip transport on one port. Create with `createNodeTransport`. */
export class NodeTransport implements GossipTransport<Uint8Array> {
  readonly localAddr: string;
  readonly port: number;
  readonly stats: NodeTransportStats = newStats();
  #udp: dgram.Socket;
  #tcp: net.Server;
  #opts: Required<Omit<NodeTransportOptions, "keyring" | "advertiseAddr" | "nonce" | "allowIp">> & {
    keyring?: Keyring;
    nonce?: NonceSource;
    allowIp?: (ip: string) => boolean;
  };
  #log: Logger;
  #handlers: GossipTransportHandlers<Uint8Array> | undefined;
  #sockets = new Set<net.Socket>();
  #timers = new Set<ReturnType<typeof setTimeout>>();
  #inbound = 0;
  #closed = false;

  constructor(udp: dgram.Socket, tcp: net.Server, port: number, options: NodeTransportOptions) {
    this.#udp = udp;
    this.#tcp = tcp;
    this.port = port;
    this.#log = options.logger;
    this.#opts = {
      bindAddr: options.bindAddr,
      bindPort: options.bindPort,
      logger: options.logger,
      keyring: options.keyring,
      verifyIncoming: options.verifyIncoming ?? true,
      verifyOutgoing: options.verifyOutgoing ?? true,
      tcpTimeoutMs: options.tcpTimeoutMs ?? 10_000,
      maxStreamBytes: options.maxStreamBytes ?? 10 * 1024 * 1024,
      maxInboundStreams: options.maxInboundStreams ?? 128,
      compressReplies: options.compressReplies ?? true,
      dropUndecodablePackets: options.dropUndecodablePackets ?? true,
      nonce: options.nonce,
      allowIp: options.allowIp,
    };
    const wildcard = options.bindAddr === "0.0.0.0" || options.bindAddr === "::";
    const adv = options.advertiseAddr ?? (wildcard ? "127.0.0.1" : options.bindAddr);
    this.localAddr = joinHostPort(adv, port);
    udp.on("message", (msg, rinfo) => this.#onDatagram(msg, rinfo));
    udp.on("error", (err) => this.#log.warn("udp socket error", { error: err.message }));
    tcp.on("connection", (socket) => this.#onConnection(socket));
    tcp.on("error", (err) => this.#log.warn("tcp listener error", { error: err.message }));
  }

  get #encryptOut(): boolean {
    return this.#opts.keyring !== undefined && this.#opts.verifyOutgoing;
  }

  listen(handlers: GossipTransportHandlers<Uint8Array>): void {
    this.#handlers = handlers;
  }

  // --- UDP ---------------------------------------------------------------

  sendPacket(to: string, payload: Uint8Array): void {
    if (this.#closed) return;
    const addr = splitHostPort(to);
    if (!addr) {
      this.stats.sendErrors++;
      this.#log.warn("cannot send packet: bad address", { to });
      return;
    }
    const send = (bytes: Uint8Array): void => {
      if (this.#closed) return;
      this.#udp.send(bytes, addr.port, addr.host, (err) => {
        if (err) {
          this.stats.sendErrors++;
          this.#log.debug("udp send failed", { to, error: err.message });
        } else this.stats.packetsSent++;
      });
    };
    if (!this.#encryptOut) return send(payload);
    void encryptPacket(this.#opts.keyring!, payload, { nonce: this.#opts.nonce }).then(send, (err: unknown) => {
      this.stats.sendErrors++;
      this.#log.warn("packet encryption failed", { to, error: String(err) });
    });
  }

  #onDatagram(msg: Uint8Array, rinfo: dgram.RemoteInfo): void {
    if (this.#closed) return;
    this.stats.packetsReceived++;
    const from = joinHostPort(rinfo.address, rinfo.port);
    if (this.#opts.allowIp && !this.#opts.allowIp(rinfo.address)) {
      this.stats.packetsNotAllowed++;
      this.#log.debug("blocked packet: IP not allowed", { from });
      return;
    }
    if (msg.length === 0) {
      this.stats.packetsEmpty++;
      return;
    }
    const bytes = new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength).slice();
    const ring = this.#opts.keyring;
    if (!ring) return this.#deliverPacket(from, bytes);
    void decryptPacket(ring, bytes).then((plain) => {
      if (plain.ok) return this.#deliverPacket(from, plain.value);
      if (!this.#opts.verifyIncoming) return this.#deliverPacket(from, bytes);
      this.stats.packetsDecryptFailed++;
      this.#log.debug("dropping undecryptable packet", { from, error: plain.error.message });
    });
  }

  #deliverPacket(from: string, bytes: Uint8Array): void {
    if (this.#closed) return;
    if (this.#opts.dropUndecodablePackets) {
      const d = decodePacket(bytes);
      if (d.messages.length === 0) {
        this.stats.packetsGarbage++;
        this.#log.debug("dropping garbage packet", { from, error: d.errors[0]?.message });
        return;
      }
    }
    if (!this.#handlers) {
      this.stats.packetsUnhandled++;
      return;
    }
    try {
      if (this.#handlers.onPacket(from, bytes) === false) {
        this.stats.packetsGarbage++;
        this.#log.debug("dropping garbage packet", { from });
      }
    } catch (err) {
      this.#log.error("packet handler threw", { from, error: String(err) });
    }
  }

  // --- TCP ---------------------------------------------------------------

  #track(socket: net.Socket): () => void {
    this.#sockets.add(socket);
    const timer = setTimeout(() => {
      this.stats.streamsTimedOut++;
      socket.destroy();
    }, this.#opts.tcpTimeoutMs);
    this.#timers.add(timer);
    const release = (): void => {
      clearTimeout(timer);
      this.#timers.delete(timer);
      this.#sockets.delete(socket);
    };
    socket.once("close", release);
    return release;
  }

  #onConnection(socket: net.Socket): void {
    if (this.#closed || this.#inbound >= this.#opts.maxInboundStreams) {
      this.stats.streamsRejected++;
      socket.destroy();
      return;
    }
    const ip = socket.remoteAddress ?? "";
    if (this.#opts.allowIp && !this.#opts.allowIp(ip)) {
      this.stats.streamsNotAllowed++;
      this.#log.debug("blocked connection: IP not allowed", { from: joinHostPort(ip, socket.remotePort ?? 0) });
      socket.destroy();
      return;
    }
    this.#inbound++;
    this.stats.streamsAccepted++;
    socket.on("error", () => {}); // reported through close
    this.#track(socket);
    socket.once("close", () => this.#inbound--);
    const from = joinHostPort(socket.remoteAddress ?? "?", socket.remotePort ?? 0);
    void this.#serve(socket, from);
  }

  async #serve(socket: net.Socket, from: string): Promise<void> {
    const r = await readOneMessage(socket, {
      keyring: this.#opts.keyring,
      verifyIncoming: this.#opts.verifyIncoming,
      maxBytes: this.#opts.maxStreamBytes,
    });
    if (this.#closed || socket.destroyed) return;
    if (!r.ok) {
      this.#countStreamFailure(r.kind);
      this.#log.debug("bad incoming stream", { from, error: r.error });
      if (r.kind === "garbage" || r.kind === "plain_rejected" || r.kind === "decrypt") {
        // Go answers read errors with an errResp through the usual send path.
        await this.#write(socket, encodeErr({ error: r.error }));
      }
      socket.destroy();
      return;
    }
    let reply: Uint8Array | undefined;
    try {
      reply = this.#handlers?.onStream(from, r.message);
    } catch (err) {
      this.#log.error("stream handler threw", { from, error: String(err) });
    }
    if (reply !== undefined) await this.#write(socket, reply, false);
    socket.end();
  }

  #countStreamFailure(kind: Extract<ReadOutcome, { ok: false }>["kind"]): void {
    if (kind === "too_large") this.stats.streamsTooLarge++;
    else if (kind === "decrypt") this.stats.streamsDecryptFailed++;
    else if (kind === "garbage" || kind === "plain_rejected") this.stats.streamsGarbage++;
  }

  /** Writes one stream message (compressing errResps like Go, encrypting if configured). */
  async #write(socket: net.Socket, message: Uint8Array, wrapCompress = this.#opts.compressReplies): Promise<void> {
    let bytes = wrapCompress ? encodeStream(message, { compress: true }) : message;
    if (this.#encryptOut) bytes = await encryptStream(this.#opts.keyring!, bytes, { nonce: this.#opts.nonce });
    if (socket.destroyed) return;
    await new Promise<void>((resolve) => socket.write(bytes, () => resolve()));
  }

  sendStream(
    to: string,
    payload: Uint8Array,
    options: { expectReply: boolean },
    onResult: (r: StreamResult<Uint8Array>) => void,
  ): void {
    let done = false;
    const result = (r: StreamResult<Uint8Array>): void => {
      if (done) return;
      done = true;
      if (!r.ok) this.stats.streamsFailed++;
      try {
        onResult(r);
      } catch (err) {
        this.#log.error("stream result handler threw", { to, error: String(err) });
      }
    };
    if (this.#closed) return result({ ok: false, error: "Transport is closed" });
    const addr = splitHostPort(to);
    if (!addr) return result({ ok: false, error: `Bad address "${to}"` });
    this.stats.streamsOpened++;
    // Dial from the bind address (not the wildcard): firewall rules and peers' logs can tell agents on one host apart.
    const socket = net.connect({ host: addr.host, port: addr.port, localAddress: dialFrom(this.#opts.bindAddr, addr.host) });
    this.#track(socket);
    socket.on("error", (err: Error & { code?: string }) => {
      result({ ok: false, error: `Cannot reach "${to}": ${err.message}`, refused: err.code === "ECONNREFUSED" });
      socket.destroy();
    });
    let reading = false; // while reading, readOneMessage reports an early close itself
    socket.once("close", () => {
      if (!reading) result({ ok: false, error: `Connection to "${to}" closed or timed out` });
    });
    socket.once("connect", () => {
      void (async () => {
        await this.#write(socket, payload, false);
        if (!options.expectReply) {
          socket.end();
          return result({ ok: true, reply: undefined });
        }
        reading = true;
        const r = await readOneMessage(socket, {
          keyring: this.#opts.keyring,
          verifyIncoming: this.#opts.verifyIncoming,
          maxBytes: this.#opts.maxStreamBytes,
        });
        socket.destroy();
        if (!r.ok) {
          this.#countStreamFailure(r.kind);
          return result({ ok: false, error: `Bad reply from "${to}": ${r.error}` });
        }
        result({ ok: true, reply: r.message });
      })();
    });
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    try {
      this.#udp.close();
    } catch {
      // already closed
    }
    this.#tcp.close();
  }
}

function listenTcp(host: string, port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    const onError = (err: Error): void => reject(err);
    server.once("error", onError);
    server.listen({ host, port, exclusive: true }, () => {
      server.off("error", onError);
      resolve(server);
    });
  });
}

function bindUdp(host: string, port: number): Promise<dgram.Socket> {
  return new Promise((resolve, reject) => {
    const type = host.includes(":") ? "udp6" : "udp4";
    const sock = dgram.createSocket({ type, reuseAddr: false });
    const onError = (err: Error): void => {
      try {
        sock.close();
      } catch {
        // not bound
      }
      reject(err);
    };
    sock.once("error", onError);
    sock.bind({ address: host, port, exclusive: true }, () => {
      sock.off("error", onError);
      resolve(sock);
    });
  });
}

function closeServer(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Binds TCP then UDP on the same port. With port 0 the TCP port is chosen
 * by the OS and UDP must get the same number; on a conflict both are
 * released and another port is tried (up to 10 times).
 */
export async function createNodeTransport(options: NodeTransportOptions): Promise<NodeTransport> {
  const attempts = options.bindPort === 0 ? 10 : 1;
  let lastErr: unknown;
  for (let i = 0; i < attempts; i++) {
    const tcp = await listenTcp(options.bindAddr, options.bindPort);
    const port = (tcp.address() as net.AddressInfo).port;
    try {
      const udp = await bindUdp(options.bindAddr, port);
      return new NodeTransport(udp, tcp, port, options);
    } catch (err) {
      lastErr = err;
      await closeServer(tcp);
    }
  }
  throw new Error(
    `Cannot bind gossip UDP+TCP on "${joinHostPort(options.bindAddr, options.bindPort)}": ${String(lastErr)}`,
  );
}
