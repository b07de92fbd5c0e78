// Serf messages carried in memberlist user messages and push/pull user state
// (docs/gossip-wire.md section 8): encoders matching Go's bytes, decoders that
// never throw, plus tags in memberlist Meta (8.3), query filters (8.6) and
// Vivaldi coordinates in ack payloads (8.9).

import type {
  Coordinate,
  KeyRequest,
  MessageJoin,
  MessageLeave,
  MessagePushPull,
  MessageQuery,
  MessageQueryResponse,
  MessageUserEvent,
  NodeKeyResponse,
  QueryFilter,
  RelayHeader,
  SerfMember,
  SerfMessage,
  UserEventCollection,
  UserEventData,
  WireResult,
} from "./messages.ts";
import { FilterType, pingPayloadVersion, SerfMessageType, tagMagicByte } from "./messages.ts";
import {
  asArray,
  asBool,
  asBytes,
  asBytesOrNull,
  asFloat,
  asInt,
  asMapEntries,
  asString,
  asStruct,
  asUint,
  decodeValue,
  decodeWhole,
  fail,
  guarded,
  MpWriter,
  ok,
  take,
  textOf,
} from "./msgpack_go.ts";
import type { MpValue, StructFields } from "./msgpack_go.ts";
import { readHeader, readStr, readUint } from "./byte_reader.ts";
import type { ByteReader } from "./byte_reader.ts";

// ---------------------------------------------------------------------------
// Encoders (each returns serf type byte + body)

function withType(type: number, build: (w: MpWriter) => void): Uint8Array {
  const w = new MpWriter();
  w.byte(type);
  build(w);
  return w.bytes();
}

function writeJoin(w: MpWriter, m: MessageJoin): void {
  w.struct({ LTime: (w) => w.int(m.lTime), Node: (w) => w.str(m.node) });
}

function writeLeave(w: MpWriter, m: MessageLeave): void {
  w.struct({ LTime: (w) => w.int(m.lTime), Node: (w) => w.str(m.node), Prune: (w) => w.bool(m.prune) });
}

function writeUserEvent(w: MpWriter, m: MessageUserEvent): void {
  w.struct({
    LTime: (w) => w.int(m.lTime),
    Name: (w) => w.str(m.name),
    Payload: (w) => w.rawOrNil(m.payload.length === 0 ? null : m.payload),
    CC: (w) => w.bool(m.cc),
  });
}

function writeQuery(w: MpWriter, m: MessageQuery): void {
  w.struct({
    LTime: (w) => w.int(m.lTime),
    ID: (w) => w.int(m.id),
    Addr: (w) => w.rawOrNil(m.addr.length === 0 ? null : m.addr),
    Port: (w) => w.int(m.port),
    SourceNode: (w) => w.str(m.sourceNode),
    Filters: (w) => {
      if (m.filters === null) return w.nil();
      w.arrayHeader(m.filters.length);
      for (const f of m.filters) w.raw(f);
      return w;
    },
    Flags: (w) => w.int(m.flags),
    RelayFactor: (w) => w.int(m.relayFactor),
    Timeout: (w) => w.int(m.timeout),
    Name: (w) => w.str(m.name),
    Payload: (w) => w.rawOrNil(m.payload),
  });
}

function writeQueryResponse(w: MpWriter, m: MessageQueryResponse): void {
  w.struct({
    LTime: (w) => w.int(m.lTime),
    ID: (w) => w.int(m.id),
    From: (w) => w.str(m.from),
    Flags: (w) => w.int(m.flags),
    Payload: (w) => w.rawOrNil(m.payload),
  });
}

function writeUserEvents(w: MpWriter, c: UserEventCollection | null): void {
  if (c === null) {
    w.nil();
    return;
  }
  w.struct({
    LTime: (w) => w.int(c.lTime),
    Events: (w) => {
      w.arrayHeader(c.events.length);
      for (const e of c.events) {
        w.struct({ Name: (w) => w.str(e.name), Payload: (w) => w.rawOrNil(e.payload.length === 0 ? null : e.payload) });
      }
      return w;
    },
  });
}

function writePushPull(w: MpWriter, m: MessagePushPull): void {
  w.struct({
    LTime: (w) => w.int(m.lTime),
    StatusLTimes: (w) => {
      const keys = [...m.statusLTimes.keys()].sort();
      w.mapHeader(keys.length);
      for (const k of keys) w.str(k).int(m.statusLTimes.get(k)!);
      return w;
    },
    LeftMembers: (w) => {
      w.arrayHeader(m.leftMembers.length);
      for (const n of m.leftMembers) w.str(n);
      return w;
    },
    EventLTime: (w) => w.int(m.eventLTime),
    Events: (w) => {
      w.arrayHeader(m.events.length);
      // Serf's event buffer: 512 slots, mostly empty (nil).
      let nils = 0;
      for (const e of m.events) {
        if (e === null) {
          nils++;
          continue;
        }
        if (nils > 0) w.nils(nils);
        nils = 0;
        writeUserEvents(w, e);
      }
      if (nils > 0) w.nils(nils);
      return w;
    },
    QueryLTime: (w) => w.int(m.queryLTime),
  });
}

function writeKeyResponse(w: MpWriter, m: NodeKeyResponse): void {
  w.struct({
    Result: (w) => w.bool(m.result),
    Message: (w) => w.str(m.message),
    Keys: (w) => {
      if (m.keys === null) return w.nil();
      w.arrayHeader(m.keys.length);
      for (const k of m.keys) w.str(k);
      return w;
    },
    PrimaryKey: (w) => w.str(m.primaryKey),
  });
}

function writeMember(w: MpWriter, m: SerfMember): void {
  w.struct({
    Name: (w) => w.str(m.name),
    Addr: (w) => w.rawOrNil(m.addr.length === 0 ? null : m.addr),
    Port: (w) => w.int(m.port),
    Tags: (w) => w.stringMap(m.tags),
    Status: (w) => w.int(m.status),
    ProtocolMin: (w) => w.int(m.protocolMin),
    ProtocolMax: (w) => w.int(m.protocolMax),
    ProtocolCur: (w) => w.int(m.protocolCur),
    DelegateMin: (w) => w.int(m.delegateMin),
    DelegateMax: (w) => w.int(m.delegateMax),
    DelegateCur: (w) => w.int(m.delegateCur),
  });
}

function writeRelayHeader(w: MpWriter, h: RelayHeader): void {
  w.struct({
    DestAddr: (w) =>
      w.struct({
        IP: (w) => w.rawOrNil(h.destAddr.ip.length === 0 ? null : h.destAddr.ip),
        Port: (w) => w.int(h.destAddr.port),
        Zone: (w) => w.str(h.destAddr.zone),
      }),
    DestName: (w) => w.str(h.destName),
  });
}

/** Encodes a Serf message: type byte + msgpack body (relay: header + inner bytes). */
export function encodeSerfMessage(m: SerfMessage): Uint8Array {
  switch (m.type) {
    case "leave":
      return withType(SerfMessageType.leave, (w) => writeLeave(w, m.body));
    case "join":
      return withType(SerfMessageType.join, (w) => writeJoin(w, m.body));
    case "pushPull":
      return withType(SerfMessageType.pushPull, (w) => writePushPull(w, m.body));
    case "userEvent":
      return withType(SerfMessageType.userEvent, (w) => writeUserEvent(w, m.body));
    case "query":
      return withType(SerfMessageType.query, (w) => writeQuery(w, m.body));
    case "queryResponse":
      return withType(SerfMessageType.queryResponse, (w) => writeQueryResponse(w, m.body));
    case "conflictResponse":
      return withType(SerfMessageType.conflictResponse, (w) => (m.body === null ? w.nil() : writeMember(w, m.body)));
    case "keyRequest":
      return withType(SerfMessageType.keyRequest, (w) =>
        w.struct({ Key: (w) => w.raw(m.body.key) }),
      );
    case "keyResponse":
      return withType(SerfMessageType.keyResponse, (w) => writeKeyResponse(w, m.body));
    case "relay":
      return withType(SerfMessageType.relay, (w) => {
        writeRelayHeader(w, m.header);
        w.append(m.inner);
      });
  }
}

/** A relay message wrapping an encoded Serf message (usually a query response). */
export function encodeRelay(header: RelayHeader, inner: Uint8Array): Uint8Array {
  return encodeSerfMessage({ type: "relay", header, inner });
}

// ---------------------------------------------------------------------------
// Decoders

type Body<T> = (f: StructFields) => T;

function structFrom<T>(v: MpValue, what: string, body: Body<T>): WireResult<T> {
  return guarded(() => body(take(asStruct(v, what))));
}

const joinBody: Body<MessageJoin> = (f) => ({
  lTime: take(asUint(f.get("LTime"), "LTime", 64)),
  node: take(asString(f.get("Node"), "Node")),
});

const leaveBody: Body<MessageLeave> = (f) => ({
  lTime: take(asUint(f.get("LTime"), "LTime", 64)),
  node: take(asString(f.get("Node"), "Node")),
  prune: take(asBool(f.get("Prune"), "Prune")),
});

const userEventBody: Body<MessageUserEvent> = (f) => ({
  lTime: take(asUint(f.get("LTime"), "LTime", 64)),
  name: take(asString(f.get("Name"), "Name")),
  payload: take(asBytes(f.get("Payload"), "Payload")),
  cc: take(asBool(f.get("CC"), "CC")),
});

const queryBody: Body<MessageQuery> = (f) => {
  const rawFilters = take(asArray(f.get("Filters"), "Filters"));
  let filters: Uint8Array[] | null = null;
  if (rawFilters !== null) {
    filters = rawFilters.map((v) => take(asBytes(v, "Filters")));
  }
  return {
    lTime: take(asUint(f.get("LTime"), "LTime", 64)),
    id: take(asUint(f.get("ID"), "ID", 32)),
    addr: take(asBytes(f.get("Addr"), "Addr")),
    port: take(asUint(f.get("Port"), "Port", 16)),
    sourceNode: take(asString(f.get("SourceNode"), "SourceNode")),
    filters,
    flags: take(asUint(f.get("Flags"), "Flags", 32)),
    relayFactor: take(asUint(f.get("RelayFactor"), "RelayFactor", 8)),
    timeout: take(asInt(f.get("Timeout"), "Timeout")),
    name: take(asString(f.get("Name"), "Name")),
    payload: take(asBytesOrNull(f.get("Payload"), "Payload")),
  };
};

const queryResponseBody: Body<MessageQueryResponse> = (f) => ({
  lTime: take(asUint(f.get("LTime"), "LTime", 64)),
  id: take(asUint(f.get("ID"), "ID", 32)),
  from: take(asString(f.get("From"), "From")),
  flags: take(asUint(f.get("Flags"), "Flags", 32)),
  payload: take(asBytesOrNull(f.get("Payload"), "Payload")),
});

const eventDataBody: Body<UserEventData> = (f) => ({
  name: take(asString(f.get("Name"), "Name")),
  payload: take(asBytes(f.get("Payload"), "Payload")),
});

function userEventsFrom(v: MpValue): UserEventCollection | null {
  if (v.t === "nil") return null;
  return take(
    structFrom(v, "userEvents", (f) => ({
      lTime: take(asUint(f.get("LTime"), "LTime", 64)),
      events: (take(asArray(f.get("Events"), "Events")) ?? []).map((e) =>
        take(structFrom(e, "userEvent", eventDataBody)),
      ),
    })),
  );
}

const pushPullBody: Body<MessagePushPull> = (f) => {
  const statusLTimes = new Map<string, number>();
  for (const [k, v] of take(asMapEntries(f.get("StatusLTimes"), "StatusLTimes"))) {
    statusLTimes.set(k, take(asUint(v, "StatusLTimes", 64)));
  }
  return {
    lTime: take(asUint(f.get("LTime"), "LTime", 64)),
    statusLTimes,
    leftMembers: (take(asArray(f.get("LeftMembers"), "LeftMembers")) ?? []).map((v) =>
      take(asString(v, "LeftMembers")),
    ),
    eventLTime: take(asUint(f.get("EventLTime"), "EventLTime", 64)),
    events: (take(asArray(f.get("Events"), "Events")) ?? []).map(userEventsFrom),
    queryLTime: take(asUint(f.get("QueryLTime"), "QueryLTime", 64)),
  };
};

const keyRequestBody: Body<KeyRequest> = (f) => ({ key: take(asBytes(f.get("Key"), "Key")) });

const keyResponseBody: Body<NodeKeyResponse> = (f) => {
  const keys = take(asArray(f.get("Keys"), "Keys"));
  return {
    result: take(asBool(f.get("Result"), "Result")),
    message: take(asString(f.get("Message"), "Message")),
    keys: keys === null ? null : keys.map((k) => take(asString(k, "Keys"))),
    primaryKey: take(asString(f.get("PrimaryKey"), "PrimaryKey")),
  };
};

function tagsFrom(v: MpValue | undefined, field: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const [k, val] of take(asMapEntries(v, field))) tags.set(k, take(asString(val, field)));
  return tags;
}

const memberBody: Body<SerfMember> = (f) => ({
  name: take(asString(f.get("Name"), "Name")),
  addr: take(asBytes(f.get("Addr"), "Addr")),
  port: take(asUint(f.get("Port"), "Port", 16)),
  tags: tagsFrom(f.get("Tags"), "Tags"),
  status: take(asInt(f.get("Status"), "Status")),
  protocolMin: take(asUint(f.get("ProtocolMin"), "ProtocolMin", 8)),
  protocolMax: take(asUint(f.get("ProtocolMax"), "ProtocolMax", 8)),
  protocolCur: take(asUint(f.get("ProtocolCur"), "ProtocolCur", 8)),
  delegateMin: take(asUint(f.get("DelegateMin"), "DelegateMin", 8)),
  delegateMax: take(asUint(f.get("DelegateMax"), "DelegateMax", 8)),
  delegateCur: take(asUint(f.get("DelegateCur"), "DelegateCur", 8)),
});

const relayHeaderBody: Body<RelayHeader> = (f) => {
  const dest = take(
    structFrom(f.get("DestAddr") ?? { t: "nil" }, "DestAddr", (d) => ({
      ip: take(asBytes(d.get("IP"), "IP")),
      port: take(asInt(d.get("Port"), "Port")),
      zone: take(asString(d.get("Zone"), "Zone")),
    })),
  );
  return { destAddr: dest, destName: take(asString(f.get("DestName"), "DestName")) };
};

/**
 * Decodes a Serf message (the bytes of a memberlist user message, or the
 * push/pull user state). Never throws; unknown types are errors.
 */
export function decodeSerfMessage(bytes: Uint8Array): WireResult<SerfMessage> {
  if (bytes[0] === SerfMessageType.pushPull) {
    const body = decodePushPullFast(bytes);
    if (body) return ok({ type: "pushPull", body });
  }
  return decodeSerfMessageGeneric(bytes);
}

/** decodeSerfMessage through the general msgpack decoder only (exported for the equivalence test). */
export function decodeSerfMessageGeneric(bytes: Uint8Array): WireResult<SerfMessage> {
  if (bytes.length === 0) return fail("truncated", "Empty Serf message");
  const t = bytes[0]!;
  const step = decodeValue(bytes, 1);
  if (!step.ok) return step;
  const v = step.value.value;
  const wrap = <T>(type: SerfMessage["type"], r: WireResult<T>): WireResult<SerfMessage> =>
    r.ok ? ok({ type, body: r.value } as SerfMessage) : r;
  switch (t) {
    case SerfMessageType.leave:
      return wrap("leave", structFrom(v, "messageLeave", leaveBody));
    case SerfMessageType.join:
      return wrap("join", structFrom(v, "messageJoin", joinBody));
    case SerfMessageType.pushPull:
      return wrap("pushPull", structFrom(v, "messagePushPull", pushPullBody));
    case SerfMessageType.userEvent:
      return wrap("userEvent", structFrom(v, "messageUserEvent", userEventBody));
    case SerfMessageType.query:
      return wrap("query", structFrom(v, "messageQuery", queryBody));
    case SerfMessageType.queryResponse:
      return wrap("queryResponse", structFrom(v, "messageQueryResponse", queryResponseBody));
    case SerfMessageType.conflictResponse:
      if (v.t === "nil") return ok({ type: "conflictResponse", body: null });
      return wrap("conflictResponse", structFrom(v, "Member", memberBody));
    case SerfMessageType.keyRequest:
      return wrap("keyRequest", structFrom(v, "keyRequest", keyRequestBody));
    case SerfMessageType.keyResponse:
      return wrap("keyResponse", structFrom(v, "nodeKeyResponse", keyResponseBody));
    case SerfMessageType.relay: {
      const h = structFrom(v, "relayHeader", relayHeaderBody);
      if (!h.ok) return h;
      return ok({ type: "relay", header: h.value, inner: bytes.slice(step.value.offset) });
    }
    default:
      return fail("unknown_type", `Unknown Serf message type ${t}`);
  }
}

/**
 * A push/pull's Serf state in the shape Go writes it, read straight from the
 * bytes: every field an unsigned int, string or array of them, and the
 * 512-slot event ring all nil (no user event in the buffer). undefined for
 * anything else (nil fields, events, unknown or wide values), which the
 * general decoder then reads or refuses as before. Every push/pull carries
 * one, and the general decoder built a value for each of the ring's slots:
 * a measurable share of a 50-agent join storm's CPU went to it (docs/performance.md).
 */
function decodePushPullFast(bytes: Uint8Array): MessagePushPull | undefined {
  const r: ByteReader = { bytes, pos: 1 };
  const fields = readHeader(r, 0x80, 0x0f, 0xde);
  if (fields === undefined) return undefined;
  const out: MessagePushPull = { lTime: 0, statusLTimes: new Map(), leftMembers: [], eventLTime: 0, events: [], queryLTime: 0 };
  for (let i = 0; i < fields; i++) {
    const key = readStr(r);
    if (key === "LTime" || key === "EventLTime" || key === "QueryLTime") {
      const v = readUint(r);
      if (v === undefined) return undefined;
      out[clockFields[key]] = v;
    } else if (key === "StatusLTimes") {
      const n = readHeader(r, 0x80, 0x0f, 0xde);
      if (n === undefined) return undefined;
      out.statusLTimes = new Map();
      for (let j = 0; j < n; j++) {
        const name = readStr(r);
        const t = readUint(r);
        if (name === undefined || t === undefined) return undefined;
        out.statusLTimes.set(name, t);
      }
    } else if (key === "LeftMembers") {
      const n = readHeader(r, 0x90, 0x0f, 0xdc);
      if (n === undefined) return undefined;
      out.leftMembers = [];
      for (let j = 0; j < n; j++) {
        const name = readStr(r);
        if (name === undefined) return undefined;
        out.leftMembers.push(name);
      }
    } else if (key === "Events") {
      const n = readHeader(r, 0x90, 0x0f, 0xdc);
      if (n === undefined || n > bytes.length - r.pos) return undefined;
      for (let j = r.pos; j < r.pos + n; j++) if (bytes[j] !== 0xc0) return undefined;
      out.events = new Array<UserEventCollection | null>(n).fill(null);
      r.pos += n;
    } else {
      return undefined;
    }
  }
  return out;
}

const clockFields = { LTime: "lTime", EventLTime: "eventLTime", QueryLTime: "queryLTime" } as const;

// ---------------------------------------------------------------------------
// Tags in Meta (8.3)

/** Serf protocol >= 3 Meta: 0xff + msgpack map[string]string (keys sorted). */
export function encodeTags(tags: ReadonlyMap<string, string>): Uint8Array {
  const w = new MpWriter();
  w.byte(tagMagicByte);
  w.stringMap(tags);
  return w.bytes();
}

/**
 * Tags from memberlist Meta: 0xff + map; anything else (including empty) is
 * the legacy protocol-2 form `{role: <Meta as text>}`.
 */
export function decodeTags(meta: Uint8Array): WireResult<Map<string, string>> {
  if (meta.length === 0 || meta[0] !== tagMagicByte) {
    return ok(new Map([["role", textOf(meta)]]));
  }
  const tags = decodeTagsFast(meta);
  return tags ? ok(tags) : decodeTagsGeneric(meta);
}

/** decodeTags through the general msgpack decoder only (exported for the equivalence test). */
export function decodeTagsGeneric(meta: Uint8Array): WireResult<Map<string, string>> {
  if (meta.length === 0 || meta[0] !== tagMagicByte) {
    return ok(new Map([["role", textOf(meta)]]));
  }
  const v = decodeWhole(meta.subarray(1));
  if (!v.ok) return v;
  return guarded(() => tagsFrom(v.value, "Meta"));
}

/**
 * The shape Go's encoder writes (a fixmap or map16 of fixraw/raw16 strings,
 * nothing after it) read straight from the bytes; undefined for anything
 * else, which the general decoder then accepts or refuses as before. Every
 * member's tags are decoded once per member by every node, 2,500 times in a
 * 50-node join storm, and the general decoder's value tree was costly each time
 * (docs/performance.md).
 */
function decodeTagsFast(meta: Uint8Array): Map<string, string> | undefined {
  const r: ByteReader = { bytes: meta, pos: 1 };
  const n = readHeader(r, 0x80, 0x0f, 0xde);
  if (n === undefined) return undefined;
  const tags = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const key = readStr(r);
    const value = readStr(r);
    if (key === undefined || value === undefined) return undefined;
    tags.set(key, value);
  }
  return r.pos === meta.length ? tags : undefined;
}

// ---------------------------------------------------------------------------
// Query filters (8.6)

export function encodeQueryFilter(f: QueryFilter): Uint8Array {
  const w = new MpWriter();
  if (f.type === "node") {
    w.byte(FilterType.node);
    w.arrayHeader(f.nodes.length);
    for (const n of f.nodes) w.str(n);
  } else {
    w.byte(FilterType.tag);
    w.struct({ Tag: (w) => w.str(f.filter.tag), Expr: (w) => w.str(f.filter.expr) });
  }
  return w.bytes();
}

export function decodeQueryFilter(bytes: Uint8Array): WireResult<QueryFilter> {
  if (bytes.length === 0) return fail("truncated", "Empty query filter");
  const step = decodeValue(bytes, 1);
  if (!step.ok) return step;
  const v = step.value.value;
  switch (bytes[0]) {
    case FilterType.node:
      return guarded(() => ({
        type: "node" as const,
        nodes: (take(asArray(v, "nodes")) ?? []).map((n) => take(asString(n, "nodes"))),
      }));
    case FilterType.tag: {
      const r = structFrom(v, "filterTag", (f) => ({
        tag: take(asString(f.get("Tag"), "Tag")),
        expr: take(asString(f.get("Expr"), "Expr")),
      }));
      return r.ok ? ok({ type: "tag", filter: r.value }) : r;
    }
    default:
      return fail("unknown_type", `Unknown query filter type ${bytes[0]}`);
  }
}

// ---------------------------------------------------------------------------
// Coordinates in ack payloads (8.9)

/** Ack payload: 0x01 + msgpack Coordinate. */
export function encodeCoordinatePayload(c: Coordinate): Uint8Array {
  const w = new MpWriter(160);
  w.byte(pingPayloadVersion);
  w.struct({
    Vec: (w) => {
      w.arrayHeader(c.vec.length);
      for (const x of c.vec) w.float64(x);
      return w;
    },
    Error: (w) => w.float64(c.error),
    Adjustment: (w) => w.float64(c.adjustment),
    Height: (w) => w.float64(c.height),
  });
  return w.bytes();
}

export function decodeCoordinatePayload(payload: Uint8Array): WireResult<Coordinate> {
  if (payload.length === 0) return fail("truncated", "Empty ack payload");
  if (payload[0] !== pingPayloadVersion) return fail("bad_field", `Unsupported ping payload version ${payload[0]}`);
  const step = decodeValue(payload, 1);
  if (!step.ok) return step;
  return structFrom(step.value.value, "Coordinate", (f) => ({
    vec: (take(asArray(f.get("Vec"), "Vec")) ?? []).map((x) => take(asFloat(x, "Vec"))),
    error: take(asFloat(f.get("Error"), "Error")),
    adjustment: take(asFloat(f.get("Adjustment"), "Adjustment")),
    height: take(asFloat(f.get("Height"), "Height")),
  }));
}
