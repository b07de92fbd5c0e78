// Multi-op transactions (consul agent/consul/state/txn.go): KV, Node,
// Service and Check operations run in one write transaction; any error rolls
// all of them back. Errors carry the op's position and Consul's wording.

import { errorMessage } from "../errors.ts";
import { isKvFlags, type DirEntry, type HealthCheck, type Node, type NodeService, type TxnCheckOp, type TxnError, type TxnKvOp, type TxnNodeOp, type TxnOp, type TxnResult, type TxnServiceOp } from "../rpc/methods.ts";
import { deleteCheckTxn, deleteNodeTxn, deleteServiceTxn, ensureCheckTxn, ensureNodeTxn, ensureServiceTxn, isCheckStatus, toNodeService } from "./catalog.ts";
import type { WriteClock } from "./catalog.ts";
import { checkKey, nodeKey, serviceKey } from "./catalog_schema.ts";
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

const readVerbs: ReadonlySet<string> = new Set(["get", "get-or-empty", "get-tree", "check-index", "check-session", "check-not-exists"]);

/** The verb of whichever kind of op this is (undefined for a malformed op). */
export function txnOpVerb(op: TxnOp | null | undefined): unknown {
  if (!op || typeof op !== "object") return undefined;
  return (op.kv ?? op.node ?? op.service ?? op.check)?.verb;
}

/** True when no op writes (Consul serves these as Txn.Read, outside Raft). */
export function isReadOnlyTxn(ops: readonly TxnOp[]): boolean {
  return ops.every((op) => readVerbs.has(txnOpVerb(op) as string));
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
    case "get-or-empty":
      // Consul: the entry, or the op's own key with no value when it does not exist.
      e = kvsGetTxn(tx, undefined, op.key).value;
      return [{ kv: e ?? { key: op.key, flags: op.flags ?? 0, value: new Uint8Array(0), session: op.session ?? "", lockIndex: 0, createIndex: 0, modifyIndex: op.index ?? 0 } }];
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
  if (op.flags !== undefined && !isKvFlags(op.flags)) throw new Error("Invalid KV operation: bad flags");
  if (op.index !== undefined && !isIndex(op.index)) throw new Error("Invalid KV operation: bad index");
  if (op.session !== undefined && typeof op.session !== "string") throw new Error("Invalid KV operation: bad session");
  if (op.value !== undefined && !(op.value instanceof Uint8Array)) throw new Error("Invalid KV operation: value is not bytes");
}

// ---- Node, Service and Check ops (consul txnNode, txnService, txnCheck) ----

const isStr = (v: unknown): v is string => typeof v === "string";
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
const optStr = (v: unknown) => v === undefined || isStr(v);
const optStrMap = (v: unknown) => v === undefined || (isObj(v) && Object.values(v).every(isStr));
const optIndex = (v: unknown) => v === undefined || isIndex(v);

function writer(tx: WriteTxn | ReadTxn, writable: boolean, verb: string): WriteTxn {
  if (!writable) throw new Error(`${verb} is not allowed in a read-only transaction`);
  return tx as WriteTxn;
}

function findNode(tx: ReadTxn, n: TxnNodeOp["node"]): Node | undefined {
  if (n.id) {
    const id = n.id.toLowerCase();
    let found: Node | undefined;
    tx.tables.nodes.scan("", (row) => {
      if (row.id.toLowerCase() !== id) return;
      found = row;
      return false;
    });
    return found;
  }
  return tx.tables.nodes.get(nodeKey(n.node));
}

function txnNode(tx: WriteTxn | ReadTxn, idx: number, op: TxnNodeOp, writable: boolean, clock: WriteClock): TxnResult[] {
  const n = op.node;
  if (!isObj(n) || !isStr(n.node) || !optStr(n.id) || !optStr(n.address) || !optStr(n.datacenter) || !optStrMap(n.taggedAddresses) || !optStrMap(n.meta) || !optIndex(n.modifyIndex)) {
    throw new Error("Invalid Node operation: malformed node");
  }
  const input = { id: n.id ?? "", node: n.node, address: n.address ?? "", datacenter: n.datacenter ?? "", taggedAddresses: { ...(n.taggedAddresses ?? {}) }, meta: { ...(n.meta ?? {}) } };
  switch (op.verb) {
    case "get": {
      const found = findNode(tx, n);
      if (!found) throw new Error(`node ${goQuote(n.node)} doesn't exist`);
      return [{ node: found }];
    }
    case "set": {
      const w = writer(tx, writable, op.verb);
      ensureNodeTxn(w, idx, input);
      return [{ node: findNode(w, n)! }];
    }
    case "cas": {
      const w = writer(tx, writable, op.verb);
      // A ModifyIndex of 0 means: set only when the node does not exist yet.
      if ((findNode(w, { node: n.node })?.modifyIndex ?? 0) !== (n.modifyIndex ?? 0)) throw new Error(`failed to set node ${goQuote(n.node)}, index is stale`);
      ensureNodeTxn(w, idx, input);
      return [{ node: findNode(w, n)! }];
    }
    case "delete":
      deleteNodeTxn(writer(tx, writable, op.verb), idx, clock, n.node);
      return [];
    case "delete-cas": {
      const w = writer(tx, writable, op.verb);
      const existing = w.tables.nodes.get(nodeKey(n.node));
      if (!existing || existing.modifyIndex !== (n.modifyIndex ?? 0)) throw new Error(`failed to delete node ${goQuote(n.node)}, index is stale`);
      deleteNodeTxn(w, idx, clock, n.node);
      return [];
    }
    default:
      throw new Error(`unknown Node verb ${goQuote(String((op as { verb: unknown }).verb))}`);
  }
}

function getService(tx: ReadTxn, node: string, id: string): NodeService | undefined {
  const row = tx.tables.services.get(serviceKey(node, id));
  return row ? toNodeService(row) : undefined;
}

function txnService(tx: WriteTxn | ReadTxn, idx: number, op: TxnServiceOp, writable: boolean, clock: WriteClock): TxnResult[] {
  const svc = op.service;
  if (!isStr(op.node) || !isObj(svc) || !isStr(svc.service) || !optStr(svc.id) || !optIndex(svc.modifyIndex)) throw new Error("Invalid Service operation: malformed service");
  const id = svc.id || svc.service;
  const { modifyIndex, ...input } = svc;
  switch (op.verb) {
    case "get": {
      const found = getService(tx, op.node, id);
      if (!found) throw new Error(`service ${goQuote(id)} on node ${goQuote(op.node)} doesn't exist`);
      return [{ service: found }];
    }
    case "set": {
      const w = writer(tx, writable, op.verb);
      ensureServiceTxn(w, idx, op.node, input);
      return [{ service: getService(w, op.node, id)! }];
    }
    case "cas": {
      const w = writer(tx, writable, op.verb);
      const existing = getService(w, op.node, id);
      // 0: set only when it does not exist yet; otherwise only over that very version.
      if ((modifyIndex ?? 0) !== (existing?.modifyIndex ?? 0)) throw new Error(`failed to set service ${goQuote(id)} on node ${goQuote(op.node)}, index is stale`);
      ensureServiceTxn(w, idx, op.node, input);
      return [{ service: getService(w, op.node, id)! }];
    }
    case "delete":
      deleteServiceTxn(writer(tx, writable, op.verb), idx, clock, op.node, id);
      return [];
    case "delete-cas": {
      const w = writer(tx, writable, op.verb);
      const existing = getService(w, op.node, id);
      if (!existing || existing.modifyIndex !== (modifyIndex ?? 0)) throw new Error(`failed to delete service ${goQuote(id)} on node ${goQuote(op.node)}, index is stale`);
      deleteServiceTxn(w, idx, clock, op.node, id);
      return [];
    }
    default:
      throw new Error(`unknown Service verb ${goQuote(String((op as { verb: unknown }).verb))}`);
  }
}

function getCheck(tx: ReadTxn, node: string, checkId: string): HealthCheck | undefined {
  return tx.tables.checks.get(checkKey(node, checkId));
}

function txnCheck(tx: WriteTxn | ReadTxn, idx: number, op: TxnCheckOp, writable: boolean, clock: WriteClock): TxnResult[] {
  const c = op.check;
  if (!isObj(c) || !isStr(c.node) || !optStr(c.name) || !optStr(c.checkId) || !optStr(c.serviceId) || !optIndex(c.modifyIndex)) throw new Error("Invalid Check operation: malformed check");
  if (c.status !== undefined && !isCheckStatus(c.status)) throw new Error(`Invalid Check operation: bad status ${goQuote(String(c.status))}`);
  const checkId = c.checkId || c.name || "";
  const { modifyIndex, ...input } = c;
  switch (op.verb) {
    case "get": {
      const found = getCheck(tx, c.node, checkId);
      if (!found) throw new Error(`check ${goQuote(checkId)} on node ${goQuote(c.node)} doesn't exist`);
      return [{ check: found }];
    }
    case "set": {
      const w = writer(tx, writable, op.verb);
      ensureCheckTxn(w, idx, clock, c.node, { ...input, name: c.name ?? "" });
      return [{ check: getCheck(w, c.node, checkId)! }];
    }
    case "cas": {
      const w = writer(tx, writable, op.verb);
      const existing = getCheck(w, c.node, checkId);
      if ((modifyIndex ?? 0) !== (existing?.modifyIndex ?? 0)) throw new Error(`failed to set check ${goQuote(checkId)} on node ${goQuote(c.node)}, index is stale`);
      ensureCheckTxn(w, idx, clock, c.node, { ...input, name: c.name ?? "" });
      return [{ check: getCheck(w, c.node, checkId)! }];
    }
    case "delete":
      deleteCheckTxn(writer(tx, writable, op.verb), idx, clock, c.node, checkId);
      return [];
    case "delete-cas": {
      const w = writer(tx, writable, op.verb);
      const existing = getCheck(w, c.node, checkId);
      if (!existing || existing.modifyIndex !== (modifyIndex ?? 0)) throw new Error(`failed to delete check ${goQuote(checkId)} on node ${goQuote(c.node)}, index is stale`);
      deleteCheckTxn(w, idx, clock, c.node, checkId);
      return [];
    }
    default:
      throw new Error(`unknown Check verb ${goQuote(String((op as { verb: unknown }).verb))}`);
  }
}

/**
 * Run every op; collect all errors. The caller commits only when errors is
 * empty. `clock` is the leader's wall clock at proposal (lock delays of the
 * sessions a check or node deletion invalidates).
 */
export function txnDispatch(tx: WriteTxn | ReadTxn, idx: number, ops: readonly TxnOp[], writable: boolean, clock: WriteClock = { nowMs: 0 }): TxnOutcome {
  const results: TxnResult[] = [];
  const errors: TxnError[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    try {
      let out: TxnResult[];
      if (!op || typeof op !== "object") throw new Error("no operation specified");
      else if (op.kv) out = txnKvs(tx, idx, op.kv, writable);
      else if (op.node) out = txnNode(tx, idx, op.node, writable, clock);
      else if (op.service) out = txnService(tx, idx, op.service, writable, clock);
      else if (op.check) out = txnCheck(tx, idx, op.check, writable, clock);
      else throw new Error("no operation specified");
      for (const r of out) results.push(r);
    } catch (err) {
      errors.push({ opIndex: i, what: errorMessage(err) });
    }
  }
  return errors.length > 0 ? { results: [], errors } : { results, errors };
}
