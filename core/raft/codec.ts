// Wire and storage encodings for Raft values. Decoders validate untrusted
// bytes and return undefined on anything malformed: they never throw.
import { Decoder, Encoder } from "@msgpack/msgpack";
import type {
  Configuration,
  EntryType,
  HardState,
  LogEntry,
  RaftMessage,
  ServerEntry,
  SnapshotMeta,
} from "./types.ts";

// One encoder and decoder, reused: constructing them per call dominated the
// simulation's profile. Both guard against re-entrant use themselves.
const encoder = new Encoder();
const decoder = new Decoder();
const encode = (v: unknown): Uint8Array => encoder.encode(v);
const decode = (b: Uint8Array): unknown => decoder.decode(b);

export function encodeRaftMessage(msg: RaftMessage): Uint8Array {
  return encode(msg);
}

/** Decode and validate a peer's message; undefined when malformed. */
export function decodeRaftMessage(bytes: Uint8Array): RaftMessage | undefined {
  let raw: unknown;
  try {
    raw = decode(bytes);
  } catch {
    return undefined;
  }
  return validateRaftMessage(raw);
}

export function encodeConfiguration(config: Configuration): Uint8Array {
  return encode({ servers: config.servers.map((s) => ({ id: s.id, address: s.address, suffrage: s.suffrage })) });
}

export function decodeConfiguration(bytes: Uint8Array): Configuration | undefined {
  let raw: unknown;
  try {
    raw = decode(bytes);
  } catch {
    return undefined;
  }
  return validateConfiguration(raw);
}

export function encodeLogEntry(e: LogEntry): Uint8Array {
  return encode({ index: e.index, term: e.term, type: e.type, data: e.data });
}

export function decodeLogEntry(bytes: Uint8Array): LogEntry | undefined {
  let raw: unknown;
  try {
    raw = decode(bytes);
  } catch {
    return undefined;
  }
  return validateLogEntry(raw);
}

export function encodeHardState(h: HardState): Uint8Array {
  return encode({ term: h.term, vote: h.vote, commit: h.commit });
}

export function decodeHardState(bytes: Uint8Array): HardState | undefined {
  let raw: unknown;
  try {
    raw = decode(bytes);
  } catch {
    return undefined;
  }
  if (!isObj(raw) || !isIdx(raw.term) || typeof raw.vote !== "string" || !isIdx(raw.commit)) return undefined;
  return { term: raw.term, vote: raw.vote, commit: raw.commit };
}

export function encodeSnapshotMeta(m: SnapshotMeta): Uint8Array {
  return encode(m);
}

export function decodeSnapshotMeta(bytes: Uint8Array): SnapshotMeta | undefined {
  let raw: unknown;
  try {
    raw = decode(bytes);
  } catch {
    return undefined;
  }
  return validateSnapshotMeta(raw);
}

// ---------------------------------------------------------------------------

type Obj = Record<string, unknown>;

function isObj(x: unknown): x is Obj {
  return typeof x === "object" && x !== null && !Array.isArray(x) && !(x instanceof Uint8Array);
}

function isIdx(x: unknown): x is number {
  return typeof x === "number" && Number.isSafeInteger(x) && x >= 0;
}

/**
 * Largest term a peer's message may carry. Every node adopts a higher term
 * it hears of, and the next election adds one: a term at
 * Number.MAX_SAFE_INTEGER would leave every node campaigning at a term no
 * message can carry (and no stable state can store), a cluster stopped for
 * good by one message. No real cluster holds 2^52 elections.
 */
export const maxMessageTerm = 2 ** 52;

function isStr(x: unknown): x is string {
  return typeof x === "string";
}

const entryTypes: readonly EntryType[] = ["normal", "noop", "config"];

export function validateLogEntry(x: unknown): LogEntry | undefined {
  if (!isObj(x) || !isIdx(x.index) || x.index < 1 || !isIdx(x.term)) return undefined;
  if (!entryTypes.includes(x.type as EntryType) || !(x.data instanceof Uint8Array)) return undefined;
  return { index: x.index, term: x.term, type: x.type as EntryType, data: x.data };
}

export function validateConfiguration(x: unknown): Configuration | undefined {
  if (!isObj(x) || !Array.isArray(x.servers)) return undefined;
  const servers: ServerEntry[] = [];
  for (const s of x.servers) {
    if (!isObj(s) || !isStr(s.id) || s.id === "" || !isStr(s.address)) return undefined;
    if (s.suffrage !== "voter" && s.suffrage !== "nonvoter") return undefined;
    servers.push({ id: s.id, address: s.address, suffrage: s.suffrage });
  }
  return { servers };
}

/** A user restore's content id is a short token (see SnapshotMeta.contentId). */
const maxContentIdLength = 128;

export function validateSnapshotMeta(x: unknown): SnapshotMeta | undefined {
  if (!isObj(x) || !isIdx(x.index) || !isIdx(x.term) || !isIdx(x.sizeBytes)) return undefined;
  const configuration = validateConfiguration(x.configuration);
  if (!configuration) return undefined;
  const meta: SnapshotMeta = { index: x.index, term: x.term, sizeBytes: x.sizeBytes, configuration };
  if (x.userRestore === true) meta.userRestore = true;
  if (isStr(x.contentId) && x.contentId !== "" && x.contentId.length <= maxContentIdLength) meta.contentId = x.contentId;
  return meta;
}

/** Check an already-decoded value from a peer; undefined when it is not a well-formed RaftMessage. */
export function validateRaftMessage(x: unknown): RaftMessage | undefined {
  if (!isObj(x) || !isStr(x.from) || !isStr(x.to) || !isIdx(x.term) || x.term > maxMessageTerm) return undefined;
  if (x.fromAddress !== undefined && !isStr(x.fromAddress)) return undefined;
  const h = x.fromAddress === undefined
    ? { from: x.from, to: x.to, term: x.term }
    : { from: x.from, to: x.to, term: x.term, fromAddress: x.fromAddress };
  switch (x.type) {
    case "vote":
      if (typeof x.pre !== "boolean" || !isIdx(x.lastIndex) || !isIdx(x.lastTerm)) return undefined;
      return { type: "vote", ...h, pre: x.pre, lastIndex: x.lastIndex, lastTerm: x.lastTerm, transfer: x.transfer === true };
    case "voteResp":
      if (typeof x.pre !== "boolean" || typeof x.granted !== "boolean") return undefined;
      return { type: "voteResp", ...h, pre: x.pre, granted: x.granted };
    case "append": {
      if (!isIdx(x.prevIndex) || !isIdx(x.prevTerm) || !isIdx(x.commit) || !Array.isArray(x.entries)) return undefined;
      const entries: LogEntry[] = [];
      for (const e of x.entries) {
        const v = validateLogEntry(e);
        if (!v || v.index !== x.prevIndex + 1 + entries.length) return undefined;
        entries.push(v);
      }
      return { type: "append", ...h, prevIndex: x.prevIndex, prevTerm: x.prevTerm, commit: x.commit, entries };
    }
    case "appendResp":
      if (!isIdx(x.index) || typeof x.reject !== "boolean" || !isIdx(x.rejectHint) || !isIdx(x.hintTerm)) return undefined;
      return { type: "appendResp", ...h, index: x.index, reject: x.reject, rejectHint: x.rejectHint, hintTerm: x.hintTerm };
    case "heartbeat":
      if (!isIdx(x.commit) || !isIdx(x.ctx)) return undefined;
      return { type: "heartbeat", ...h, commit: x.commit, ctx: x.ctx };
    case "heartbeatResp":
      if (!isIdx(x.ctx)) return undefined;
      return { type: "heartbeatResp", ...h, ctx: x.ctx };
    case "snapshot": {
      const meta = validateSnapshotMeta(x.meta);
      if (!meta || !isIdx(x.offset) || !(x.chunk instanceof Uint8Array) || typeof x.done !== "boolean") return undefined;
      return { type: "snapshot", ...h, meta, offset: x.offset, chunk: x.chunk, done: x.done };
    }
    case "prefetch": {
      if (!isStr(x.id) || x.id === "" || x.id.length > maxContentIdLength || !isIdx(x.offset) || !(x.chunk instanceof Uint8Array)) return undefined;
      if (x.total !== undefined && !isIdx(x.total)) return undefined;
      const m: RaftMessage = { type: "prefetch", ...h, id: x.id, offset: x.offset, chunk: x.chunk };
      if (x.total !== undefined) m.total = x.total;
      return m;
    }
    case "prefetchResp":
      if (!isStr(x.id) || x.id === "" || x.id.length > maxContentIdLength || !isIdx(x.offset)) return undefined;
      return { type: "prefetchResp", ...h, id: x.id, offset: x.offset };
    case "snapshotResp":
      if (!isIdx(x.index) || !isIdx(x.offset) || typeof x.reject !== "boolean") return undefined;
      return { type: "snapshotResp", ...h, index: x.index, offset: x.offset, reject: x.reject };
    case "timeoutNow":
      return { type: "timeoutNow", ...h };
    default:
      return undefined;
  }
}
