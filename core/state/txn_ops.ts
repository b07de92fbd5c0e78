// Multi-op transactions (consul agent/consul/state/txn.go): every op runs in
// one write transaction; any error rolls all of them back. Errors carry the
// op's position and Consul's wording.

import { errorMessage } from "../errors.ts";
import type { DirEntry, TxnError, TxnKvOp, TxnOp, TxnResult } from "../rpc/methods.ts";
import {
  kvsCheckIndexTxn,
  kvsCheckSessionTxn,
  kvsDeleteCasTxn,
  kvsDeleteTreeTxn,
  kvsDeleteTxn,
  kvsGetTxn,
  kvsListTxn,
  kvsLockTxn,
  kvsSetCasTxn,
  kvsSetTxn,
  kvsUnlockTxn,
  goQuote,
} from "./kvs.ts";
import { isIndex } from "./kvs_schema.ts";
import type { ReadTxn, WriteTxn } from "./txn.ts";

export interface TxnOutcome {
  results: TxnResult[];
  errors: TxnError[];
}

const readVerbs: ReadonlySet<string> = new Set(["get", "get-tree", "check-index", "check-session", "check-not-exists"]);

/** True when no op writes (Consul serves these as Txn.Read, outside Raft). */
export function isReadOnlyTxn(ops: readonly TxnOp[]): boolean {
  return ops.every((op) => readVerbs.has(op.kv?.verb));
}

function withoutValue(e: DirEntry): DirEntry {
  return { ...e, value: new Uint8Array(0) };
}

function txnKvs(tx: WriteTxn | ReadTxn, idx: number, op: TxnKvOp, writable: boolean): TxnResult[] {
  const w = (): WriteTxn => {
    if (!writable) throw new Error(`${op.verb} is not allowed in a read-only transaction`);
    return tx as WriteTxn;
  };
  checkOp(op);
  const entry = { key: op.key, flags: op.flags, value: op.value, session: op.session, modifyIndex: op.index };
  let e: DirEntry | undefined;
  switch (op.verb) {
    case "set":
      e = kvsSetTxn(w(), idx, entry, false);
      break;
    case "delete":
      kvsDeleteTxn(w(), idx, op.key);
      break;
    case "delete-cas":
      if (!kvsDeleteCasTxn(w(), idx, op.index ?? 0, op.key)) {
        throw new Error(`failed to delete key ${goQuote(op.key)}, index is stale`);
      }
      break;
    case "delete-tree":
      kvsDeleteTreeTxn(w(), idx, op.key);
      break;
    case "cas":
      e = kvsSetCasTxn(w(), idx, entry);
      if (!e) throw new Error(`failed to set key ${goQuote(op.key)}, index is stale`);
      break;
    case "lock":
      e = kvsLockTxn(w(), idx, entry);
      if (!e) throw new Error(`failed to lock key ${goQuote(op.key)}, lock is already held`);
      break;
    case "unlock":
      e = kvsUnlockTxn(w(), idx, entry);
      if (!e) throw new Error(`failed to unlock key ${goQuote(op.key)}, lock isn't held, or is held by another session`);
      break;
    case "get":
      e = kvsGetTxn(tx, undefined, op.key).value;
      if (!e) throw new Error(`key ${goQuote(op.key)} doesn't exist`);
      return [{ kv: e }];
    case "get-tree":
      return kvsListTxn(tx, undefined, op.key).value.map((kv) => ({ kv }));
    case "check-session":
      e = kvsCheckSessionTxn(tx, op.key, op.session ?? "");
      break;
    case "check-index":
      e = kvsCheckIndexTxn(tx, op.key, op.index ?? 0);
      break;
    case "check-not-exists":
      if (kvsGetTxn(tx, undefined, op.key).value) throw new Error(`key ${goQuote(op.key)} exists`);
      break;
    default:
      throw new Error(`unknown KV verb ${goQuote(String((op as { verb: unknown }).verb))}`);
  }
  // Non-get verbs answer with the entry minus its value.
  return e ? [{ kv: withoutValue(e) }] : [];
}

/** Ops may come off the wire or the log: check field types before use. */
function checkOp(op: TxnKvOp): void {
  if (typeof op.key !== "string") throw new Error("Invalid KV operation: key must be a string");
  if (op.flags !== undefined && !isIndex(op.flags)) throw new Error("Invalid KV operation: bad flags");
  if (op.index !== undefined && !isIndex(op.index)) throw new Error("Invalid KV operation: bad index");
  if (op.session !== undefined && typeof op.session !== "string") throw new Error("Invalid KV operation: bad session");
  if (op.value !== undefined && !(op.value instanceof Uint8Array)) throw new Error("Invalid KV operation: value is not bytes");
}

/** Run every op; collect all errors. The caller commits only when errors is empty. */
export function txnDispatch(tx: WriteTxn | ReadTxn, idx: number, ops: readonly TxnOp[], writable: boolean): TxnOutcome {
  const results: TxnResult[] = [];
  const errors: TxnError[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    try {
      if (!op || typeof op !== "object" || !op.kv) throw new Error("unknown operation type");
      for (const r of txnKvs(tx, idx, op.kv, writable)) results.push(r);
    } catch (err) {
      errors.push({ opIndex: i, what: errorMessage(err) });
    }
  }
  return errors.length > 0 ? { results: [], errors } : { results, errors };
}
