// memberlist messages (docs/gossip-wire.md sections 3 and 4): encoders that
// reproduce Go's bytes, decoders that never throw, the compound / compress /
// CRC wrappers for UDP, and the TCP stream framing (push/pull, ping, user,
// err) parsed incrementally because plaintext streams have no length prefix.

import type {
  AckResp,
  Alive,
  Compress,
  Dead,
  DecodedPacket,
  ErrResp,
  IndirectPingReq,
  MemberlistMessage,
  NackResp,
  Ping,
  PushNodeState,
  PushPull,
  PushPullHeader,
  StreamMessage,
  Suspect,
  WireError,
  WireResult,
} from "./messages.ts";
import { MessageType } from "./messages.ts";
import { lzwCompress, lzwDecompress } from "./lzw.ts";
import {
  asBool,
  asBytes,
  asBytesOrNull,
  asInt,
  asString,
  asStruct,
  asUint,
  decodeValue,
  fail,
  guarded,
  MpWriter,
  ok,
  skipValue,
  take,
} from "./msgpack_go.ts";
import type { MpValue, StructFields } from "./msgpack_go.ts";
import { keySet, readHeader, readKey, readRaw, readStr, readUint } from "./byte_reader.ts";
import type { ByteReader } from "./byte_reader.ts";

// ---------------------------------------------------------------------------
// CRC-32/IEEE

const crcTable = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 with the IEEE polynomial (zlib crc32, Go hash/crc32.ChecksumIEEE). */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = crcTable[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// ---------------------------------------------------------------------------
// Encoders (each returns type byte + body)

function withType(type: number, build: (w: MpWriter) => void): Uint8Array {
  const w = new MpWriter();
  w.byte(type);
  build(w);
  return w.bytes();
}

function writePingFields(w: MpWriter, p: Ping): void {
  w.struct({
    SeqNo: (w) => w.int(p.seqNo),
    Node: (w) => w.str(p.node),
    SourceAddr: p.sourceAddr && p.sourceAddr.length > 0 ? (w) => w.raw(p.sourceAddr!) : undefined,
    SourcePort: p.sourcePort ? (w) => w.int(p.sourcePort!) : undefined,
    SourceNode: p.sourceNode ? (w) => w.str(p.sourceNode!) : undefined,
  });
}

export function encodePing(p: Ping): Uint8Array {
  return withType(MessageType.ping, (w) => writePingFields(w, p));
}

export function encodeIndirectPing(p: IndirectPingReq): Uint8Array {
  return withType(MessageType.indirectPing, (w) =>
    w.struct({
      SeqNo: (w) => w.int(p.seqNo),
      Target: (w) => w.raw(p.target),
      Port: (w) => w.int(p.port),
      Node: (w) => w.str(p.node),
      Nack: (w) => w.bool(p.nack),
      SourceAddr: p.sourceAddr && p.sourceAddr.length > 0 ? (w) => w.raw(p.sourceAddr!) : undefined,
      SourcePort: p.sourcePort ? (w) => w.int(p.sourcePort!) : undefined,
      SourceNode: p.sourceNode ? (w) => w.str(p.sourceNode!) : undefined,
    }),
  );
}

export function encodeAck(a: AckResp): Uint8Array {
  return withType(MessageType.ackResp, (w) =>
    w.struct({ SeqNo: (w) => w.int(a.seqNo), Payload: (w) => w.rawOrNil(a.payload) }),
  );
}

export function encodeNack(n: NackResp): Uint8Array {
  return withType(MessageType.nackResp, (w) => w.struct({ SeqNo: (w) => w.int(n.seqNo) }));
}

function writeAccusation(w: MpWriter, m: Suspect | Dead): void {
  w.struct({
    Incarnation: (w) => w.int(m.incarnation),
    Node: (w) => w.str(m.node),
    From: (w) => w.str(m.from),
  });
}

export function encodeSuspect(s: Suspect): Uint8Array {
  return withType(MessageType.suspect, (w) => writeAccusation(w, s));
}

export function encodeDead(d: Dead): Uint8Array {
  return withType(MessageType.dead, (w) => writeAccusation(w, d));
}

/** Empty byte fields other than payloads are written as nil, as Go does for nil slices. */
function bytesOrNil(w: MpWriter, b: Uint8Array): void {
  if (b.length === 0) w.nil();
  else w.raw(b);
}

/**
 * Written field by field (the same bytes as `struct()`, names in Go's byte
 * order): every node encodes an alive for each member it learns, and in a
 * client's unoptimised code the closures, key sorting and lookups of
 * `struct()` cost more than the writing.
 */
export function encodeAlive(a: Alive): Uint8Array {
  const w = new MpWriter(64 + a.node.length * 3 + a.addr.length + a.meta.length + a.vsn.length);
  w.byte(MessageType.alive).mapHeader(6);
  bytesOrNil(w.str("Addr"), a.addr);
  w.str("Incarnation").int(a.incarnation);
  bytesOrNil(w.str("Meta"), a.meta);
  w.str("Node").str(a.node);
  w.str("Port").int(a.port);
  bytesOrNil(w.str("Vsn"), a.vsn);
  return w.bytes();
}

export function encodeErr(e: ErrResp): Uint8Array {
  return withType(MessageType.err, (w) => w.struct({ Error: (w) => w.str(e.error) }));
}

/** UDP user message: 0x08 + raw delegate (Serf) bytes. */
export function encodeUser(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(payload.length + 1);
  out[0] = MessageType.user;
  out.set(payload, 1);
  return out;
}

/** TCP user message: 0x08 + userMsgHeader{UserMsgLen} + bytes. */
export function encodeUserStream(payload: Uint8Array): Uint8Array {
  const w = new MpWriter(payload.length + 32);
  w.byte(MessageType.user);
  w.struct({ UserMsgLen: (w) => w.int(payload.length) });
  w.append(payload);
  return w.bytes();
}

export function encodePushPullHeader(h: PushPullHeader): Uint8Array {
  return withType(MessageType.pushPull, (w) => writePushPullHeader(w, h));
}

function writePushPullHeader(w: MpWriter, h: PushPullHeader): void {
  w.struct({
    Nodes: (w) => w.int(h.nodes),
    UserStateLen: (w) => w.int(h.userStateLen),
    Join: (w) => w.bool(h.join),
  });
}

/** One pushNodeState value (no type byte). */
export function encodePushNodeState(n: PushNodeState): Uint8Array {
  const w = new MpWriter(64 + n.name.length * 3 + n.addr.length + n.meta.length + n.vsn.length);
  writePushNodeState(w, n);
  return w.bytes();
}

/** Written field by field like encodeAlive: every node encodes each member's entry once. */
function writePushNodeState(w: MpWriter, n: PushNodeState): void {
  w.mapHeader(7);
  bytesOrNil(w.str("Addr"), n.addr);
  w.str("Incarnation").int(n.incarnation);
  bytesOrNil(w.str("Meta"), n.meta);
  w.str("Name").str(n.name);
  w.str("Port").int(n.port);
  w.str("State").int(n.state);
  bytesOrNil(w.str("Vsn"), n.vsn);
}

/** A whole push/pull: 0x06 + header + node states + user state. */
export function encodePushPull(pp: PushPull): Uint8Array {
  const w = new MpWriter(256 + pp.userState.length + pp.nodes.length * 96);
  w.byte(MessageType.pushPull);
  writePushPullHeader(w, { join: pp.join, nodes: pp.nodes.length, userStateLen: pp.userState.length });
  for (const n of pp.nodes) writePushNodeState(w, n);
  w.append(pp.userState);
  return w.bytes();
}

/** The same push/pull from node states already encoded with `encodePushNodeState`. */
export function encodePushPullEncoded(pp: { join: boolean; nodes: readonly Uint8Array[]; userState: Uint8Array }): Uint8Array {
  let size = 64 + pp.userState.length;
  for (const n of pp.nodes) size += n.length;
  const w = new MpWriter(size);
  w.byte(MessageType.pushPull);
  writePushPullHeader(w, { join: pp.join, nodes: pp.nodes.length, userStateLen: pp.userState.length });
  for (const n of pp.nodes) w.append(n);
  w.append(pp.userState);
  return w.bytes();
}

/** compress{Algo: 0, Buf: lzw(message)} with its type byte. */
export function encodeCompress(message: Uint8Array): Uint8Array {
  const buf = lzwCompress(message);
  return withType(MessageType.compress, (w) => w.struct({ Algo: (w) => w.int(0), Buf: (w) => w.raw(buf) }));
}

/** 0x07 | count | u16 lengths | parts. At most 127 parts (Go's decoder quirk). */
export function encodeCompound(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length > 127) throw new RangeError(`Compound of ${parts.length} parts: at most 127 allowed`);
  let size = 2 + parts.length * 2;
  for (const p of parts) {
    if (p.length > 0xffff) throw new RangeError(`Compound part of ${p.length} bytes exceeds 65535`);
    size += p.length;
  }
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out[0] = MessageType.compound;
  out[1] = parts.length;
  let off = 2;
  for (const p of parts) {
    view.setUint16(off, p.length);
    off += 2;
  }
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** 0x0c | crc32(message) BE | message. */
export function addCrc(message: Uint8Array): Uint8Array {
  const out = new Uint8Array(message.length + 5);
  out[0] = MessageType.hasCrc;
  new DataView(out.buffer).setUint32(1, crc32(message));
  out.set(message, 5);
  return out;
}

/** Encodes one leaf message (not compound/compress). */
export function encodeMessage(m: MemberlistMessage): Uint8Array {
  switch (m.type) {
    case "ping":
      return encodePing(m.body);
    case "indirectPing":
      return encodeIndirectPing(m.body);
    case "ackResp":
      return encodeAck(m.body);
    case "nackResp":
      return encodeNack(m.body);
    case "suspect":
      return encodeSuspect(m.body);
    case "alive":
      return encodeAlive(m.body);
    case "dead":
      return encodeDead(m.body);
    case "user":
      return encodeUser(m.body);
    case "pushPull":
      return encodePushPull(m.body);
    case "err":
      return encodeErr(m.body);
  }
}

export interface PacketOptions {
  /** Try LZW and keep it only if strictly smaller (memberlist UDP rule). */
  compress?: boolean;
  /** Wrap in the CRC header (for peers with PMax >= 5). */
  crc?: boolean;
}

/**
 * Builds one UDP datagram (before encryption) from encoded messages: one
 * message as is, several as a compound; then optional compression, then CRC.
 */
export function encodePacket(messages: readonly Uint8Array[], options: PacketOptions = {}): Uint8Array {
  if (messages.length === 0) throw new RangeError("Cannot encode an empty packet");
  let pkt = messages.length === 1 ? messages[0]! : encodeCompound(messages);
  if (options.compress) {
    const c = encodeCompress(pkt);
    if (c.length < pkt.length) pkt = c;
  }
  if (options.crc) pkt = addCrc(pkt);
  return pkt;
}

// ---------------------------------------------------------------------------
// Decoders

type Body<T> = (f: StructFields) => T;

function decodeStructBody<T>(bytes: Uint8Array, offset: number, what: string, body: Body<T>): WireResult<T> {
  const step = decodeValue(bytes, offset);
  if (!step.ok) return step;
  return structFrom(step.value.value, what, body);
}

function structFrom<T>(v: MpValue, what: string, body: Body<T>): WireResult<T> {
  return guarded(() => body(take(asStruct(v, what))));
}

const pingBody: Body<Ping> = (f) => {
  const p: Ping = {
    seqNo: take(asUint(f.get("SeqNo"), "SeqNo", 32)),
    node: take(asString(f.get("Node"), "Node")),
  };
  const addr = take(asBytesOrNull(f.get("SourceAddr"), "SourceAddr"));
  if (addr && addr.length > 0) p.sourceAddr = addr;
  const port = take(asUint(f.get("SourcePort"), "SourcePort", 16));
  if (port) p.sourcePort = port;
  const node = take(asString(f.get("SourceNode"), "SourceNode"));
  if (node) p.sourceNode = node;
  return p;
};

const indirectBody: Body<IndirectPingReq> = (f) => {
  const p: IndirectPingReq = {
    seqNo: take(asUint(f.get("SeqNo"), "SeqNo", 32)),
    target: take(asBytes(f.get("Target"), "Target")),
    port: take(asUint(f.get("Port"), "Port", 16)),
    node: take(asString(f.get("Node"), "Node")),
    nack: take(asBool(f.get("Nack"), "Nack")),
  };
  const addr = take(asBytesOrNull(f.get("SourceAddr"), "SourceAddr"));
  if (addr && addr.length > 0) p.sourceAddr = addr;
  const port = take(asUint(f.get("SourcePort"), "SourcePort", 16));
  if (port) p.sourcePort = port;
  const node = take(asString(f.get("SourceNode"), "SourceNode"));
  if (node) p.sourceNode = node;
  return p;
};

const ackBody: Body<AckResp> = (f) => ({
  seqNo: take(asUint(f.get("SeqNo"), "SeqNo", 32)),
  payload: take(asBytesOrNull(f.get("Payload"), "Payload")),
});

const nackBody: Body<NackResp> = (f) => ({ seqNo: take(asUint(f.get("SeqNo"), "SeqNo", 32)) });

const accusationBody: Body<Suspect> = (f) => ({
  incarnation: take(asUint(f.get("Incarnation"), "Incarnation", 32)),
  node: take(asString(f.get("Node"), "Node")),
  from: take(asString(f.get("From"), "From")),
});

const aliveBody: Body<Alive> = (f) => ({
  incarnation: take(asUint(f.get("Incarnation"), "Incarnation", 32)),
  node: take(asString(f.get("Node"), "Node")),
  addr: take(asBytes(f.get("Addr"), "Addr")),
  port: take(asUint(f.get("Port"), "Port", 16)),
  meta: take(asBytes(f.get("Meta"), "Meta")),
  vsn: take(asBytes(f.get("Vsn"), "Vsn")),
});

const errBody: Body<ErrResp> = (f) => ({ error: take(asString(f.get("Error"), "Error")) });

const compressBody: Body<Compress> = (f) => ({
  algo: take(asUint(f.get("Algo"), "Algo", 8)),
  buf: take(asBytes(f.get("Buf"), "Buf")),
});

const headerBody: Body<PushPullHeader> = (f) => ({
  nodes: take(asInt(f.get("Nodes"), "Nodes")),
  userStateLen: take(asInt(f.get("UserStateLen"), "UserStateLen")),
  join: take(asBool(f.get("Join"), "Join")),
});

const nodeStateBody: Body<PushNodeState> = (f) => ({
  name: take(asString(f.get("Name"), "Name")),
  addr: take(asBytes(f.get("Addr"), "Addr")),
  port: take(asUint(f.get("Port"), "Port", 16)),
  meta: take(asBytes(f.get("Meta"), "Meta")),
  incarnation: take(asUint(f.get("Incarnation"), "Incarnation", 32)),
  state: take(asInt(f.get("State"), "State")),
  vsn: take(asBytes(f.get("Vsn"), "Vsn")),
});

const userHeaderBody: Body<number> = (f) => take(asInt(f.get("UserMsgLen"), "UserMsgLen"));

function typeName(t: number): string {
  for (const [k, v] of Object.entries(MessageType)) if (v === t) return k;
  return String(t);
}

/**
 * Decodes one leaf message (type byte + body). Compound, compress and CRC
 * are not leaves: use `decodePacket`. Trailing bytes after the msgpack body
 * are ignored, as Go's decoder does.
 */
export function decodeMessage(bytes: Uint8Array): WireResult<MemberlistMessage> {
  if (bytes.length === 0) return fail("truncated", "Empty message");
  const t = bytes[0]!;
  const wrap = <T, K extends MemberlistMessage["type"]>(
    type: K,
    r: WireResult<T>,
  ): WireResult<MemberlistMessage> =>
    r.ok ? ok({ type, body: r.value } as MemberlistMessage) : r;
  switch (t) {
    case MessageType.ping:
      return wrap("ping", decodeStructBody(bytes, 1, "ping", pingBody));
    case MessageType.indirectPing:
      return wrap("indirectPing", decodeStructBody(bytes, 1, "indirectPingReq", indirectBody));
    case MessageType.ackResp:
      return wrap("ackResp", decodeStructBody(bytes, 1, "ackResp", ackBody));
    case MessageType.nackResp:
      return wrap("nackResp", decodeStructBody(bytes, 1, "nackResp", nackBody));
    case MessageType.suspect:
      return wrap("suspect", decodeStructBody(bytes, 1, "suspect", accusationBody));
    case MessageType.alive: {
      const f = readMemberFields(bytes, 1, "Node");
      if (!f) return wrap("alive", decodeAliveGeneric(bytes));
      const body: Alive = { incarnation: f.incarnation, node: f.name, addr: f.addr, port: f.port, meta: f.meta, vsn: f.vsn };
      return ok({ type: "alive", body });
    }
    case MessageType.dead:
      return wrap("dead", decodeStructBody(bytes, 1, "dead", accusationBody));
    case MessageType.err:
      return wrap("err", decodeStructBody(bytes, 1, "errResp", errBody));
    case MessageType.user:
      return ok({ type: "user", body: bytes.slice(1) });
    case MessageType.pushPull: {
      const r = decodePushPullBody(bytes, 1, { maxNodes: Number.MAX_SAFE_INTEGER });
      if (!r.ok) return r;
      return ok({ type: "pushPull", body: r.value.pushPull });
    }
    default:
      return fail("unknown_type", `Unknown or non-leaf memberlist message type ${typeName(t)}`);
  }
}

/** Decodes a `compress` message (with type byte) and returns the decompressed message. */
export function decodeCompress(bytes: Uint8Array, options: { maxBytes?: number } = {}): WireResult<Uint8Array> {
  if (bytes[0] !== MessageType.compress) return fail("bad_field", "Not a compress message");
  const r = decodeStructBody(bytes, 1, "compress", compressBody);
  if (!r.ok) return r;
  if (r.value.algo !== 0) return fail("bad_field", `Unknown compression algorithm ${r.value.algo}`);
  return lzwDecompress(r.value.buf, options);
}

export interface SplitCompound {
  parts: Uint8Array[];
  /** Parts announced but cut off by the end of the buffer. */
  truncated: number;
}

/** Splits a compound message (with its 0x07 type byte). */
export function splitCompound(bytes: Uint8Array): WireResult<SplitCompound> {
  if (bytes[0] !== MessageType.compound) return fail("bad_field", "Not a compound message");
  if (bytes.length < 2) return fail("truncated", "Missing compound length byte");
  const n = bytes[1]!;
  let off = 2;
  if (bytes.length - off < n * 2) return fail("truncated", "Truncated compound length slice");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lengths: number[] = [];
  for (let i = 0; i < n; i++) lengths.push(view.getUint16(off + i * 2));
  off += n * 2;
  const parts: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const len = lengths[i]!;
    if (bytes.length - off < len) return ok({ parts, truncated: n - i });
    parts.push(bytes.subarray(off, off + len));
    off += len;
  }
  return ok({ parts, truncated: 0 });
}

export interface DecodePacketOptions {
  /** Cap on decompressed size (default 10 MiB). */
  maxDecompressedBytes?: number;
  /** Decodes one leaf message; default `decodeMessage` (a caller may memoize it). */
  decodeLeaf?: (bytes: Uint8Array) => WireResult<MemberlistMessage>;
}

/**
 * Decodes one UDP datagram (already decrypted): optional outermost CRC, then
 * compound / compress recursively, then leaf messages. Bad parts are dropped
 * and reported in `errors`; good parts are kept.
 */
export function decodePacket(bytes: Uint8Array, options: DecodePacketOptions = {}): DecodedPacket {
  const out: DecodedPacket = { messages: [], hadCrc: false, hadCompression: false, errors: [] };
  const maxBytes = options.maxDecompressedBytes ?? 10 * 1024 * 1024;
  let buf = bytes;
  if (buf.length >= 5 && buf[0] === MessageType.hasCrc) {
    const want = new DataView(buf.buffer, buf.byteOffset, buf.byteLength).getUint32(1);
    const inner = buf.subarray(5);
    const got = crc32(inner);
    if (want !== got) {
      out.errors.push({ code: "crc", message: `CRC mismatch: header ${hex32(want)}, computed ${hex32(got)}` });
      return out;
    }
    out.hadCrc = true;
    buf = inner;
  }
  dispatch(buf, 0, out, maxBytes, options.decodeLeaf ?? decodeMessage);
  return out;
}

function hex32(n: number): string {
  return n.toString(16).padStart(8, "0");
}

function dispatch(
  buf: Uint8Array,
  depth: number,
  out: DecodedPacket,
  maxBytes: number,
  decodeLeaf: (bytes: Uint8Array) => WireResult<MemberlistMessage>,
): void {
  if (buf.length === 0) {
    out.errors.push({ code: "truncated", message: "Empty message" });
    return;
  }
  if (depth > 8) {
    out.errors.push({ code: "bad_field", message: "Messages nested deeper than 8 levels" });
    return;
  }
  const t = buf[0]!;
  if (t === MessageType.compound) {
    const r = splitCompound(buf);
    if (!r.ok) {
      out.errors.push(r.error);
      return;
    }
    if (r.value.truncated > 0) {
      out.errors.push({ code: "truncated", message: `Compound message truncated: ${r.value.truncated} parts lost` });
    }
    for (const p of r.value.parts) dispatch(p, depth + 1, out, maxBytes, decodeLeaf);
    return;
  }
  if (t === MessageType.compress) {
    const r = decodeCompress(buf, { maxBytes });
    if (!r.ok) {
      out.errors.push(r.error);
      return;
    }
    out.hadCompression = true;
    dispatch(r.value, depth + 1, out, maxBytes, decodeLeaf);
    return;
  }
  if (t === MessageType.pushPull) {
    out.errors.push({ code: "unknown_type", message: "Push/pull is not valid in a UDP packet" });
    return;
  }
  const m = decodeLeaf(buf);
  if (m.ok) out.messages.push(m.value);
  else out.errors.push(m.error);
}

// ---------------------------------------------------------------------------
// Push/pull and TCP streams

interface PushPullStep {
  pushPull: PushPull;
  /** Offset just after the user state. */
  offset: number;
}

/**
 * Parses a push/pull body starting at `offset` (just after the 0x06 byte).
 * "truncated" errors mean more bytes are needed.
 */
export function decodePushPullBody(
  bytes: Uint8Array,
  offset: number,
  limits: { maxNodes: number; decodeNodeState?: NodeStateDecoder },
): WireResult<PushPullStep> {
  const hs = decodeValue(bytes, offset);
  if (!hs.ok) return hs;
  const header = structFrom(hs.value.value, "pushPullHeader", headerBody);
  if (!header.ok) return header;
  const { nodes: count, userStateLen, join } = header.value;
  if (count < 0 || count > limits.maxNodes) return fail("bad_field", `Push/pull node count out of range: ${count}`);
  if (userStateLen < 0) return fail("bad_field", `Push/pull user state length is negative: ${userStateLen}`);
  let off = hs.value.offset;
  const nodes: PushNodeState[] = [];
  for (let i = 0; i < count; i++) {
    // Each node state takes at least one byte: fail fast when the claim cannot fit.
    if (bytes.length - off < count - i) return fail("truncated", "Push/pull node states truncated");
    if (limits.decodeNodeState) {
      const end = skipValue(bytes, off);
      if (end === -1) return fail("truncated", "Push/pull node states truncated");
      if (end < 0) return fail("bad_msgpack", `Invalid msgpack in push/pull node state at offset ${off}`);
      const n = limits.decodeNodeState(bytes, off, end);
      if (!n.ok) return n;
      nodes.push(n.value);
      off = end;
      continue;
    }
    const s = decodeValue(bytes, off);
    if (!s.ok) return s;
    const n = structFrom(s.value.value, "pushNodeState", nodeStateBody);
    if (!n.ok) return n;
    nodes.push(n.value);
    off = s.value.offset;
  }
  if (bytes.length - off < userStateLen) return fail("truncated", "Push/pull user state truncated");
  const userState = bytes.slice(off, off + userStateLen);
  return ok({ pushPull: { join, nodes, userState }, offset: off + userStateLen });
}

/**
 * Decodes the one push/pull node state in `bytes[start, end)` (as
 * decodePushNodeState would): lets a codec reuse what it decoded before,
 * since a member's entry repeats byte for byte until the member changes.
 */
export type NodeStateDecoder = (bytes: Uint8Array, start: number, end: number) => WireResult<PushNodeState>;

/** Decodes one pushNodeState value (no type byte). */
export function decodePushNodeState(bytes: Uint8Array): WireResult<PushNodeState> {
  const f = readMemberFields(bytes, 0, "Name");
  return f ? ok(f) : decodePushNodeStateGeneric(bytes);
}

/** decodePushNodeState through the general msgpack decoder only (exported for the equivalence test). */
export function decodePushNodeStateGeneric(bytes: Uint8Array): WireResult<PushNodeState> {
  return decodeStructBody(bytes, 0, "pushNodeState", nodeStateBody);
}

/** An alive message's body (after its type byte) through the general decoder only (for the equivalence test). */
export function decodeAliveGeneric(bytes: Uint8Array): WireResult<Alive> {
  return decodeStructBody(bytes, 1, "alive", aliveBody);
}

/**
 * A member's fields as Go writes them in an alive message (name key "Node")
 * or a push/pull node state ("Name", and State): a fixmap or map16 of those
 * keys only, each value a fixraw/raw16 string or bytes or an unsigned int
 * in range, read straight from the bytes (trailing bytes are ignored, as
 * the general decoder does). undefined for anything else (nil or bin
 * values, other keys, wide forms), which the general decoder then reads or
 * refuses as before. Each node decodes every member's alive and entry at
 * least once: in a 50-agent join storm the general decoder's value trees
 * for them were a visible share of the CPU (docs/performance.md).
 */
function readMemberFields(bytes: Uint8Array, pos: number, nameKey: "Node" | "Name"): PushNodeState | undefined {
  const r: ByteReader = { bytes, pos };
  const n = readHeader(r, 0x80, 0x0f, 0xde);
  if (n === undefined) return undefined;
  const f: PushNodeState = { name: "", addr: new Uint8Array(0), port: 0, meta: new Uint8Array(0), incarnation: 0, state: 0, vsn: new Uint8Array(0) };
  const keys = nameKey === "Name" ? nodeStateKeys : aliveKeys;
  for (let i = 0; i < n; i++) {
    const k = readKey(r, keys);
    if (k === memberKey.name) {
      const v = readStr(r);
      if (v === undefined) return undefined;
      f.name = v;
    } else if (k === memberKey.addr || k === memberKey.meta || k === memberKey.vsn) {
      const v = readRaw(r);
      if (v === undefined) return undefined;
      if (k === memberKey.addr) f.addr = v;
      else if (k === memberKey.meta) f.meta = v;
      else f.vsn = v;
    } else if (k === memberKey.port || k === memberKey.incarnation || k === memberKey.state) {
      const v = readUint(r); // at most 2^32 - 1: in range for Incarnation (uint32) and State (int)
      if (v === undefined) return undefined;
      if (k === memberKey.port) {
        if (v > 0xffff) return undefined;
        f.port = v;
      } else if (k === memberKey.incarnation) f.incarnation = v;
      else f.state = v;
    } else {
      return undefined;
    }
  }
  return f;
}

// The keys readMemberFields knows, by index (an alive has no State).
const memberKey = { name: 0, addr: 1, port: 2, meta: 3, incarnation: 4, vsn: 5, state: 6 } as const;
const nodeStateKeys = keySet(["Name", "Addr", "Port", "Meta", "Incarnation", "Vsn", "State"]);
const aliveKeys = keySet(["Node", "Addr", "Port", "Meta", "Incarnation", "Vsn"]);

/** Decodes 0x06 + pushPullHeader (just the header). */
export function decodePushPullHeader(bytes: Uint8Array): WireResult<PushPullHeader> {
  if (bytes[0] !== MessageType.pushPull) return fail("bad_field", "Not a push/pull message");
  return decodeStructBody(bytes, 1, "pushPullHeader", headerBody);
}

export type StreamParse =
  | { status: "more" }
  | { status: "ok"; message: StreamMessage; consumed: number; compressed: boolean }
  | { status: "error"; error: WireError };

export interface StreamParseOptions {
  /** Cap on decompressed stream payload size (default 10 MiB). */
  maxBytes?: number;
  /** Cap on push/pull node count (default 100000). */
  maxNodes?: number;
  /** Decodes each push/pull node state (default: decodePushNodeState on its bytes). */
  decodeNodeState?: NodeStateDecoder;
}

/**
 * Incrementally parses one plaintext stream message (after decryption):
 * `{status: "more"}` until enough bytes have arrived. Accepts types 6
 * (push/pull), 0 (ping), 8 (user), 2 (ack), 13 (err), optionally wrapped in
 * compress (type 9).
 */
export function parseStream(buf: Uint8Array, options: StreamParseOptions = {}): StreamParse {
  const maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
  if (buf.length === 0) return { status: "more" };
  if (buf[0] === MessageType.compress) {
    const step = decodeValue(buf, 1);
    if (!step.ok) return step.error.code === "truncated" ? { status: "more" } : { status: "error", error: step.error };
    const c = structFrom(step.value.value, "compress", compressBody);
    if (!c.ok) return { status: "error", error: c.error };
    if (c.value.algo !== 0) {
      return { status: "error", error: { code: "bad_field", message: `Unknown compression algorithm ${c.value.algo}` } };
    }
    const plain = lzwDecompress(c.value.buf, { maxBytes });
    if (!plain.ok) return { status: "error", error: plain.error };
    const inner = parseStreamInner(plain.value, options);
    if (inner.status === "more") {
      return { status: "error", error: { code: "truncated", message: "Compressed stream message is incomplete" } };
    }
    if (inner.status === "error") return inner;
    return { status: "ok", message: inner.message, consumed: step.value.offset, compressed: true };
  }
  const r = parseStreamInner(buf, options);
  const over = (r.status === "ok" && r.consumed > maxBytes) || (r.status === "more" && buf.length > maxBytes);
  if (over) return { status: "error", error: { code: "too_large", message: `Stream message exceeds ${maxBytes} bytes` } };
  return r;
}

function parseStreamInner(buf: Uint8Array, options: StreamParseOptions): StreamParse {
  const more = (e: WireError): StreamParse => (e.code === "truncated" ? { status: "more" } : { status: "error", error: e });
  const done = (message: StreamMessage, consumed: number): StreamParse => ({
    status: "ok",
    message,
    consumed,
    compressed: false,
  });
  const t = buf[0]!;
  switch (t) {
    case MessageType.pushPull: {
      const r = decodePushPullBody(buf, 1, { maxNodes: options.maxNodes ?? 100_000, decodeNodeState: options.decodeNodeState });
      if (!r.ok) return more(r.error);
      return done({ type: "pushPull", body: r.value.pushPull }, r.value.offset);
    }
    case MessageType.ping:
    case MessageType.ackResp:
    case MessageType.err: {
      const step = decodeValue(buf, 1);
      if (!step.ok) return more(step.error);
      if (t === MessageType.ping) {
        const r = structFrom(step.value.value, "ping", pingBody);
        return r.ok ? done({ type: "ping", body: r.value }, step.value.offset) : { status: "error", error: r.error };
      }
      if (t === MessageType.ackResp) {
        const r = structFrom(step.value.value, "ackResp", ackBody);
        return r.ok ? done({ type: "ackResp", body: r.value }, step.value.offset) : { status: "error", error: r.error };
      }
      const r = structFrom(step.value.value, "errResp", errBody);
      return r.ok ? done({ type: "err", body: r.value }, step.value.offset) : { status: "error", error: r.error };
    }
    case MessageType.user: {
      const step = decodeValue(buf, 1);
      if (!step.ok) return more(step.error);
      const len = structFrom(step.value.value, "userMsgHeader", userHeaderBody);
      if (!len.ok) return { status: "error", error: len.error };
      if (len.value < 0) return { status: "error", error: { code: "bad_field", message: "Negative UserMsgLen" } };
      const end = step.value.offset + len.value;
      if (buf.length < end) return { status: "more" };
      return done({ type: "user", body: buf.slice(step.value.offset, end) }, end);
    }
    default:
      return {
        status: "error",
        error: { code: "unknown_type", message: `Unexpected stream message type ${typeName(t)}` },
      };
  }
}

export type StreamMeasure =
  | { status: "more" }
  | { status: "ok"; consumed: number }
  | { status: "error"; error: WireError };

/**
 * Where the stream message at the start of `buf` ends, as `parseStream`
 * would find it, without decoding (or decompressing) the message: a
 * transport frames a message with this and hands it on to be decoded once.
 * Errors: an unknown message type, a byte that starts no msgpack value, a
 * bad push/pull or user header, or more than `maxBytes`; anything else
 * wrong inside the message shows when it is decoded.
 */
export function measureStream(buf: Uint8Array, options: StreamParseOptions = {}): StreamMeasure {
  const maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
  const r = measureStreamInner(buf, options.maxNodes ?? 100_000);
  const over = (r.status === "ok" && r.consumed > maxBytes) || (r.status === "more" && buf.length > maxBytes);
  if (over) return { status: "error", error: { code: "too_large", message: `Stream message exceeds ${maxBytes} bytes` } };
  return r;
}

function measureStreamInner(buf: Uint8Array, maxNodes: number): StreamMeasure {
  if (buf.length === 0) return { status: "more" };
  const skipped = (end: number): StreamMeasure =>
    end === -1 ? { status: "more" }
    : end < 0 ? { status: "error", error: { code: "bad_msgpack", message: "Invalid msgpack in stream message" } }
    : { status: "ok", consumed: end };
  const t = buf[0]!;
  switch (t) {
    case MessageType.compress:
    case MessageType.ping:
    case MessageType.ackResp:
    case MessageType.err:
      return skipped(skipValue(buf, 1));
    case MessageType.pushPull: {
      const hs = decodeValue(buf, 1);
      if (!hs.ok) return hs.error.code === "truncated" ? { status: "more" } : { status: "error", error: hs.error };
      const header = structFrom(hs.value.value, "pushPullHeader", headerBody);
      if (!header.ok) return { status: "error", error: header.error };
      const { nodes: count, userStateLen } = header.value;
      if (count < 0 || count > maxNodes) return { status: "error", error: { code: "bad_field", message: `Push/pull node count out of range: ${count}` } };
      if (userStateLen < 0) return { status: "error", error: { code: "bad_field", message: `Push/pull user state length is negative: ${userStateLen}` } };
      let off = hs.value.offset;
      for (let i = 0; i < count; i++) {
        off = skipValue(buf, off);
        if (off < 0) return skipped(off);
      }
      return buf.length - off < userStateLen ? { status: "more" } : { status: "ok", consumed: off + userStateLen };
    }
    case MessageType.user: {
      const step = decodeValue(buf, 1);
      if (!step.ok) return step.error.code === "truncated" ? { status: "more" } : { status: "error", error: step.error };
      const len = structFrom(step.value.value, "userMsgHeader", userHeaderBody);
      if (!len.ok) return { status: "error", error: len.error };
      if (len.value < 0) return { status: "error", error: { code: "bad_field", message: "Negative UserMsgLen" } };
      const end = step.value.offset + len.value;
      return buf.length < end ? { status: "more" } : { status: "ok", consumed: end };
    }
    default:
      return { status: "error", error: { code: "unknown_type", message: `Unexpected stream message type ${typeName(t)}` } };
  }
}

/** Encodes a stream payload: the message, wrapped in compress when asked (always, even if larger). */
export function encodeStream(message: Uint8Array, options: { compress?: boolean } = {}): Uint8Array {
  return options.compress ? encodeCompress(message) : message;
}

/** Encodes a stream-level message (push/pull, ping, ack, err, user). */
export function encodeStreamMessage(m: StreamMessage): Uint8Array {
  switch (m.type) {
    case "pushPull":
      return encodePushPull(m.body);
    case "ping":
      return encodePing(m.body);
    case "ackResp":
      return encodeAck(m.body);
    case "err":
      return encodeErr(m.body);
    case "user":
      return encodeUserStream(m.body);
  }
}
