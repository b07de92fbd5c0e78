// KV operations, shaped after consul agent/consul/state/kvs.go: each
// `kvsXxxTxn` helper works inside a transaction so helpers compose (the
// public StateStore ops and Txn both call them). Writes take the Raft index;
// reads take a WatchSet and return `{ index, value }`.

import { StateError } from "../errors.ts";
import type { DirEntry, KvFlags } from "../rpc/methods.ts";
import { makeDirEntry } from "./kvs_schema.ts";
import { sessionGetTxn } from "./session.ts";
import { graveyardInsertTxn, graveyardMaxIndexTxn } from "./tombstones.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";
import type { WatchSet } from "./watch.ts";

/** A read's answer and the Raft index it reflects. */
export interface Indexed<T> {
  index: number;
  value: T;
}

/** What a KV write carries in. Missing fields mean 0 / "" / empty. */
export interface KvsWriteEntry {
  key: string;
  flags?: KvFlags;
  value?: Uint8Array;
  session?: string;
  /** For cas / delete-cas: the expected ModifyIndex. */
  modifyIndex?: number;
  lockIndex?: number;
}

const emptyValue = new Uint8Array(0);

/** Max index of the KV tables (kvs and tombstones), as Consul's kvsMaxIndex. */
export function kvsMaxIndex(tx: ReadTxn): number {
  return tx.maxIndex("kvs", "tombstones");
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sameEntry(a: DirEntry, b: DirEntry): boolean {
  return a.key === b.key && a.flags === b.flags && a.session === b.session && a.lockIndex === b.lockIndex &&
    sameBytes(a.value, b.value);
}

/**
 * Insert or update a key. Keeps the existing session unless updateSession;
 * an unchanged entry is not rewritten (its ModifyIndex stays). Returns the
 * entry as stored.
 */
export function kvsSetTxn(tx: WriteTxn, idx: number, entry: KvsWriteEntry, updateSession: boolean): DirEntry {
  const existing = tx.tables.kvs.get(entry.key);
  const session = updateSession ? (entry.session ?? "") : (existing?.session ?? "");
  const candidate: DirEntry = {
    key: entry.key,
    flags: entry.flags ?? 0,
    value: entry.value ?? emptyValue,
    session,
    lockIndex: entry.lockIndex ?? 0,
    createIndex: existing ? existing.createIndex : idx,
    modifyIndex: idx,
  };
  if (existing && sameEntry(existing, candidate)) return existing;
  const row = makeDirEntry(candidate);
  tx.insert(tx.tables.kvs, row);
  tx.setIndex("kvs", idx);
  return row;
}

/** One key and the KV table index (callers answer with the entry's ModifyIndex when it exists). */
export function kvsGetTxn(tx: ReadTxn, ws: WatchSet | undefined, key: string): Indexed<DirEntry | undefined> {
  return { index: kvsMaxIndex(tx), value: tx.tables.kvs.getWatch(key, ws) };
}

/** Every entry under prefix; the index is the highest of their ModifyIndexes and the prefix's tombstones. */
export function kvsListTxn(tx: ReadTxn, ws: WatchSet | undefined, prefix: string): Indexed<DirEntry[]> {
  const idx = kvsMaxIndex(tx);
  const entries = tx.tables.kvs.prefix(prefix, ws);
  let lindex = 0;
  for (const e of entries) if (e.modifyIndex > lindex) lindex = e.modifyIndex;
  lindex = prefixIndex(tx, prefix, lindex, idx);
  return { index: lindex !== 0 ? lindex : idx, value: entries };
}

function prefixIndex(tx: ReadTxn, prefix: string, lindex: number, tableIndex: number): number {
  if (prefix === "") return tableIndex;
  const gindex = graveyardMaxIndexTxn(tx, prefix);
  return gindex > lindex ? gindex : lindex;
}

/** Keys under prefix, rolled up after the first separator past the prefix (Consul ListKeys). */
export function kvsListKeysTxn(
  tx: ReadTxn,
  ws: WatchSet | undefined,
  prefix: string,
  separator: string,
): Indexed<string[]> {
  const idx = kvsMaxIndex(tx);
  if (ws) tx.tables.kvs.watches.watchPrefix(ws, prefix);
  const keys: string[] = [];
  let lindex = 0;
  let last = "";
  tx.tables.kvs.scan(prefix, (e) => {
    if (e.modifyIndex > lindex) lindex = e.modifyIndex;
    if (separator === "") {
      keys.push(e.key);
      return;
    }
    const at = e.key.indexOf(separator, prefix.length);
    if (at >= 0) {
      const rolled = e.key.slice(0, at + separator.length);
      if (rolled !== last) {
        keys.push(rolled);
        last = rolled;
      }
    } else {
      keys.push(e.key);
    }
  });
  lindex = prefixIndex(tx, prefix, lindex, idx);
  return { index: lindex !== 0 ? lindex : idx, value: keys };
}

/** Delete one key, leaving a tombstone. Absent keys are a no-op. */
export function kvsDeleteTxn(tx: WriteTxn, idx: number, key: string): void {
  if (!tx.tables.kvs.get(key)) return;
  graveyardInsertTxn(tx, key, idx);
  tx.delete(tx.tables.kvs, key);
  tx.setIndex("kvs", idx);
}

/**
 * Delete if the key's ModifyIndex equals cidx. A key that does not exist
 * counts as success (Consul returns `entry == nil`).
 */
export function kvsDeleteCasTxn(tx: WriteTxn, idx: number, cidx: number, key: string): boolean {
  const e = tx.tables.kvs.get(key);
  if (!e || e.modifyIndex !== cidx) return e === undefined;
  kvsDeleteTxn(tx, idx, key);
  return true;
}

/** Set if entry.modifyIndex matches; modifyIndex 0 means "only if absent". */
export function kvsSetCasTxn(tx: WriteTxn, idx: number, entry: KvsWriteEntry): DirEntry | undefined {
  const existing = tx.tables.kvs.get(entry.key);
  const cidx = entry.modifyIndex ?? 0;
  if (cidx === 0 && existing) return undefined;
  if (cidx !== 0 && !existing) return undefined;
  if (existing && cidx !== 0 && cidx !== existing.modifyIndex) return undefined;
  return kvsSetTxn(tx, idx, entry, false);
}

/**
 * Delete every key under prefix, leaving one tombstone for the prefix. Consul
 * skips the tombstone for "" (the table index covers a root listing), but a
 * listing of "a/" whose own stones are older would then go backwards; the ""
 * stone keeps every prefix's index moving forward.
 */
export function kvsDeleteTreeTxn(tx: WriteTxn, idx: number, prefix: string): void {
  const deleted = tx.deletePrefix(tx.tables.kvs, prefix);
  if (deleted.length === 0) return;
  graveyardInsertTxn(tx, prefix, idx);
  tx.setIndex("kvs", idx);
}

/**
 * Acquire the lock on entry.key for entry.session (and write the value).
 * Returns the stored entry, or undefined if another session holds it.
 * Throws StateError for a missing or unknown session.
 */
export function kvsLockTxn(tx: WriteTxn, idx: number, entry: KvsWriteEntry): DirEntry | undefined {
  const session = entry.session ?? "";
  if (session === "") throw new StateError("missing session");
  if (!sessionGetTxn(tx, session)) throw new StateError(`invalid session ${JSON.stringify(session)}`);
  const existing = tx.tables.kvs.get(entry.key);
  let lockIndex: number;
  if (existing) {
    if (existing.session === session) lockIndex = existing.lockIndex;
    else if (existing.session !== "") return undefined;
    else lockIndex = existing.lockIndex + 1;
  } else {
    lockIndex = 1;
  }
  return kvsSetTxn(tx, idx, { ...entry, session, lockIndex }, true);
}

/**
 * Release the lock if entry.session holds it (and write the value).
 * Returns the stored entry, or undefined if the key is absent or held by
 * someone else. Throws StateError for a missing session.
 */
export function kvsUnlockTxn(tx: WriteTxn, idx: number, entry: KvsWriteEntry): DirEntry | undefined {
  const session = entry.session ?? "";
  if (session === "") throw new StateError("missing session");
  const existing = tx.tables.kvs.get(entry.key);
  if (!existing || existing.session !== session) return undefined;
  return kvsSetTxn(tx, idx, { ...entry, session: "", lockIndex: existing.lockIndex }, true);
}

/** Txn check-session: the key must exist and be held by session ("" = unlocked). */
export function kvsCheckSessionTxn(tx: ReadTxn, key: string, session: string): DirEntry {
  const e = tx.tables.kvs.get(key);
  if (!e) throw new StateError(`failed to check session, key ${goQuote(key)} doesn't exist`);
  if (e.session !== session) {
    throw new StateError(
      `failed session check for key ${goQuote(key)}, current session ${goQuote(e.session)} != ${goQuote(session)}`,
    );
  }
  return e;
}

/** Txn check-index: the key must exist with this ModifyIndex. */
export function kvsCheckIndexTxn(tx: ReadTxn, key: string, cidx: number): DirEntry {
  const e = tx.tables.kvs.get(key);
  if (!e) throw new StateError(`failed to check index, key ${goQuote(key)} doesn't exist`);
  if (e.modifyIndex !== cidx) {
    throw new StateError(
      `failed index check for key ${goQuote(key)}, current modify index ${e.modifyIndex} != ${cidx}`,
    );
  }
  return e;
}

/** Go's %q for the common case (JSON string quoting matches it for printable text). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/**
 * A session ended: release ("release") or delete ("delete") every key it
 * holds, as Consul's session invalidation does. Returns the affected keys
 * (the caller applies lock-delay to them). Scans the table: fine for now; a
 * session index on kvs can replace the scan if it shows up in profiles.
 */
export function kvsSessionInvalidateTxn(
  tx: WriteTxn,
  idx: number,
  session: string,
  behavior: "release" | "delete",
): string[] {
  if (session === "") return [];
  const held: DirEntry[] = [];
  tx.tables.kvs.scan("", (e) => {
    if (e.session === session) held.push(e);
  });
  for (const e of held) {
    if (behavior === "delete") kvsDeleteTxn(tx, idx, e.key);
    else kvsSetTxn(tx, idx, { key: e.key, flags: e.flags, value: e.value, session: "", lockIndex: e.lockIndex }, true);
  }
  return held.map((e) => e.key);
}
