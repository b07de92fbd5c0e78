// The replicated state machine (consul agent/consul/fsm/fsm.go): a committed
// log entry is a msgpack command `{ type, ... }`; apply() looks the type up in
// a table and changes the state store at the entry's Raft index. An unknown
// type halts the node (FsmError) unless it carries the ignore-unknown flag,
// so an old server never silently skips a newer server's writes. No wall
// clock and no randomness in here: every server must reach the same state.

import { Decoder, Encoder } from "@msgpack/msgpack";
import { FsmError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import { isKvFlags, type KvFlags, type KvsOp, type TxnOp } from "../rpc/methods.ts";
import { concatBytes } from "../bytes.ts";
import { framesAt, type ByteStream, type SnapshotBytesAt, type SnapshotFrames } from "../state/snapshot.ts";
import { StateStore } from "../state/store.ts";
import type { KvsWriteEntry } from "../state/kvs.ts";
import { isIndex } from "../state/kvs_schema.ts";
import { applyDeregisterCommand, applyRegisterCommand, applySessionCommand } from "../state/catalog_commands.ts";
import { applyAutopilotCommand } from "../state/autopilot.ts";
import { applyAclBootstrapCommand, applyAclDeleteCommand, applyAclSetCommand } from "../state/acl.ts";
import { applyCoordinateBatchCommand } from "../state/coordinate.ts";
import { applyPreparedQueryCommand } from "../state/prepared_query.ts";
import { parseRequestId } from "../state/requests.ts";
import { kvsLockDelayUntil } from "../state/session_ops.ts";
import type { RequestId } from "../state/requests.ts";

/** Command types; numbers follow Consul's structs.MessageType. */
export const MessageType = {
  Register: 0,
  Deregister: 1,
  KVS: 2,
  Session: 3,
  Tombstone: 5,
  CoordinateBatchUpdate: 6,
  PreparedQuery: 7,
  Txn: 8,
  /** The autopilot configuration (Consul AutopilotRequestType). */
  Autopilot: 9,
  /** ACLs (Consul ACLBootstrapRequestType, ACLTokenSetRequestType, ...). */
  ACLBootstrap: 11,
  ACLTokenSet: 17,
  ACLTokenDelete: 18,
  ACLPolicySet: 19,
  ACLPolicyDelete: 20,
  ACLRoleSet: 23,
  ACLRoleDelete: 24,
  /**
   * cairn's own, from before restores went through Raft's snapshot
   * installation (RaftNode.restoreUserSnapshot): the whole state travelled
   * in one entry. No longer written; still applied, for logs that hold one.
   * No ignore-unknown flag: an older server must stop rather than skip it.
   */
  Restore: 100,
} as const;
export type MessageType = number;

/** A type with this bit set may be skipped by servers that do not know it (Consul IgnoreUnknownTypeFlag). */
export const ignoreUnknownTypeFlag = 128;

/** A decoded command: its type plus its own fields. */
export type Command = { type: MessageType } & Record<string, unknown>;

export interface ApplyContext {
  index: number;
  state: StateStore;
  logger: Logger;
  /** The proposing leader's wall clock, for a command that came with a request envelope. */
  atMs?: number;
}

/** Applies one command; returns the result handed back to the proposer (an Error for a refused op). */
export type Apply = (ctx: ApplyContext, command: Command) => unknown;

const encoder = new Encoder({ ignoreUndefined: true });
const decoder = new Decoder();

/** Encode a command for the Raft log. */
export function encodeCommand(type: MessageType, body: Record<string, unknown>): Uint8Array {
  return encoder.encode({ ...body, type });
}

/**
 * msgpack never writes 0xc1, so no bare command starts with it: an entry
 * that does is `0xc1, u16 header length, msgpack [issuer, seq, atMs],
 * command` — a command with its request id and the leader's wall clock.
 */
const envelopeMarker = 0xc1;

/** Wrap an encoded command with its request id, stamped with the proposing leader's wall clock. */
export function wrapCommand(command: Uint8Array, id: RequestId, atMs: number): Uint8Array {
  const header = encoder.encode([id[0], id[1], atMs]);
  const out = new Uint8Array(3 + header.length + command.length);
  out[0] = envelopeMarker;
  out[1] = header.length >> 8;
  out[2] = header.length & 0xff;
  out.set(header, 3);
  out.set(command, 3 + header.length);
  return out;
}

/** An envelope's parts, or a message saying why it is malformed. */
function unwrapCommand(data: Uint8Array): { id: RequestId; atMs: number; command: Uint8Array } | string {
  if (data.length < 3) return "request envelope is truncated";
  const len = (data[1]! << 8) | data[2]!;
  if (data.length < 3 + len) return "request envelope is truncated";
  let header: unknown;
  try {
    header = decoder.decode(data.subarray(3, 3 + len));
  } catch {
    return "request envelope header is not msgpack";
  }
  if (!Array.isArray(header) || header.length !== 3 || typeof header[2] !== "number") return "request envelope header is malformed";
  const id = parseRequestId([header[0], header[1]]);
  if (typeof id === "string") return id;
  return { id, atMs: header[2], command: data.subarray(3 + len) };
}

export interface FsmStats {
  /** Commands answered from the request table instead of being applied again. */
  repeats: number;
  /** Commands refused because their request id was too old to tell. */
  expired: number;
}

/** The KVS command body (KvsApplyArgs minus routing fields). */
export interface KvsCommand {
  op: KvsOp;
  entry: KvsWriteEntry;
}

export interface TxnCommand {
  ops: TxnOp[];
}

export interface TombstoneCommand {
  reapIndex: number;
}

export class Fsm {
  readonly #applies = new Map<MessageType, Apply>();
  readonly #logger: Logger;
  #state: StateStore;
  #lastIndex = 0;
  readonly stats: FsmStats = { repeats: 0, expired: 0 };

  constructor(options: { logger?: Logger; state?: StateStore } = {}) {
    this.#logger = options.logger ?? nullLogger();
    this.#state = options.state ?? new StateStore();
    this.register(MessageType.KVS, applyKvs);
    this.register(MessageType.Txn, applyTxn);
    this.register(MessageType.Tombstone, applyTombstone);
    this.register(MessageType.Register, (c, cmd) => applyRegisterCommand(c.state, c.index, cmd));
    this.register(MessageType.Deregister, (c, cmd) => applyDeregisterCommand(c.state, c.index, cmd));
    this.register(MessageType.Session, (c, cmd) => applySessionCommand(c.state, c.index, cmd));
    this.register(MessageType.PreparedQuery, (c, cmd) => applyPreparedQueryCommand(c.state, c.index, cmd));
    this.register(MessageType.Autopilot, (c, cmd) => applyAutopilotCommand(c.state, c.index, cmd));
    this.register(MessageType.CoordinateBatchUpdate, (c, cmd) => applyCoordinateBatchCommand(c.state, c.index, cmd));
    this.register(MessageType.ACLBootstrap, (c, cmd) => applyAclBootstrapCommand(c.state, c.index, cmd));
    this.register(MessageType.ACLTokenSet, (c, cmd) => applyAclSetCommand(c.state, c.index, cmd, "token"));
    this.register(MessageType.ACLTokenDelete, (c, cmd) => applyAclDeleteCommand(c.state, c.index, cmd, "token"));
    this.register(MessageType.ACLPolicySet, (c, cmd) => applyAclSetCommand(c.state, c.index, cmd, "policy"));
    this.register(MessageType.ACLPolicyDelete, (c, cmd) => applyAclDeleteCommand(c.state, c.index, cmd, "policy"));
    this.register(MessageType.ACLRoleSet, (c, cmd) => applyAclSetCommand(c.state, c.index, cmd, "role"));
    this.register(MessageType.ACLRoleDelete, (c, cmd) => applyAclDeleteCommand(c.state, c.index, cmd, "role"));
  }

  /** The current store (replaced by restore: read it again after a watch fires). */
  get state(): StateStore {
    return this.#state;
  }

  /** Index of the last applied entry (or of the restored snapshot). */
  get lastIndex(): number {
    return this.#lastIndex;
  }

  /** Add a command type (Consul registerCommand). Registering a type twice is a programming error. */
  register(type: MessageType, apply: Apply): void {
    if (this.#applies.has(type)) throw new TypeError(`Message type ${type} is already registered`);
    this.#applies.set(type, apply);
  }

  /**
   * Apply a committed entry. Throws FsmError when the node must halt. A
   * command with a request id is applied once: a repeat gets the first
   * result back and changes nothing.
   */
  apply(index: number, data: Uint8Array): unknown {
    if (data[0] !== envelopeMarker) return this.#applyCommand(index, data);
    this.#lastIndex = index;
    const env = unwrapCommand(data);
    if (typeof env === "string") throw new FsmError(`Failed to decode command at index ${index}: ${env}`);
    const seen = this.#state.requests.lookup(env.id, env.atMs);
    if (seen.kind === "repeat") {
      this.stats.repeats++;
      this.#logger.debug("request already applied, answering with its first result", { index, issuer: env.id[0], seq: env.id[1], first: seen.index });
      return seen.result;
    }
    if (seen.kind === "expired") {
      this.stats.expired++;
      return seen.error;
    }
    const result = this.#applyCommand(index, env.command, env.atMs);
    this.#state.requests.record(env.id, index, result, env.atMs);
    return result;
  }

  #applyCommand(index: number, data: Uint8Array, atMs?: number): unknown {
    let cmd: unknown;
    try {
      cmd = decoder.decode(data);
    } catch (err) {
      throw new FsmError(`Failed to decode command at index ${index}`, { cause: err });
    }
    if (typeof cmd !== "object" || cmd === null || !isIndex((cmd as { type?: unknown }).type)) {
      throw new FsmError(`Command at index ${index} has no message type`);
    }
    const command = cmd as Command;
    this.#lastIndex = index;
    if (command.type === MessageType.Restore) return this.#applyRestore(index, command);
    // The ignore-unknown flag is not part of the type (Consul strips it before the lookup).
    const fn = this.#applies.get(command.type & ~ignoreUnknownTypeFlag);
    if (!fn) {
      if ((command.type & ignoreUnknownTypeFlag) !== 0) {
        this.#logger.warn("ignoring unknown message type, upgrade to a newer version", {
          type: command.type & ~ignoreUnknownTypeFlag,
          index,
        });
        return undefined;
      }
      throw new FsmError(`Failed to apply request: unknown message type ${command.type} at index ${index}`);
    }
    return fn({ index, state: this.#state, logger: this.#logger, atMs }, command);
  }

  /** A Restore entry: the same bytes give the same answer on every server, so a refusal changes nothing anywhere. */
  #applyRestore(index: number, command: Command): unknown {
    if (!(command.state instanceof Uint8Array)) return new Error("Restore command without state");
    let fresh: StateStore;
    try {
      fresh = StateStore.restoreSync(command.state, { logger: this.#logger });
    } catch (err) {
      return new Error(`Snapshot state is not valid: ${err instanceof Error ? err.message : String(err)}`);
    }
    fresh.raiseIndexes(index);
    const old = this.#state;
    fresh.adoptRequests(old);
    this.#state = fresh;
    old.abandon();
    this.#logger.info("state restored from a snapshot", { index, snapshotIndex: fresh.snapshotIndex });
    return true;
  }

  /** The whole state as one buffer (the Raft seam's shape). */
  snapshot(): Uint8Array {
    return concatBytes(this.#state.snapshot({ index: this.#lastIndex }));
  }

  /** The whole state as a lazy stream of chunks (point in time). */
  snapshotStream(): SnapshotFrames {
    return this.#state.snapshot({ index: this.#lastIndex });
  }

  /**
   * Replace the state with a snapshot's. The old store is abandoned, which
   * wakes every blocking query so it re-reads from the new one. On bad data
   * this throws and the old store stays.
   */
  async restore(data: ByteStream): Promise<void> {
    const fresh = await StateStore.restore(data, { logger: this.#logger });
    const old = this.#state;
    this.#state = fresh;
    this.#lastIndex = Math.max(fresh.snapshotIndex, fresh.lastIndex());
    old.abandon();
  }

  /** The Raft seam's streaming restore: a stored or received snapshot, described by `meta`. */
  async restoreStream(src: { meta: { index: number; userRestore?: boolean } } & SnapshotBytesAt): Promise<void> {
    const meta = src.meta;
    const fresh = await StateStore.restore(framesAt(src), { logger: this.#logger });
    if (meta.userRestore) this.installRestored(fresh, meta);
    else {
      const old = this.#state;
      this.#state = fresh;
      this.#lastIndex = Math.max(fresh.snapshotIndex, fresh.lastIndex());
      old.abandon();
    }
  }

  /**
   * Swap in a store built from an operator's snapshot (hashicorp/raft
   * Restore), at the index Raft gave it. Done the same way on every server
   * (the leader with the store it built while the archive arrived, the
   * others when they install the snapshot or restart from it), so they all
   * agree: every table index is raised to `index`, so blocking queries see
   * the change, and the request table starts empty (the ids in it belong
   * to the cluster the snapshot was saved from).
   */
  installRestored(fresh: StateStore, meta: { index: number }): void {
    fresh.raiseIndexes(meta.index);
    fresh.adoptRequests(new StateStore());
    const old = this.#state;
    this.#state = fresh;
    this.#lastIndex = meta.index;
    old.abandon();
    this.#logger.info("state restored from a user snapshot", { index: meta.index, snapshotIndex: fresh.snapshotIndex });
  }
}

// ---- command handlers ----

const kvsOps: ReadonlySet<string> = new Set<KvsOp>(["set", "cas", "delete", "delete-cas", "delete-tree", "lock", "unlock"]);

function readEntry(raw: unknown): KvsWriteEntry | Error {
  if (typeof raw !== "object" || raw === null) return new Error("Invalid KVS entry");
  const r = raw as Record<string, unknown>;
  if (typeof r.key !== "string") return new Error("Invalid KVS entry: missing key");
  if (r.flags !== undefined && !isKvFlags(r.flags)) return new Error("Invalid KVS entry: bad flags");
  if (r.modifyIndex !== undefined && !isIndex(r.modifyIndex)) return new Error("Invalid KVS entry: bad modify index");
  if (r.value !== undefined && r.value !== null && !(r.value instanceof Uint8Array)) {
    return new Error("Invalid KVS entry: value is not bytes");
  }
  if (r.session !== undefined && typeof r.session !== "string") return new Error("Invalid KVS entry: bad session");
  return {
    key: r.key,
    flags: r.flags as KvFlags | undefined,
    // Copy: the decoded bytes alias the log entry's buffer.
    value: r.value instanceof Uint8Array ? r.value.slice() : undefined,
    session: r.session as string | undefined,
    modifyIndex: r.modifyIndex as number | undefined,
  };
}

/** KVS: returns true/false (cas, delete-cas, lock, unlock answer whether they acted) or an Error. */
function applyKvs(ctx: ApplyContext, cmd: Command): unknown {
  const op = cmd.op;
  if (typeof op !== "string" || !kvsOps.has(op)) {
    ctx.logger.warn("invalid KVS operation", { operation: String(op), index: ctx.index });
    return new Error(`Invalid KVS operation '${String(op)}'`);
  }
  const entry = readEntry(cmd.entry);
  if (entry instanceof Error) return entry;
  const { index, state } = ctx;
  try {
    switch (op as KvsOp) {
      case "set":
        state.kvsSet(index, entry);
        return true;
      case "delete":
        state.kvsDelete(index, entry.key);
        return true;
      case "delete-tree":
        state.kvsDeleteTree(index, entry.key);
        return true;
      case "delete-cas":
        return state.kvsDeleteCas(index, entry.modifyIndex ?? 0, entry.key);
      case "cas":
        return state.kvsSetCas(index, entry);
      case "lock":
        // kvsPreApply's lock-delay check, made here for enveloped commands so
        // that a repeat is answered from the request table, not refused early.
        if (ctx.atMs !== undefined && kvsLockDelayUntil(state, entry.key, ctx.atMs) > 0) return false;
        return state.kvsLock(index, entry);
      case "unlock":
        return state.kvsUnlock(index, entry);
    }
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
  return new Error(`Invalid KVS operation '${op}'`);
}

/** Txn: returns `{ results, errors }`. */
function applyTxn(ctx: ApplyContext, cmd: Command): unknown {
  if (!Array.isArray(cmd.ops)) return new Error("Invalid transaction: ops is not a list");
  // Copy values: decoded bytes alias the log entry's buffer. Field types are
  // checked per op by txnDispatch, which reports bad ones with their opIndex.
  const ops = (cmd.ops as unknown[]).map((raw) => {
    const kv = (raw as { kv?: unknown } | null)?.kv as Record<string, unknown> | undefined;
    if (typeof kv !== "object" || kv === null || !(kv.value instanceof Uint8Array)) return raw as TxnOp;
    return { kv: { ...kv, value: kv.value.slice() } } as unknown as TxnOp;
  });
  // The leader's wall clock: in the command (nowMs), else the request envelope's.
  const nowMs = isIndex(cmd.nowMs) ? cmd.nowMs : ctx.atMs ?? 0;
  return ctx.state.txnRW(ctx.index, ops, { nowMs });
}

/** Tombstone reap: removes tombstones at or below reapIndex. */
function applyTombstone(ctx: ApplyContext, cmd: Command): unknown {
  if (!isIndex(cmd.reapIndex)) return new Error("Invalid tombstone request: bad reap index");
  ctx.state.reapTombstones(ctx.index, cmd.reapIndex);
  return true;
}
