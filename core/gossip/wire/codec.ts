// The bridge between the protocol core's message values (swim.ts
// SwimMessage<T>, serf.ts SerfTypes: "ip:port" strings, tags as records,
// decoded Serf messages) and the bytes on the wire. Implements driver.ts
// GossipCodec<T, Uint8Array>:
//
//   const codec = serfWireCodec({ compress: true });
//   new GossipDriver({ core, clock, transport, codec, logger, ... });
//   new SwimCore({ ..., measure: codec.measure })   // exact wire sizes
//
// UDP: a message (or compound) is encoded, then LZW-compressed when that is
// strictly smaller (memberlist's rule); no CRC is added (always accepted).
// TCP: the message is wrapped in `compress` whenever compression is on, as
// Go does. Decoding accepts everything Go sends (CRC, compound, compress).
// Never throws: bad input becomes `{ ok: false }` or is dropped and reported
// through `onWireError`.

import type { DecodeResult, GossipCodec } from "../driver.ts";
import type { AliveMsg, GossipTypes, NodeStateName, PushNodeState as CorePushNodeState, SwimMessage } from "../swim.ts";
import type { SerfMsg, SerfQuery, SerfTypes, Tags } from "../serf.ts";
import type { Coordinate } from "../coordinate.ts";
import type {
  MemberlistMessage,
  MessageQueryResponse,
  PushNodeState,
  QueryFilter,
  StreamMessage,
  WireError,
  WireResult,
} from "./messages.ts";
import { MessageType } from "./messages.ts";
import { addrToString, parseAddr } from "./addr.ts";
import { byteKey } from "./byte_key.ts";
import {
  decodeMessage,
  decodePacket,
  decodePushNodeState,
  encodeAck,
  encodeAlive,
  encodeCompound,
  encodeDead,
  encodeErr,
  encodeIndirectPing,
  encodeNack,
  encodePacket,
  encodePing,
  encodePushNodeState,
  encodePushPullEncoded,
  encodeStream,
  encodeSuspect,
  encodeUser,
  encodeUserStream,
  parseStream,
} from "./memberlist.ts";
import {
  decodeCoordinatePayload,
  decodeQueryFilter,
  decodeSerfMessage,
  decodeTags,
  encodeCoordinatePayload,
  encodeQueryFilter,
  encodeRelay,
  encodeSerfMessage,
  encodeTags,
} from "./serf.ts";

/** How the layer above's payloads become bytes and back. */
export interface PayloadAdapter<T extends GossipTypes> {
  encodeUser(u: T["user"]): Uint8Array;
  decodeUser(bytes: Uint8Array): WireResult<T["user"]>;
  encodeState(s: T["state"]): Uint8Array;
  decodeState(bytes: Uint8Array): WireResult<T["state"]>;
  encodeMeta(m: T["meta"]): Uint8Array;
  decodeMeta(bytes: Uint8Array): WireResult<T["meta"]>;
  encodeAck(a: T["ack"]): Uint8Array;
  decodeAck(bytes: Uint8Array): WireResult<T["ack"]>;
}

export interface WireCodecOptions {
  /** LZW compression (UDP when smaller, TCP always); default true like serf. */
  compress?: boolean;
  /** Told about every dropped part of a packet or stream (count/log it). */
  onWireError?: (error: WireError) => void;
  /** Cap on decompressed/stream sizes (default 10 MiB). */
  maxBytes?: number;
}

export interface WireCodec<T extends GossipTypes> extends GossipCodec<T, Uint8Array> {
  /** Exact encoded size of one message (for SwimCore's `measure`). */
  measure(msg: SwimMessage<T>): number;
}

const stateNames: readonly NodeStateName[] = ["alive", "suspect", "dead", "left"];

class CodecError extends Error {}

function must<T>(r: WireResult<T>): T {
  if (!r.ok) throw new CodecError(r.error.message);
  return r.value;
}

function addrBytes(addr: string): { ip: Uint8Array; port: number } {
  const a = parseAddr(addr);
  if (!a) throw new CodecError(`Address "${addr}" is not "ip:port"`);
  return a;
}

/** A codec for any payload types, given how to (de)serialise them. */
export function createWireCodec<T extends GossipTypes>(
  adapter: PayloadAdapter<T>,
  options: WireCodecOptions = {},
): WireCodec<T> {
  const compress = options.compress ?? true;
  const maxBytes = options.maxBytes ?? 10 * 1024 * 1024;
  const report = options.onWireError ?? (() => {});
  // A broadcast (alive, suspect, dead, the layer above's user messages) is measured once and
  // sent up to retransmitLimit times, unchanged: encode each message object once. Message
  // values are never mutated after they are handed to the codec.
  const encoded = new WeakMap<object, Uint8Array>();
  // Most alive messages and push/pull entries repeat a member's metadata byte for byte:
  // decode it once per member and hand out the same (frozen) value while it stays the same.
  const metaByNode = new Map<string, { bytes: Uint8Array; meta: T["meta"] }>();
  const metaCacheLimit = 4096;

  // A broadcast reaches each node many times (every node that learns it sends it retransmitLimit
  // times), byte for byte the same: decode each distinct alive/suspect/dead/user part once, and
  // hand out the same message value again (values are never mutated, see above).
  const leafCache = new Map<string, MemberlistMessage>();
  const leafCacheLimit = 2048;
  const fromWireCache = new WeakMap<MemberlistMessage, SwimMessage<T>>();
  // A broadcast we pass on is the one we received (memberlist re-encodes the same struct, Serf
  // re-queues the same bytes): keep each decoded part's bytes and send those.
  const leafBytes = new WeakMap<MemberlistMessage, Uint8Array>();
  // Each node also builds alive messages of its own (members merged from a push/pull, our own),
  // mostly repeating one it has already seen byte for byte: one encoding per member state.
  const aliveEntries = new Map<string, { msg: AliveMsg<T["meta"]>; bytes: Uint8Array }>();
  const aliveEntryLimit = 4096;

  function aliveBytes(msg: AliveMsg<T["meta"]>, stream: boolean): Uint8Array {
    const c = aliveEntries.get(msg.node);
    if (c && sameAlive(c.msg, msg)) return c.bytes;
    const bytes = leafOnce(msg, stream);
    noteAlive(msg, bytes);
    return bytes;
  }

  function noteAlive(msg: AliveMsg<T["meta"]>, bytes: Uint8Array): void {
    if (!aliveEntries.has(msg.node) && aliveEntries.size >= aliveEntryLimit) aliveEntries.clear();
    aliveEntries.set(msg.node, { msg, bytes });
  }

  // Every push/pull (a join, its reply, a periodic or repair exchange) lists every member, and a
  // member's entry stays the same until its incarnation, state, address or metadata changes: a
  // join target answering a burst of joins re-sent the same entries in each reply. Keep each
  // member's encoded entry (the core's values are never mutated: a change is a new value).
  const nodeEntries = new Map<string, {
    addr: string;
    incarnation: number;
    state: NodeStateName;
    meta: T["meta"];
    vsn: readonly number[];
    bytes: Uint8Array;
  }>();
  const nodeEntryLimit = 4096;

  // The receiving side of the same: a push/pull reply repeats every entry the member's last
  // exchange carried, and during a join storm each node pulls several (its join, then repairs).
  // Each distinct entry (by its bytes) is decoded and converted once; the values are shared
  // like every decoded message (never mutated).
  const nodeStates = new Map<string, PushNodeState>();
  const nodeStateLimit = 4096;
  const coreNodeStates = new WeakMap<PushNodeState, CorePushNodeState<T["meta"]>>();

  function decodeNodeState(bytes: Uint8Array, start: number, end: number): WireResult<PushNodeState> {
    const key = byteKey(bytes.subarray(start, end));
    const hit = nodeStates.get(key);
    if (hit) return { ok: true, value: hit };
    const r = decodePushNodeState(bytes.slice(start, end)); // the cached value keeps views of its own bytes, not of the stream
    if (r.ok) {
      if (nodeStates.size >= nodeStateLimit) nodeStates.clear();
      nodeStates.set(key, r.value);
    }
    return r;
  }

  /** A push/pull entry as the core takes it, or undefined (reported each time) when it cannot be. */
  function coreNodeState(n: PushNodeState): CorePushNodeState<T["meta"]> | undefined {
    const hit = coreNodeStates.get(n);
    if (hit) return hit;
    const state = stateNames[n.state];
    const meta = decodeMetaOf(n.name, n.meta);
    if (state === undefined || !meta.ok) {
      report(meta.ok ? { code: "bad_field", message: `Unknown node state ${n.state}` } : meta.error);
      return undefined;
    }
    const out: CorePushNodeState<T["meta"]> = {
      name: n.name,
      addr: addrToString(n.addr, n.port),
      incarnation: n.incarnation,
      meta: meta.value,
      state,
      vsn: [...n.vsn],
    };
    coreNodeStates.set(n, out);
    return out;
  }

  function nodeEntry(n: CorePushNodeState<T["meta"]>): Uint8Array {
    const c = nodeEntries.get(n.name);
    if (c && c.addr === n.addr && c.incarnation === n.incarnation && c.state === n.state && c.meta === n.meta && c.vsn === n.vsn) {
      return c.bytes;
    }
    const a = addrBytes(n.addr);
    const bytes = encodePushNodeState({
      name: n.name,
      addr: a.ip,
      port: a.port,
      meta: adapter.encodeMeta(n.meta),
      incarnation: n.incarnation,
      state: stateNames.indexOf(n.state),
      vsn: Uint8Array.from(n.vsn),
    });
    if (!c && nodeEntries.size >= nodeEntryLimit) nodeEntries.clear();
    nodeEntries.set(n.name, { addr: n.addr, incarnation: n.incarnation, state: n.state, meta: n.meta, vsn: n.vsn, bytes });
    return bytes;
  }

  function decodeLeaf(bytes: Uint8Array): WireResult<MemberlistMessage> {
    const t = bytes[0];
    if (t !== MessageType.alive && t !== MessageType.suspect && t !== MessageType.dead && t !== MessageType.user) {
      return decodeMessage(bytes);
    }
    const key = byteKey(bytes);
    const hit = leafCache.get(key);
    if (hit) return { ok: true, value: hit };
    const r = decodeMessage(bytes);
    if (r.ok) {
      if (leafCache.size >= leafCacheLimit) leafCache.clear();
      leafCache.set(key, r.value);
      leafBytes.set(r.value, bytes); // a view, like the message's own fields: no small buffer of its own
    }
    return r;
  }

  function fromWireCached(m: MemberlistMessage): SwimMessage<T> | undefined {
    const hit = fromWireCache.get(m);
    if (hit) return hit;
    const out = fromWire(m);
    if (out && (m.type === "alive" || m.type === "suspect" || m.type === "dead" || m.type === "user")) {
      fromWireCache.set(m, out);
      const raw = leafBytes.get(m);
      if (raw && out.type === "user") {
        if (typeof out.msg === "object" && out.msg !== null) encoded.set(out.msg, raw);
      } else if (raw) {
        encoded.set(out, raw);
        if (out.type === "alive") noteAlive(out, raw);
      }
    }
    return out;
  }

  function decodeMetaOf(node: string, bytes: Uint8Array): WireResult<T["meta"]> {
    const hit = metaByNode.get(node);
    if (hit && sameBytes(hit.bytes, bytes)) return { ok: true, value: hit.meta };
    const r = adapter.decodeMeta(bytes);
    if (!r.ok) return r;
    const v: unknown = r.value;
    const meta = typeof v === "object" && v !== null && !ArrayBuffer.isView(v) ? Object.freeze(r.value) : r.value;
    if (!hit && metaByNode.size >= metaCacheLimit) metaByNode.clear();
    metaByNode.set(node, { bytes: bytes.slice(), meta });
    return { ok: true, value: meta };
  }

  function leaf(msg: SwimMessage<T>, stream: boolean): Uint8Array {
    switch (msg.type) {
      case "alive":
      case "suspect":
      case "dead": {
        let bytes = encoded.get(msg);
        if (!bytes) {
          bytes = msg.type === "alive" ? aliveBytes(msg, stream) : leafOnce(msg, stream);
          encoded.set(msg, bytes);
        }
        return bytes;
      }
      case "user": {
        const key = msg.msg;
        if (stream || typeof key !== "object" || key === null) return leafOnce(msg, stream);
        let bytes = encoded.get(key);
        if (!bytes) {
          bytes = leafOnce(msg, stream);
          encoded.set(key, bytes);
        }
        return bytes;
      }
      default:
        return leafOnce(msg, stream);
    }
  }

  function leafOnce(msg: SwimMessage<T>, stream: boolean): Uint8Array {
    switch (msg.type) {
      case "ping": {
        const src = msg.sourceAddr ? addrBytes(msg.sourceAddr) : undefined;
        return encodePing({
          seqNo: msg.seqNo,
          node: msg.node,
          sourceAddr: src?.ip,
          sourcePort: src?.port,
          sourceNode: msg.sourceNode,
        });
      }
      case "indirectPing": {
        const target = addrBytes(msg.target);
        const src = msg.sourceAddr ? addrBytes(msg.sourceAddr) : undefined;
        return encodeIndirectPing({
          seqNo: msg.seqNo,
          target: target.ip,
          port: target.port,
          node: msg.node,
          nack: msg.nack,
          sourceAddr: src?.ip,
          sourcePort: src?.port,
          sourceNode: msg.sourceNode,
        });
      }
      case "ack":
        return encodeAck({
          seqNo: msg.seqNo,
          payload: msg.payload === undefined || stream ? null : adapter.encodeAck(msg.payload),
        });
      case "nack":
        return encodeNack({ seqNo: msg.seqNo });
      case "alive": {
        const a = addrBytes(msg.addr);
        return encodeAlive({
          incarnation: msg.incarnation,
          node: msg.node,
          addr: a.ip,
          port: a.port,
          meta: adapter.encodeMeta(msg.meta),
          vsn: Uint8Array.from(msg.vsn),
        });
      }
      case "suspect":
        return encodeSuspect({ incarnation: msg.incarnation, node: msg.node, from: msg.from });
      case "dead":
        return encodeDead({ incarnation: msg.incarnation, node: msg.node, from: msg.from });
      case "user": {
        const bytes = adapter.encodeUser(msg.msg);
        return stream ? encodeUserStream(bytes) : encodeUser(bytes);
      }
      case "pushPull":
        return encodePushPullEncoded({
          join: msg.join,
          nodes: msg.nodes.map(nodeEntry),
          userState: msg.userState === undefined ? new Uint8Array(0) : adapter.encodeState(msg.userState),
        });
      case "err":
        return encodeErr({ error: msg.error });
      case "compound":
        return encodeCompound(msg.parts.map((p) => leaf(p, stream)));
    }
  }

  function fromWire(m: MemberlistMessage | StreamMessage): SwimMessage<T> | undefined {
    switch (m.type) {
      case "ping": {
        const b = m.body;
        const out: SwimMessage<T> = { type: "ping", seqNo: b.seqNo, node: b.node };
        if (b.sourceAddr && b.sourcePort) out.sourceAddr = addrToString(b.sourceAddr, b.sourcePort);
        if (b.sourceNode) out.sourceNode = b.sourceNode;
        return out;
      }
      case "indirectPing": {
        const b = m.body;
        const out: SwimMessage<T> = {
          type: "indirectPing",
          seqNo: b.seqNo,
          node: b.node,
          target: addrToString(b.target, b.port),
          nack: b.nack,
        };
        if (b.sourceAddr && b.sourcePort) out.sourceAddr = addrToString(b.sourceAddr, b.sourcePort);
        if (b.sourceNode) out.sourceNode = b.sourceNode;
        return out;
      }
      case "ackResp": {
        const out: SwimMessage<T> = { type: "ack", seqNo: m.body.seqNo };
        const p = m.body.payload;
        if (p && p.length > 0) {
          const a = adapter.decodeAck(p);
          if (a.ok) out.payload = a.value;
          else report(a.error); // Go logs and ignores a bad ack payload
        }
        return out;
      }
      case "nackResp":
        return { type: "nack", seqNo: m.body.seqNo };
      case "suspect":
        return { type: "suspect", ...m.body };
      case "dead":
        return { type: "dead", ...m.body };
      case "alive": {
        const b = m.body;
        const meta = decodeMetaOf(b.node, b.meta);
        if (!meta.ok) {
          report(meta.error);
          return undefined;
        }
        return {
          type: "alive",
          node: b.node,
          addr: addrToString(b.addr, b.port),
          incarnation: b.incarnation,
          meta: meta.value,
          vsn: [...b.vsn],
        };
      }
      case "user": {
        const u = adapter.decodeUser(m.body);
        if (!u.ok) {
          report(u.error);
          return undefined;
        }
        return { type: "user", msg: u.value };
      }
      case "pushPull": {
        const nodes: CorePushNodeState<T["meta"]>[] = [];
        for (const n of m.body.nodes) {
          const c = coreNodeState(n);
          if (c) nodes.push(c);
        }
        const out: SwimMessage<T> = { type: "pushPull", join: m.body.join, nodes };
        if (m.body.userState.length > 0) {
          const s = adapter.decodeState(m.body.userState);
          if (s.ok) out.userState = s.value;
          else report(s.error);
        }
        return out;
      }
      case "err":
        return { type: "err", error: m.body.error };
    }
  }

  function encode(msg: SwimMessage<T>, opts: { stream: boolean }): Uint8Array {
    const bytes = leaf(msg, opts.stream);
    if (opts.stream) return encodeStream(bytes, { compress });
    return encodePacket([bytes], { compress });
  }

  return {
    encode(msg, opts) {
      try {
        return encode(msg, opts);
      } catch (err) {
        // Only our own bad values get here (e.g. a non-IP address): send an
        // errResp-shaped message rather than throwing into the driver.
        report({ code: "encode", message: err instanceof Error ? err.message : String(err) });
        return encodeErr({ error: "encode failed" });
      }
    },
    decode(payload, opts): DecodeResult<T> {
      try {
        if (opts.stream) {
          const r = parseStream(payload, { maxBytes, decodeNodeState });
          if (r.status === "more") return { ok: false, error: "Stream message is incomplete" };
          if (r.status === "error") return { ok: false, error: r.error.message };
          const m = fromWire(r.message);
          return m ? { ok: true, msgs: [m] } : { ok: false, error: `Undecodable ${r.message.type} payload` };
        }
        const pkt = decodePacket(payload, { maxDecompressedBytes: maxBytes, decodeLeaf });
        for (const e of pkt.errors) report(e);
        const msgs: SwimMessage<T>[] = [];
        for (const wm of pkt.messages) {
          const m = fromWireCached(wm);
          if (m) msgs.push(m);
        }
        if (msgs.length === 0) return { ok: false, error: pkt.errors[0]?.message ?? "No decodable message" };
        return { ok: true, msgs };
      } catch (err) {
        return { ok: false, error: `Decode failure: ${err instanceof Error ? err.message : String(err)}` };
      }
    },
    measure(msg) {
      try {
        return leaf(msg, false).length;
      } catch {
        return 64;
      }
    },
  };
}

/** memberlist without Serf: every payload is opaque bytes. */
export function bytesWireCodec(options: WireCodecOptions = {}): WireCodec<{
  user: Uint8Array;
  state: Uint8Array;
  meta: Uint8Array;
  ack: Uint8Array;
}> {
  const id = (b: Uint8Array): Uint8Array => b;
  const okId = (b: Uint8Array): WireResult<Uint8Array> => ({ ok: true, value: b });
  return createWireCodec(
    {
      encodeUser: id,
      decodeUser: okId,
      encodeState: id,
      decodeState: okId,
      encodeMeta: id,
      decodeMeta: okId,
      encodeAck: id,
      decodeAck: okId,
    },
    options,
  );
}

/** The same alive message (the meta by identity: decoded metadata is shared, see decodeMetaOf). */
function sameAlive<M>(a: AliveMsg<M>, b: AliveMsg<M>): boolean {
  if (a.incarnation !== b.incarnation || a.addr !== b.addr || a.meta !== b.meta || a.node !== b.node) return false;
  if (a.vsn === b.vsn) return true;
  if (a.vsn.length !== b.vsn.length) return false;
  for (let i = 0; i < a.vsn.length; i++) if (a.vsn[i] !== b.vsn[i]) return false;
  return true;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// ---------------------------------------------------------------------------
// Serf payloads

function tagsToMap(tags: Tags): Map<string, string> {
  return new Map(Object.entries(tags));
}

function mapToTags(m: Map<string, string>): Tags {
  return Object.fromEntries(m) as Tags;
}

function encodeSerfMsg(m: SerfMsg): Uint8Array {
  switch (m.type) {
    case "join":
    case "leave":
    case "userEvent":
    case "queryResponse":
      return encodeSerfMessage(m); // same shapes as the wire SerfMessage
    case "query": {
      const q = m.body;
      const a = addrBytes(q.addr);
      return encodeSerfMessage({
        type: "query",
        body: {
          lTime: q.lTime,
          id: q.id,
          addr: a.ip,
          port: a.port,
          sourceNode: q.sourceNode,
          filters: q.filters.length === 0 ? null : q.filters.map(encodeQueryFilter),
          flags: q.flags,
          relayFactor: q.relayFactor,
          timeout: Math.round(q.timeoutMs * 1e6),
          name: q.name,
          payload: q.payload,
        },
      });
    }
    case "relay": {
      const a = addrBytes(m.destAddr);
      return encodeRelay(
        { destAddr: { ip: a.ip, port: a.port, zone: "" }, destName: m.destName },
        encodeSerfMessage({ type: "queryResponse", body: m.inner }),
      );
    }
  }
}

function decodeSerfMsg(bytes: Uint8Array): WireResult<SerfMsg> {
  const r = decodeSerfMessage(bytes);
  if (!r.ok) return r;
  const m = r.value;
  switch (m.type) {
    case "join":
    case "leave":
    case "userEvent":
    case "queryResponse":
      return { ok: true, value: m as SerfMsg };
    case "query": {
      const q = m.body;
      const filters: QueryFilter[] = [];
      for (const f of q.filters ?? []) {
        const d = decodeQueryFilter(f);
        // A malformed filter means "not for us" in Go: an empty node list never matches.
        filters.push(d.ok ? d.value : { type: "node", nodes: [] });
      }
      const body: SerfQuery = {
        lTime: q.lTime,
        id: q.id,
        addr: addrToString(q.addr, q.port),
        sourceNode: q.sourceNode,
        filters,
        flags: q.flags,
        relayFactor: q.relayFactor,
        timeoutMs: q.timeout / 1e6,
        name: q.name,
        payload: q.payload,
      };
      return { ok: true, value: { type: "query", body } };
    }
    case "relay": {
      const inner = decodeSerfMessage(m.inner);
      if (!inner.ok) return inner;
      if (inner.value.type !== "queryResponse") {
        return { ok: false, error: { code: "bad_field", message: `Relay carries a ${inner.value.type}, not a query response` } };
      }
      const body: MessageQueryResponse = inner.value.body;
      return {
        ok: true,
        value: {
          type: "relay",
          destAddr: addrToString(m.header.destAddr.ip, m.header.destAddr.port),
          destName: m.header.destName,
          inner: body,
        },
      };
    }
    default:
      return { ok: false, error: { code: "unknown_type", message: `Serf ${m.type} is not a gossip message` } };
  }
}

/** The codec a Serf-speaking node uses (tags in Meta, coordinates in acks). */
export function serfWireCodec(options: WireCodecOptions = {}): WireCodec<SerfTypes> {
  const metaBytes = new WeakMap<Tags, Uint8Array>();
  return createWireCodec<SerfTypes>(
    {
      encodeUser: encodeSerfMsg,
      decodeUser: decodeSerfMsg,
      encodeState: (s) => encodeSerfMessage({ type: "pushPull", body: s }),
      decodeState: (bytes) => {
        const r = decodeSerfMessage(bytes);
        if (!r.ok) return r;
        if (r.value.type !== "pushPull") {
          return { ok: false, error: { code: "bad_field", message: `User state is a Serf ${r.value.type}` } };
        }
        return { ok: true, value: r.value.body };
      },
      encodeMeta: (tags) => {
        // Our own tags and every member's go out in each alive and push/pull: encode a tags object once.
        let bytes = metaBytes.get(tags);
        if (!bytes) {
          bytes = encodeTags(tagsToMap(tags));
          metaBytes.set(tags, bytes);
        }
        return bytes;
      },
      decodeMeta: (meta) => {
        const r = decodeTags(meta);
        if (!r.ok) return r;
        // Forwarding these tags (alive broadcasts, push/pull) sends the bytes they came in.
        const tags = mapToTags(r.value);
        metaBytes.set(tags, meta.slice());
        return { ok: true, value: tags };
      },
      encodeAck: (c: Coordinate) =>
        encodeCoordinatePayload({ vec: [...c.vec], error: c.error, adjustment: c.adjustment, height: c.height }),
      decodeAck: (bytes) => decodeCoordinatePayload(bytes),
    },
    options,
  );
}
