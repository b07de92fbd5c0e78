// Runs a pure gossip core (SwimCore or SerfCore) on a Clock and a transport.
// The only file in core/gossip (besides transport_node.ts) that touches time.
//
// TRANSPORT CONTRACT (for core/gossip/transport_node.ts and the sim):
//
//   interface GossipTransport<P = Uint8Array> {
//     readonly localAddr: string;                       // advertise "ip:port"
//     sendPacket(to: string, payload: P): void;          // UDP, best effort
//     // TCP: connect to `to`, write payload, read ONE reply message (or
//     // none when expectReply is false), then close. onResult is called
//     // exactly once: {ok:true, reply} or {ok:false, error} (connect error,
//     // TCPTimeout, decode error). Never throws.
//     sendStream(to: string, payload: P, options: { expectReply: boolean },
//                onResult: (r: StreamResult<P>) => void): void;
//     // Incoming traffic. onStream gets one complete decoded-able message
//     // read from an accepted connection and returns the reply to write
//     // (undefined = close without reply).
//     // onPacket returns false for a payload that decodes to nothing (the
//     // transport counts it as garbage).
//     listen(handlers: { onPacket(from: string, payload: P): boolean | void;
//                        onStream(from: string, payload: P): P | undefined }): void;
//     close(): void;
//   }
//
// "from" is the peer's "ip:port" (UDP source; for TCP the remote address).
// P is `Uint8Array` for the real network: one datagram exactly as received
// (the codec does CRC/compound/compress/encrypt), one stream message after
// the transport's incremental framing. The codec maps P <-> core messages:
// `wireCodec` (once the wire package has encoders) or `identityCodec` in sims.

import type { Clock, Timer } from "../clock/clock.ts";
import type { Logger } from "../log/mod.ts";
import type { GossipTypes, SwimMessage, SwimSend } from "./swim.ts";
import { SerfCore } from "./serf.ts";
import type { SerfConfig, SerfEvent, SerfInput, SerfTypes } from "./serf.ts";
import { serfWireCodec } from "./wire/codec.ts";
import type { WireCodec } from "./wire/codec.ts";

/** `refused`: the connect was answered with a reset (nothing listens there). */
export type StreamResult<P> = { ok: true; reply: P | undefined } | { ok: false; error: string; refused?: boolean };

export interface GossipTransportHandlers<P> {
  /** False: the payload decoded to no message (counted as garbage by the transport). */
  onPacket(from: string, payload: P): boolean | void;
  onStream(from: string, payload: P): P | undefined;
}

export interface GossipTransport<P = Uint8Array> {
  readonly localAddr: string;
  sendPacket(to: string, payload: P): void;
  sendStream(to: string, payload: P, options: { expectReply: boolean }, onResult: (r: StreamResult<P>) => void): void;
  listen(handlers: GossipTransportHandlers<P>): void;
  close(): void;
}

export type DecodeResult<T extends GossipTypes> =
  | { ok: true; msgs: SwimMessage<T>[] }
  | { ok: false; error: string };

/** Maps core messages to transport payloads and back; never throws. */
export interface GossipCodec<T extends GossipTypes, P> {
  encode(msg: SwimMessage<T>, options: { stream: boolean }): P;
  decode(payload: P, options: { stream: boolean }): DecodeResult<T>;
}

/** For simulations: payloads are the message objects themselves. */
export function identityCodec<T extends GossipTypes>(): GossipCodec<T, SwimMessage<T>> {
  return {
    encode: (msg) => msg,
    decode: (payload) => ({ ok: true, msgs: [payload] }),
  };
}

/** The inputs a driver feeds; everything else is passed through `input()`. */
type DriverFed<T extends GossipTypes> =
  | { kind: "tick"; now: number }
  | { kind: "packet"; now: number; from: string; msg: SwimMessage<T> }
  | { kind: "stream"; now: number; from: string; msg: SwimMessage<T>; streamId?: number; requestId?: number }
  | { kind: "streamError"; now: number; requestId: number; error: string; refused?: boolean };

/** What a driver needs from a core: SwimCore and SerfCore both fit. */
export interface GossipCoreLike<T extends GossipTypes, I, E> {
  step(input: I | DriverFed<T>): void;
  ready(): { sends: SwimSend<T>[]; events: E[] };
  nextDeadline(): number;
}

/** An input without `now`: the driver stamps it from its clock. */
export type Unstamped<I> = I extends unknown ? Omit<I, "now"> : never;

export interface GossipDriverOptions<T extends GossipTypes, I, E, P> {
  core: GossipCoreLike<T, I, E>;
  clock: Clock;
  transport: GossipTransport<P>;
  codec: GossipCodec<T, P>;
  logger: Logger;
  onEvent?: (event: E) => void;
}

export class GossipDriver<T extends GossipTypes, I extends { now: number }, E, P> {
  readonly core: GossipCoreLike<T, I, E>;
  #clock: Clock;
  #transport: GossipTransport<P>;
  #codec: GossipCodec<T, P>;
  #log: Logger;
  #onEvent: (event: E) => void;
  #timer: Timer | undefined;
  #timerAt = Infinity;
  #streamSeq = 0;
  #replies = new Map<number, SwimSend<T>>();
  #running = false;
  #pumping = false;

  constructor(options: GossipDriverOptions<T, I, E, P>) {
    this.core = options.core;
    this.#clock = options.clock;
    this.#transport = options.transport;
    this.#codec = options.codec;
    this.#log = options.logger;
    this.#onEvent = options.onEvent ?? (() => {});
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#transport.listen({
      onPacket: (from, payload) => this.#onPacket(from, payload),
      onStream: (from, payload) => this.#onStream(from, payload),
    });
    this.#pump();
  }

  /** Stop timers and close the transport (a crash or shutdown). */
  stop(): void {
    this.#running = false;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#timerAt = Infinity;
    this.#transport.close();
  }

  get isRunning(): boolean {
    return this.#running;
  }

  /** Feed an application input (join, leave, user event, …), stamped with now. */
  input(input: Unstamped<I>): void {
    if (!this.#running) return;
    this.core.step({ ...input, now: this.#clock.now() } as unknown as I);
    this.#pump();
  }

  #onPacket(from: string, payload: P): boolean {
    if (!this.#running) return true;
    const r = this.#codec.decode(payload, { stream: false });
    if (!r.ok) {
      this.#log.warn("dropping undecodable packet", { from, error: r.error });
      return false;
    }
    const now = this.#clock.now();
    for (const msg of r.msgs) this.core.step({ kind: "packet", now, from, msg });
    this.#pump();
    return true;
  }

  #onStream(from: string, payload: P): P | undefined {
    if (!this.#running) return undefined;
    const r = this.#codec.decode(payload, { stream: true });
    if (!r.ok) {
      this.#log.warn("dropping undecodable stream", { from, error: r.error });
      return this.#codec.encode({ type: "err", error: r.error }, { stream: true });
    }
    const streamId = ++this.#streamSeq;
    const now = this.#clock.now();
    for (const msg of r.msgs) this.core.step({ kind: "stream", now, from, msg, streamId });
    this.#pump();
    const reply = this.#replies.get(streamId);
    this.#replies.delete(streamId);
    return reply ? this.#codec.encode(reply.msg, { stream: true }) : undefined;
  }

  #tick(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    if (!this.#running) return;
    this.core.step({ kind: "tick", now: this.#clock.now() });
    this.#pump();
  }

  #pump(): void {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      for (;;) {
        const rd = this.core.ready();
        if (rd.sends.length === 0 && rd.events.length === 0) break;
        for (const s of rd.sends) this.#guard("send", () => this.#send(s));
        for (const e of rd.events) this.#guard("event handler", () => this.#onEvent(e));
        if (!this.#running) return;
      }
    } finally {
      this.#pumping = false;
    }
    if (this.#running) this.#schedule();
  }

  #send(s: SwimSend<T>): void {
    if (s.replyTo !== undefined) {
      this.#replies.set(s.replyTo, s);
      return;
    }
    const payload = this.#codec.encode(s.msg, { stream: !!s.reliable });
    if (!s.reliable) {
      this.#transport.sendPacket(s.to, payload);
      return;
    }
    const requestId = s.requestId;
    this.#transport.sendStream(s.to, payload, { expectReply: requestId !== undefined }, (r) => {
      if (requestId === undefined || !this.#running) return;
      const now = this.#clock.now();
      if (!r.ok) {
        this.core.step({ kind: "streamError", now, requestId, error: r.error, refused: r.refused === true });
      } else if (r.reply === undefined) {
        this.core.step({ kind: "streamError", now, requestId, error: "Stream closed without a reply" });
      } else {
        const d = this.#codec.decode(r.reply, { stream: true });
        if (!d.ok) this.core.step({ kind: "streamError", now, requestId, error: d.error });
        else for (const msg of d.msgs) this.core.step({ kind: "stream", now, from: s.to, msg, requestId });
      }
      this.#pump();
    });
  }

  /** A throwing transport or application callback must not stop the gossip loop. */
  #guard(what: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error(`gossip ${what} failed`, { error: err instanceof Error ? err.message : String(err) });
    }
  }

  #schedule(): void {
    const at = this.core.nextDeadline();
    if (!Number.isFinite(at)) return;
    if (this.#timer && this.#timerAt <= at) return;
    this.#timer?.cancel();
    this.#timerAt = at;
    this.#timer = this.#clock.setTimer(Math.max(0, at - this.#clock.now()), () => this.#tick());
  }
}

export type SerfDriver = GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>;

/**
 * The usual wiring for an agent: a SerfCore on the real wire codec (exact
 * packet sizes) and a byte transport such as transport_node.ts. Call
 * `start()`, then `input({ kind: "join", addrs })` etc.
 */
export function createSerfDriver(options: {
  serf: Omit<SerfConfig, "now" | "measure" | "logger">;
  clock: Clock;
  transport: GossipTransport<Uint8Array>;
  logger: Logger;
  codec?: WireCodec<SerfTypes>;
  onEvent?: (event: SerfEvent) => void;
}): SerfDriver {
  const log = options.logger;
  const codec = options.codec ??
    serfWireCodec({ onWireError: (e) => log.debug("dropped part of a gossip message", { code: e.code, error: e.message }) });
  const now = options.clock.now();
  const core = new SerfCore({ ...options.serf, now, wallOffsetMs: options.clock.wallNow() - now, measure: codec.measure, logger: log.named("serf") });
  return new GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>({
    core,
    clock: options.clock,
    transport: options.transport,
    codec,
    logger: log,
    onEvent: options.onEvent,
  });
}
