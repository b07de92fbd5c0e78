// The DNS server: UDP and TCP on one port, dns-packet for the wire format.
// Queries go through the DnsResolver; names outside our domains go to the
// recursors over UDP, in order, each with the recursor timeout (a TCP client
// whose forwarded answer came back truncated gets it again over TCP). Bad input
// is counted and dropped (or answered FORMERR when the header is readable);
// nothing a client sends can throw out of here.
import { Buffer } from "node:buffer";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { connect, createServer, type Server as TcpServer, type Socket as TcpSocket } from "node:net";
import * as dnsPacket from "dns-packet";
import { compressMessage } from "./compress.ts";
import { ListenError, listenErrorText } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { isValidName, rcodeAnswer, type DnsAnswer, type DnsQuestion, type DnsRcode, type DnsRecord } from "./answer.ts";
import type { DnsLookedUp, DnsResolver } from "./driver.ts";
import { canonicalName } from "./names.ts";
import { parseQuery, typeName } from "./query.ts";

/** The DNS port could not be opened (the shared ListenError, under the name DNS callers know). */
export const DnsListenError = ListenError;

export interface DnsCounters {
  udpQueries: number;
  tcpQueries: number;
  /** Packets dropped unanswered: too short, responses, unreadable. */
  dropped: number;
  /** Queries answered FORMERR (undecodable body, not exactly one question). */
  formErr: number;
  /** TCP connections closed for a frame over the size limit, or for not reading their answers. */
  tcpFramesRefused: number;
  forwarded: number;
  /** Forwarded queries no recursor answered (SERVFAIL). */
  forwardFailed: number;
  /** Answers that failed to encode (SERVFAIL instead). */
  encodeFailed: number;
  /** Answers sent from the encoded-answer cache. */
  cacheHits: number;
}

export interface DnsServerOptions {
  resolver: DnsResolver;
  logger?: Logger;
  /** `host`, `host:port`, `[v6]:port`; port 53 when omitted. */
  recursors?: string[];
  recursorTimeoutMs?: number;
  /** "sequential" (default): recursors in the order listed; "random": a fresh shuffle per query (Consul recursor_strategy). */
  recursorStrategy?: RecursorStrategy;
  /** Write every name in full (Consul dns_config.disable_compression); default: compressed. */
  disableCompression?: boolean;
  /** Longest TCP query frame accepted (default 4096 bytes). */
  maxTcpQueryBytes?: number;
  /** Close TCP connections idle this long (default 10 s). */
  tcpIdleTimeoutMs?: number;
  maxTcpConnections?: number;
  /** Picks among cached shuffles of an answer (default: seeded from the clock). */
  rng?: Rng;
}

interface CachedAnswer {
  index: number;
  atMs: number;
  /** How many shuffles to keep: 1 when the order cannot vary. */
  want: number;
  variants: Uint8Array[];
}

const shuffleVariants = 8;
/** Queries one TCP connection may have unanswered, and answer bytes it may leave unread. */
const maxTcpInFlight = 256;
const maxTcpUnsentBytes = 1 << 20;
const maxCachedAnswers = 10_000;
const maxCachedAnswerBytes = 4096;
/** Belt and braces: even at an unchanged index, rebuild answers this often. */
const answerCacheMaxAgeMs = 1_000;

const fastTypes = new Set([1, 2, 5, 6, 12, 15, 16, 28, 33, 255]);
function knownType(qtype: number): boolean {
  return fastTypes.has(qtype);
}

export interface DnsServer {
  readonly counters: DnsCounters;
  /** Bind UDP and TCP on the same port (0: pick one free for both). */
  listen(addr: { host: string; port: number }): Promise<{ host: string; port: number }>;
  close(): Promise<void>;
  /** Answer one query message (what UDP and TCP both do); exposed for tests. */
  handle(query: Uint8Array, transport: "udp" | "tcp"): Promise<Uint8Array | undefined>;
}

const rcodeNumbers: Record<DnsRcode, number> = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 };

export type RecursorStrategy = "sequential" | "random";

/**
 * The order to ask recursors in (Consul RecursorStrategy.Indexes): as listed,
 * or a random permutation per query.
 */
export function recursorOrder<T>(recursors: readonly T[], strategy: RecursorStrategy, rng: Rng): T[] {
  return strategy === "random" ? rng.shuffle([...recursors]) : [...recursors];
}

/** A recursor address as host and port. */
export function parseRecursor(text: string): { host: string; port: number } | undefined {
  const t = text.trim();
  if (!t) return undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
  if (bracket) return { host: bracket[1]!, port: bracket[2] ? Number(bracket[2]) : 53 };
  const colons = t.split(":").length - 1;
  if (colons === 1) {
    const [host, port] = t.split(":");
    const p = Number(port);
    if (!host || !Number.isInteger(p) || p <= 0 || p > 65535) return undefined;
    return { host, port: p };
  }
  return { host: t, port: 53 };
}

function listenMessage(host: string, port: number, proto: "udp" | "tcp", err: unknown): string {
  return listenErrorText({ what: " for DNS", host, port, proto, portFlag: "-dns-port (-1 disables DNS)", checkWith: proto === "udp" ? "ss -lunp" : "ss -ltnp", err });
}

export function createDnsServer(options: DnsServerOptions): DnsServer {
  const { resolver } = options;
  const logger = options.logger ?? nullLogger();
  const recursors = (options.recursors ?? []).map((r) => {
    const parsed = parseRecursor(r);
    if (!parsed) logger.warn("ignoring recursor with a bad address", { recursor: r });
    return parsed;
  }).filter((r): r is { host: string; port: number } => r !== undefined);
  const recursorTimeoutMs = options.recursorTimeoutMs ?? 2_000;
  const recursorStrategy = options.recursorStrategy ?? "sequential";
  const compress = options.disableCompression !== true;
  const maxTcpQueryBytes = options.maxTcpQueryBytes ?? 4096;
  const tcpIdleTimeoutMs = options.tcpIdleTimeoutMs ?? 10_000;
  const maxTcpConnections = options.maxTcpConnections ?? 1024;
  const counters: DnsCounters = {
    udpQueries: 0,
    tcpQueries: 0,
    dropped: 0,
    formErr: 0,
    tcpFramesRefused: 0,
    forwarded: 0,
    forwardFailed: 0,
    encodeFailed: 0,
    cacheHits: 0,
  };
  const answerCache = new Map<string, CachedAnswer>();
  const pick = options.rng ?? new Rng(Date.now() >>> 0);
  let udp: UdpSocket | undefined;
  let tcp: TcpServer | undefined;
  const connections = new Set<TcpSocket>();

  function headerOnly(query: Uint8Array, rcode: DnsRcode, ra: boolean): Uint8Array {
    const out = new Uint8Array(12);
    out[0] = query[0]!;
    out[1] = query[1]!;
    // QR, the query's opcode and RD; RA when we recurse; the rcode.
    out[2] = 0x80 | (query[2]! & 0x79);
    out[3] = (ra ? 0x80 : 0) | rcodeNumbers[rcode];
    return out;
  }

  function encode(
    id: number,
    rd: boolean,
    question: dnsPacket.Question,
    answer: DnsAnswer,
    ednsSize: number | undefined,
  ): Uint8Array {
    let flags = rcodeNumbers[answer.rcode];
    if (answer.authoritative) flags |= dnsPacket.AUTHORITATIVE_ANSWER;
    if (answer.truncated) flags |= dnsPacket.TRUNCATED_RESPONSE;
    if (rd) flags |= dnsPacket.RECURSION_DESIRED;
    if (recursors.length > 0) flags |= dnsPacket.RECURSION_AVAILABLE;
    const additionals = answer.additionals as dnsPacket.Answer[];
    const packet: dnsPacket.Packet = {
      type: "response",
      id,
      flags,
      questions: [question],
      answers: answer.answers as dnsPacket.Answer[],
      authorities: answer.authorities as dnsPacket.Answer[],
      additionals: ednsSize === undefined
        ? additionals
        : [...additionals, { type: "OPT", name: ".", udpPayloadSize: ednsSize, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as dnsPacket.Answer],
    };
    const raw = dnsPacket.encode(packet);
    return compress ? compressMessage(raw) : raw;
  }

  async function handle(query: Uint8Array, transport: "udp" | "tcp"): Promise<Uint8Array | undefined> {
    if (transport === "udp") counters.udpQueries++;
    else counters.tcpQueries++;
    if (query.length < 12) {
      counters.dropped++;
      return undefined;
    }
    if (query[2]! & 0x80) {
      // A response sent to us: never answer it (no reflection loops).
      counters.dropped++;
      return undefined;
    }
    const ra = recursors.length > 0;
    const opcode = (query[2]! >> 3) & 0x0f;
    if (opcode !== 0) return headerOnly(query, "NOTIMP", ra);
    const rd = (query[2]! & 0x01) === 1;
    const id = (query[0]! << 8) | query[1]!;
    let echo: dnsPacket.Question;
    let ednsSize: number | undefined;
    const fast = parseQuery(query);
    if (fast && (fast.qclass === 1 || fast.qclass === 255) && knownType(fast.qtype)) {
      echo = { name: fast.name, type: typeName(fast.qtype) as dnsPacket.RecordType, class: fast.qclass === 1 ? "IN" : "ANY" };
      ednsSize = fast.ednsSize;
    } else {
      let packet: dnsPacket.DecodedPacket;
      try {
        packet = dnsPacket.decode(toBuffer(query));
      } catch {
        counters.formErr++;
        return headerOnly(query, "FORMERR", ra);
      }
      const questions = packet.questions ?? [];
      if (questions.length !== 1) {
        counters.formErr++;
        return headerOnly(query, "FORMERR", ra);
      }
      echo = questions[0]!;
      // A label with a dot or bytes that are not UTF-8 cannot be echoed faithfully by dns-packet.
      if (typeof echo.name !== "string" || !isValidName(echo.name)) {
        counters.formErr++;
        return headerOnly(query, "FORMERR", ra);
      }
      for (const a of packet.additionals ?? []) {
        if (a.type === "OPT") ednsSize = Math.max(512, (a as dnsPacket.OptAnswer).udpPayloadSize || 512);
      }
    }
    const question: DnsQuestion = { name: echo.name, type: String(echo.type) };
    const options = { transport, ednsSize };
    let looked: DnsLookedUp | undefined;
    try {
      looked = await resolver.lookup(question);
    } catch (err) {
      logger.warn("lookup failed", { name: question.name, type: question.type, error: String(err) });
    }
    // Same question, same catalog index: reuse an encoding (one of a few
    // shuffles, so the order still varies between answers).
    const index = looked && !looked.failed ? looked.data.index ?? 0 : 0;
    const key = index > 0 ? `${transport === "udp" ? "u" : "t"}${ednsSize ?? 0}${rd ? "r" : "n"}${echo.class ?? "IN"}${question.type}|${question.name}` : "";
    const hit = key ? answerCache.get(key) : undefined;
    const nowMs = performance.now();
    if (hit && hit.index === index && nowMs - hit.atMs < answerCacheMaxAgeMs && hit.variants.length >= hit.want) {
      counters.cacheHits++;
      const out = new Uint8Array(hit.variants[hit.variants.length === 1 ? 0 : pick.int(hit.variants.length)]!);
      out[0] = id >> 8;
      out[1] = id & 0xff;
      return out;
    }
    let answer: DnsAnswer;
    try {
      answer = looked ? resolver.answer(looked, options) : rcodeAnswer("SERVFAIL");
    } catch (err) {
      logger.warn("answer failed", { name: question.name, type: question.type, error: String(err) });
      answer = rcodeAnswer("SERVFAIL");
    }
    if (answer.forward) {
      const forwarded = await forward(query, id, transport);
      if (forwarded) return forwarded;
      answer = rcodeAnswer("SERVFAIL");
    }
    let bytes: Uint8Array;
    try {
      bytes = encode(id, rd, echo, answer, ednsSize);
    } catch (err) {
      counters.encodeFailed++;
      logger.warn("cannot encode answer", { name: question.name, type: question.type, error: String(err) });
      return headerOnly(query, "SERVFAIL", ra);
    }
    if (key && answer.index === index && bytes.length <= maxCachedAnswerBytes) {
      if (hit && hit.index === index && nowMs - hit.atMs < answerCacheMaxAgeMs) hit.variants.push(bytes);
      else {
        if (answerCache.size >= maxCachedAnswers) answerCache.clear();
        answerCache.set(key, { index, atMs: nowMs, want: answer.answers.length > 1 ? shuffleVariants : 1, variants: [bytes] });
      }
    }
    return bytes;
  }

  async function forward(query: Uint8Array, id: number, transport: "udp" | "tcp"): Promise<Uint8Array | undefined> {
    counters.forwarded++;
    for (const r of recursorOrder(recursors, recursorStrategy, pick)) {
      const reply = await askRecursor(r, query, id, recursorTimeoutMs);
      // A TCP client cannot retry a truncated answer: ask the same recursor over TCP.
      if (reply && transport === "tcp" && reply[2]! & 0x02) {
        const full = await askRecursorTcp(r, query, id, recursorTimeoutMs);
        if (full) return full;
      }
      if (reply) return reply;
      logger.debug("recursor did not answer", { recursor: `${r.host}:${r.port}` });
    }
    counters.forwardFailed++;
    logger.warn("no recursor answered", { recursors: recursors.length });
    return undefined;
  }

  function onUdpMessage(msg: Uint8Array, rinfo: { address: string; port: number }): void {
    handle(msg, "udp").then(
      (reply) => {
        if (reply && udp) udp.send(reply, rinfo.port, rinfo.address);
      },
      (err) => logger.warn("udp query failed", { error: String(err) }),
    );
  }

  function onTcpConnection(sock: TcpSocket): void {
    if (connections.size >= maxTcpConnections) {
      counters.dropped++;
      sock.destroy();
      return;
    }
    connections.add(sock);
    sock.setTimeout(tcpIdleTimeoutMs, () => sock.destroy());
    sock.on("error", () => sock.destroy());
    sock.on("close", () => connections.delete(sock));
    let buf: Uint8Array = new Uint8Array(0);
    let inFlight = 0;
    sock.on("data", (chunk: Uint8Array) => {
      buf = buf.length === 0 ? chunk : concat(buf, chunk);
      while (buf.length >= 2) {
        const len = (buf[0]! << 8) | buf[1]!;
        if (len > maxTcpQueryBytes || len === 0) {
          counters.tcpFramesRefused++;
          logger.debug("tcp frame refused", { bytes: len, from: sock.remoteAddress });
          sock.destroy();
          return;
        }
        if (buf.length < 2 + len) break;
        const msg = buf.subarray(2, 2 + len);
        buf = buf.subarray(2 + len);
        if (inFlight >= maxTcpInFlight || sock.writableLength > maxTcpUnsentBytes) {
          // A client that pipelines without reading its answers: let it go.
          counters.tcpFramesRefused++;
          logger.debug("tcp client not reading its answers", { from: sock.remoteAddress, inFlight });
          sock.destroy();
          return;
        }
        inFlight++;
        handle(msg, "tcp").then(
          (reply) => {
            inFlight--;
            if (!reply || sock.destroyed) return;
            const frame = new Uint8Array(2 + reply.length);
            frame[0] = reply.length >> 8;
            frame[1] = reply.length & 0xff;
            frame.set(reply, 2);
            sock.write(frame);
          },
          (err) => {
            inFlight--;
            logger.warn("tcp query failed", { error: String(err) });
          },
        );
      }
    });
  }

  async function bindUdp(host: string, port: number): Promise<UdpSocket> {
    const sock = createSocket({ type: host.includes(":") ? "udp6" : "udp4" });
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => {
        sock.close();
        reject(new DnsListenError(listenMessage(host, port, "udp", err), { host, port, cause: err }));
      };
      sock.once("error", onError);
      sock.bind({ address: host, port }, () => {
        sock.off("error", onError);
        resolve();
      });
    });
    sock.on("error", (err) => logger.warn("udp socket error", { error: String(err) }));
    sock.on("message", onUdpMessage);
    return sock;
  }

  async function bindTcp(host: string, port: number): Promise<TcpServer> {
    const server = createServer(onTcpConnection);
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(new DnsListenError(listenMessage(host, port, "tcp", err), { host, port, cause: err }));
      server.once("error", onError);
      server.listen({ host, port }, () => {
        server.off("error", onError);
        resolve();
      });
    });
    server.on("error", (err) => logger.warn("tcp server error", { error: String(err) }));
    return server;
  }

  return {
    counters,
    handle,
    async listen({ host, port }) {
      for (let attempt = 0; ; attempt++) {
        const u = await bindUdp(host, port);
        const bound = u.address().port;
        try {
          tcp = await bindTcp(host, bound);
        } catch (err) {
          u.close();
          // Port 0 picked a UDP port whose TCP twin is taken: try another.
          if (port === 0 && attempt < 10) continue;
          throw err;
        }
        udp = u;
        logger.debug("DNS server listening", { host, port: bound });
        return { host, port: bound };
      }
    },
    async close() {
      const u = udp;
      udp = undefined;
      if (u) await new Promise<void>((resolve) => u.close(() => resolve()));
      for (const s of connections) s.destroy();
      const t = tcp;
      tcp = undefined;
      if (t) await new Promise<void>((resolve) => t.close(() => resolve()));
    },
  };
}

/**
 * Hostname lookups at the recursors for the resolver (`createDnsResolver`
 * `recurse`, Consul resolveCNAME): one A question over UDP to each recursor
 * in order, each with the timeout; the first answer's CNAME, A and AAAA
 * records, or [] when none answered.
 */
export function createRecursorLookup(options: { recursors: string[]; timeoutMs?: number; strategy?: RecursorStrategy; logger?: Logger; rng?: Rng }): (name: string) => Promise<DnsRecord[]> {
  const logger = options.logger ?? nullLogger();
  const recursors = options.recursors.map(parseRecursor).filter((r): r is { host: string; port: number } => r !== undefined);
  const timeoutMs = options.timeoutMs ?? 2_000;
  const ids = options.rng ?? new Rng(Date.now() >>> 0);
  const strategy = options.strategy ?? "sequential";
  return async (name) => {
    for (const r of recursorOrder(recursors, strategy, ids)) {
      const id = ids.int(0x10000);
      const query = dnsPacket.encode({ type: "query", id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type: "A", name }] });
      const reply = await askRecursor(r, query, id, timeoutMs);
      if (!reply) continue;
      try {
        return (dnsPacket.decode(toBuffer(reply)).answers ?? []).flatMap((a): DnsRecord[] =>
          (a.type === "A" || a.type === "AAAA" || a.type === "CNAME") && typeof a.data === "string" && isValidName(a.name) &&
            (a.type !== "CNAME" || isValidName(a.data))
            ? [{ name: canonicalName(a.name), type: a.type, class: "IN", ttl: a.ttl ?? 0, data: a.type === "CNAME" ? canonicalName(a.data) : a.data }]
            : []
        );
      } catch {
        logger.debug("recursor answer did not decode", { recursor: `${r.host}:${r.port}`, name });
      }
    }
    return [];
  };
}

/** One recursor over TCP (one framed query, one framed answer), or undefined on timeout or error. */
function askRecursorTcp(r: { host: string; port: number }, query: Uint8Array, id: number, timeoutMs: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve) => {
    const sock = connect({ host: r.host, port: r.port });
    let buf: Uint8Array = new Uint8Array(0);
    let done = false;
    const finish = (v: Uint8Array | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    sock.on("error", () => finish(undefined));
    sock.on("close", () => finish(undefined));
    sock.on("connect", () => {
      const frame = new Uint8Array(2 + query.length);
      frame[0] = query.length >> 8;
      frame[1] = query.length & 0xff;
      frame.set(query, 2);
      sock.write(frame);
    });
    sock.on("data", (chunk: Uint8Array) => {
      buf = concat(buf, chunk);
      if (buf.length < 2) return;
      const len = (buf[0]! << 8) | buf[1]!;
      if (buf.length < 2 + len) return;
      const msg = buf.slice(2, 2 + len);
      finish(msg.length >= 12 && ((msg[0]! << 8) | msg[1]!) === id ? msg : undefined);
    });
  });
}

/** One recursor, one try: the reply bytes (same ID) or undefined on timeout or error. */
function askRecursor(r: { host: string; port: number }, query: Uint8Array, id: number, timeoutMs: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve) => {
    const sock = createSocket({ type: r.host.includes(":") ? "udp6" : "udp4" });
    let done = false;
    const finish = (v: Uint8Array | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try { sock.close(); } catch { /* already closed */ }
      resolve(v);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    sock.on("error", () => finish(undefined));
    sock.on("message", (msg: Uint8Array) => {
      if (msg.length < 12 || ((msg[0]! << 8) | msg[1]!) !== id || !(msg[2]! & 0x80)) return; // not our answer
      finish(msg);
    });
    sock.send(query, r.port, r.host, (err) => {
      if (err) finish(undefined);
    });
  });
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
