// Decoded memberlist + Serf wire messages (memberlist 0.2.2, Serf 0.9.4,
// go-msgpack 0.5.5), see docs/gossip-wire.md.
//
// ANNOUNCEMENT: this file is the contract between the wire codec
// (core/gossip/wire/*) and the SWIM/Serf protocol core (core/gossip/*.ts).
// It is stable: fields and types are only ever ADDED, never renamed.
//
// Conventions
// - Every struct field is the camelCase form of the Go wire name, which is
//   noted beside it (`Node` -> node, `SeqNo` -> seqNo, `LTime` -> lTime,
//   `ID` -> id, `CC` -> cc, `IP` -> ip). Encoders write keys in Go's sorted
//   order; decoders accept any order.
// - Go `[]byte` fields (IPs, Meta, Payload, Buf, Key, Vsn) are `Uint8Array`.
//   Where Go sends nil (`0xc0`) rather than an empty slice, the type says
//   `Uint8Array | null`; decoders map an absent or nil field to `null` there
//   and to an empty array elsewhere.
// - Integers (uint8..uint64, int, int64, time.Duration ns) are JS `number`.
//   A decoded value above Number.MAX_SAFE_INTEGER is a decode error (Lamport
//   clocks, IDs and durations never get there in practice).
// - Go `string` fields are JS strings (decoded as UTF-8, lossy on invalid
//   bytes); Go maps are `Map`s (wire entry order is random in Go).

// ---------------------------------------------------------------------------
// memberlist (section 3)

/** memberlist message type byte (first byte of every message). */
export const MessageType = {
  ping: 0,
  indirectPing: 1,
  ackResp: 2,
  suspect: 3,
  alive: 4,
  dead: 5,
  pushPull: 6,
  compound: 7,
  user: 8,
  compress: 9,
  encrypt: 10,
  nackResp: 11,
  hasCrc: 12,
  err: 13,
  /** Newer memberlist (>= 0.3.0) label header; 0.2.2 treats it as unknown. */
  hasLabel: 244,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** memberlist node state in push/pull `State` (Go `nodeStateType`, int). */
export const NodeStateType = {
  alive: 0,
  suspect: 1,
  dead: 2,
  left: 3,
} as const;
export type NodeStateType = (typeof NodeStateType)[keyof typeof NodeStateType];

/** Compression algorithm in `compress.Algo`; LZW is the only one. */
export const CompressionType = { lzw: 0 } as const;
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType];

/**
 * The 6-byte `Vsn` field: [PMin, PMax, PCur, DMin, DMax, DCur].
 * Index names for readability: `vsn[VsnIndex.pMax]`.
 */
export const VsnIndex = { pMin: 0, pMax: 1, pCur: 2, dMin: 3, dMax: 4, dCur: 5 } as const;

/** What a serf 0.9.4 agent advertises (Consul: DCur 4). */
export const defaultVsn: readonly number[] = [1, 5, 2, 2, 5, 5];

/** Type 0 `ping`: direct probe (UDP, or TCP fallback ping). */
export interface Ping {
  /** `SeqNo` uint32: probe sequence number. */
  seqNo: number;
  /** `Node` string: node the sender believes it probes ("" = anyone). */
  node: string;
  /** `SourceAddr` []byte omitempty: sender advertise IP (4 or 16 bytes). */
  sourceAddr?: Uint8Array;
  /** `SourcePort` uint16 omitempty. */
  sourcePort?: number;
  /** `SourceNode` string omitempty. */
  sourceNode?: string;
}

/** Type 1 `indirectPingReq`: "please probe Target for me". */
export interface IndirectPingReq {
  /** `SeqNo` uint32: the requester's sequence number. */
  seqNo: number;
  /** `Target` []byte: target IP. */
  target: Uint8Array;
  /** `Port` uint16: target port. */
  port: number;
  /** `Node` string: target node name. */
  node: string;
  /** `Nack` bool: requester wants a nack if the target does not answer. */
  nack: boolean;
  /** `SourceAddr` []byte omitempty: requester IP. */
  sourceAddr?: Uint8Array;
  /** `SourcePort` uint16 omitempty. */
  sourcePort?: number;
  /** `SourceNode` string omitempty. */
  sourceNode?: string;
}

/** Type 2 `ackResp`. */
export interface AckResp {
  /** `SeqNo` uint32. */
  seqNo: number;
  /** `Payload` []byte: nil (0xc0) when absent; Serf puts a coordinate here (section 8.9). */
  payload: Uint8Array | null;
}

/** Type 11 `nackResp`. */
export interface NackResp {
  /** `SeqNo` uint32: the requester's SeqNo from the indirect ping. */
  seqNo: number;
}

/** Type 3 `suspect`. */
export interface Suspect {
  /** `Incarnation` uint32. */
  incarnation: number;
  /** `Node` string: the suspected node. */
  node: string;
  /** `From` string: the accuser. */
  from: string;
}

/** Type 4 `alive`. */
export interface Alive {
  /** `Incarnation` uint32. */
  incarnation: number;
  /** `Node` string. */
  node: string;
  /** `Addr` []byte: advertise IP (4 bytes IPv4, 16 bytes IPv6). */
  addr: Uint8Array;
  /** `Port` uint16: advertise port. */
  port: number;
  /** `Meta` []byte: delegate metadata <= 512 bytes (Serf: 0xff + msgpack tags). */
  meta: Uint8Array;
  /** `Vsn` []uint8 (6 raw bytes): [PMin, PMax, PCur, DMin, DMax, DCur]. */
  vsn: Uint8Array;
}

/** Type 5 `dead`: `From == Node` means a graceful leave. */
export interface Dead {
  /** `Incarnation` uint32. */
  incarnation: number;
  /** `Node` string. */
  node: string;
  /** `From` string. */
  from: string;
}

/** Header of a type 6 push/pull stream. */
export interface PushPullHeader {
  /** `Nodes` int: number of pushNodeState values that follow. */
  nodes: number;
  /** `UserStateLen` int: bytes of delegate state after the node states. */
  userStateLen: number;
  /** `Join` bool: true for joins, false for periodic anti-entropy. */
  join: boolean;
}

/** One node entry of a push/pull (`pushNodeState`). */
export interface PushNodeState {
  /** `Name` string. */
  name: string;
  /** `Addr` []byte. */
  addr: Uint8Array;
  /** `Port` uint16. */
  port: number;
  /** `Meta` []byte. */
  meta: Uint8Array;
  /** `Incarnation` uint32. */
  incarnation: number;
  /** `State` int: 0 alive, 1 suspect, 2 dead, 3 left (other values possible from a peer). */
  state: number;
  /** `Vsn` 6 raw bytes (empty if the peer sent none: counts as version 0). */
  vsn: Uint8Array;
}

/** A whole decoded push/pull (type 6): header + node states + user state. */
export interface PushPull {
  /** `Join` from the header. */
  join: boolean;
  /** The `Nodes` node states, in wire order. */
  nodes: PushNodeState[];
  /** The `UserStateLen` raw bytes of delegate state (Serf: 0x02 + messagePushPull; may be empty). */
  userState: Uint8Array;
}

/** Type 13 `errResp` (TCP reply). */
export interface ErrResp {
  /** `Error` string. */
  error: string;
}

/** Type 9 `compress` wrapper. */
export interface Compress {
  /** `Algo` uint8: 0 = LZW. */
  algo: number;
  /** `Buf` []byte: LZW-compressed complete message (type byte included). */
  buf: Uint8Array;
}

/** TCP user message header (`userMsgHeader`), followed by UserMsgLen raw bytes. */
export interface UserMsgHeader {
  /** `UserMsgLen` int. */
  userMsgLen: number;
}

/**
 * One decoded memberlist message after unwrapping CRC, compound and
 * compression. `user` carries the raw delegate (Serf) bytes.
 */
export type MemberlistMessage =
  | { type: "ping"; body: Ping }
  | { type: "indirectPing"; body: IndirectPingReq }
  | { type: "ackResp"; body: AckResp }
  | { type: "nackResp"; body: NackResp }
  | { type: "suspect"; body: Suspect }
  | { type: "alive"; body: Alive }
  | { type: "dead"; body: Dead }
  | { type: "user"; body: Uint8Array }
  | { type: "pushPull"; body: PushPull }
  | { type: "err"; body: ErrResp };

export type MemberlistMessageKind = MemberlistMessage["type"];

/**
 * A UDP datagram after decoding: the leaf messages in order, plus what went
 * wrong on the way (a truncated compound still yields its complete parts).
 */
export interface DecodedPacket {
  messages: MemberlistMessage[];
  /** True if the outermost layer was a valid hasCrc wrapper. */
  hadCrc: boolean;
  /** True if any layer was compressed. */
  hadCompression: boolean;
  /** Problems met while decoding (bad parts are dropped, the rest kept). */
  errors: WireError[];
}

/**
 * What an incoming TCP stream carried after unwrapping encryption and
 * compression. Accepted first types: 6 (push/pull), 0 (ping), 8 (user);
 * replies are 2 (ack) or 13 (err) or 6 (push/pull).
 */
export type StreamMessage =
  | { type: "pushPull"; body: PushPull }
  | { type: "ping"; body: Ping }
  | { type: "ackResp"; body: AckResp }
  | { type: "err"; body: ErrResp }
  /** Type 8 on TCP: userMsgHeader + UserMsgLen bytes (the raw Serf message). */
  | { type: "user"; body: Uint8Array };

/** A decode failure returned (never thrown) by the wire codec. */
export interface WireError {
  /** Stable short code: "truncated", "bad_msgpack", "bad_field", "unknown_type", "crc", "lzw", "too_large", "decrypt", ... */
  code: string;
  message: string;
}

export type WireResult<T> = { ok: true; value: T } | { ok: false; error: WireError };

// ---------------------------------------------------------------------------
// Serf (section 8)

/** Serf message type byte, inside memberlist user messages (section 8.1). */
export const SerfMessageType = {
  leave: 0,
  join: 1,
  pushPull: 2,
  userEvent: 3,
  query: 4,
  queryResponse: 5,
  conflictResponse: 6,
  keyRequest: 7,
  keyResponse: 8,
  relay: 9,
} as const;
export type SerfMessageType = (typeof SerfMessageType)[keyof typeof SerfMessageType];

/** Serf member status (Go `MemberStatus`, int). */
export const MemberStatus = {
  none: 0,
  alive: 1,
  leaving: 2,
  left: 3,
  failed: 4,
} as const;
export type MemberStatus = (typeof MemberStatus)[keyof typeof MemberStatus];

/** Bits of `messageQuery.Flags`. */
export const QueryFlag = {
  /** bit0: the querier wants acks. */
  ack: 1,
  /** bit1: do not rebroadcast. */
  noBroadcast: 2,
} as const;

/** Bits of `messageQueryResponse.Flags`. */
export const QueryResponseFlag = {
  /** bit0: this response is an ack. */
  ack: 1,
} as const;

/** Query filter type byte (`filterType`). */
export const FilterType = { node: 0, tag: 1 } as const;
export type FilterType = (typeof FilterType)[keyof typeof FilterType];

/** Names of Serf's internal queries (section 8.7). */
export const InternalQuery = {
  prefix: "_serf_",
  ping: "_serf_ping",
  conflict: "_serf_conflict",
  installKey: "_serf_install-key",
  useKey: "_serf_use-key",
  removeKey: "_serf_remove-key",
  listKeys: "_serf_list-keys",
} as const;

/** First byte of memberlist `Meta` when it carries a Serf tag map (protocol >= 3). */
export const tagMagicByte = 0xff;

/** Type 1 `messageJoin`: join intent. */
export interface MessageJoin {
  /** `LTime` uint64: member clock. */
  lTime: number;
  /** `Node` string. */
  node: string;
}

/** Type 0 `messageLeave`: leave intent. */
export interface MessageLeave {
  /** `LTime` uint64: member clock. */
  lTime: number;
  /** `Node` string. */
  node: string;
  /** `Prune` bool: erase the member at once. */
  prune: boolean;
}

/** Type 3 `messageUserEvent`. */
export interface MessageUserEvent {
  /** `LTime` uint64: event clock. */
  lTime: number;
  /** `Name` string. */
  name: string;
  /** `Payload` []byte. */
  payload: Uint8Array;
  /** `CC` bool: may be coalesced. */
  cc: boolean;
}

/** Type 4 `messageQuery`. */
export interface MessageQuery {
  /** `LTime` uint64: query clock. */
  lTime: number;
  /** `ID` uint32: random query id. */
  id: number;
  /** `Addr` []byte: querier IP (responses go to Addr:Port by UDP). */
  addr: Uint8Array;
  /** `Port` uint16: querier port. */
  port: number;
  /** `SourceNode` string: querier name. */
  sourceNode: string;
  /** `Filters` [][]byte: each `filterType byte + msgpack body`; null (nil) if none. */
  filters: Uint8Array[] | null;
  /** `Flags` uint32: QueryFlag bits. */
  flags: number;
  /** `RelayFactor` uint8. */
  relayFactor: number;
  /** `Timeout` time.Duration: nanoseconds (int64). */
  timeout: number;
  /** `Name` string. */
  name: string;
  /** `Payload` []byte: null when Go sent nil. */
  payload: Uint8Array | null;
}

/** Type 5 `messageQueryResponse`. */
export interface MessageQueryResponse {
  /** `LTime` uint64. */
  lTime: number;
  /** `ID` uint32. */
  id: number;
  /** `From` string: responder name. */
  from: string;
  /** `Flags` uint32: QueryResponseFlag bits. */
  flags: number;
  /** `Payload` []byte: null for acks. */
  payload: Uint8Array | null;
}

/** Node filter body (type 0): `[]string` of node names. */
export type NodeFilter = string[];

/** Tag filter body (type 1, `filterTag`). */
export interface TagFilter {
  /** `Tag` string. */
  tag: string;
  /** `Expr` string: Go regexp matched against the tag value. */
  expr: string;
}

/** A decoded query filter. */
export type QueryFilter =
  | { type: "node"; nodes: NodeFilter }
  | { type: "tag"; filter: TagFilter };

/** One user event inside a push/pull event slot (`userEvent`, no CC). */
export interface UserEventData {
  /** `Name` string. */
  name: string;
  /** `Payload` []byte. */
  payload: Uint8Array;
}

/** One slot of the push/pull event ring (`userEvents`). */
export interface UserEventCollection {
  /** `LTime` uint64. */
  lTime: number;
  /** `Events` []userEvent. */
  events: UserEventData[];
}

/** Type 2 `messagePushPull`: Serf's push/pull user state (section 8.8). */
export interface MessagePushPull {
  /** `LTime` uint64: member clock. */
  lTime: number;
  /** `StatusLTimes` map[string]uint64: member name -> statusLTime. */
  statusLTimes: Map<string, number>;
  /** `LeftMembers` []string (sent as an array, never nil). */
  leftMembers: string[];
  /** `EventLTime` uint64: event clock. */
  eventLTime: number;
  /** `Events` []*userEvents: the 512-slot ring; null = nil slot. */
  events: (UserEventCollection | null)[];
  /** `QueryLTime` uint64: query clock. */
  queryLTime: number;
}

/** Type 7 `keyRequest` (payload of the _serf_*-key queries, after the type byte). */
export interface KeyRequest {
  /** `Key` []byte: raw key bytes (not base64); empty for list. */
  key: Uint8Array;
}

/** Type 8 `nodeKeyResponse` (response payload of the key queries). */
export interface NodeKeyResponse {
  /** `Result` bool. */
  result: boolean;
  /** `Message` string. */
  message: string;
  /** `Keys` []string: base64 keys; null (nil) when none. */
  keys: string[] | null;
  /** `PrimaryKey` string: base64. */
  primaryKey: string;
}

/** Serf `Member` (type 6 conflict response payload). */
export interface SerfMember {
  /** `Name` string. */
  name: string;
  /** `Addr` []byte (net.IP). */
  addr: Uint8Array;
  /** `Port` uint16. */
  port: number;
  /** `Tags` map[string]string. */
  tags: Map<string, string>;
  /** `Status` int: MemberStatus. */
  status: number;
  /** `ProtocolMin` uint8. */
  protocolMin: number;
  /** `ProtocolMax` uint8. */
  protocolMax: number;
  /** `ProtocolCur` uint8. */
  protocolCur: number;
  /** `DelegateMin` uint8. */
  delegateMin: number;
  /** `DelegateMax` uint8. */
  delegateMax: number;
  /** `DelegateCur` uint8. */
  delegateCur: number;
}

/** `relayHeader.DestAddr` (Go net.UDPAddr). */
export interface RelayDestAddr {
  /** `IP` []byte. */
  ip: Uint8Array;
  /** `Port` int. */
  port: number;
  /** `Zone` string. */
  zone: string;
}

/** Type 9 `relayHeader`. */
export interface RelayHeader {
  /** `DestAddr` net.UDPAddr: where to forward. */
  destAddr: RelayDestAddr;
  /** `DestName` string. */
  destName: string;
}

/** Vivaldi `Coordinate` carried in UDP ack payloads (section 8.9). */
export interface Coordinate {
  /** `Vec` []float64 (8 dimensions). */
  vec: number[];
  /** `Error` float64. */
  error: number;
  /** `Adjustment` float64. */
  adjustment: number;
  /** `Height` float64. */
  height: number;
}

/** Version byte before the msgpack Coordinate in an ack payload. */
export const pingPayloadVersion = 1;

/**
 * One decoded Serf message (the bytes of a memberlist user message).
 * `relay` keeps the inner message as raw bytes (`0x05 ...`) to forward unchanged.
 */
export type SerfMessage =
  | { type: "leave"; body: MessageLeave }
  | { type: "join"; body: MessageJoin }
  | { type: "pushPull"; body: MessagePushPull }
  | { type: "userEvent"; body: MessageUserEvent }
  | { type: "query"; body: MessageQuery }
  | { type: "queryResponse"; body: MessageQueryResponse }
  /** null = Go sent a nil *Member (unknown name). */
  | { type: "conflictResponse"; body: SerfMember | null }
  | { type: "keyRequest"; body: KeyRequest }
  | { type: "keyResponse"; body: NodeKeyResponse }
  | { type: "relay"; header: RelayHeader; inner: Uint8Array };

export type SerfMessageKind = SerfMessage["type"];
