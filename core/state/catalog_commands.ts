// Apply functions for the Register, Deregister and Session FSM commands
// (consul agent/consul/fsm/commands_oss.go applyRegister, applyDeregister,
// applySessionOperation). The command bodies come from the leader's
// endpoints, already validated there; anything malformed here is returned as
// an Error (the proposer sees it), never thrown. The leader's wall clock
// (`nowMs`) rides in the command, so lock delays are the same on every server.

import type { CatalogDeregisterArgs, CatalogRegisterArgs } from "../rpc/methods.ts";
import { deregisterTxn, isCheckStatus, registerTxn } from "./catalog.ts";
import { isIndex } from "./kvs_schema.ts";
import { sessionCreateFullTxn, sessionInvalidateTxn } from "./session_ops.ts";
import type { SessionCreate } from "./session_ops.ts";
import type { StateStore } from "./store.ts";

export type RegisterCommand = Omit<CatalogRegisterArgs, "token"> & { nowMs?: number };
export type DeregisterCommand = Omit<CatalogDeregisterArgs, "token"> & { nowMs?: number };
export type SessionCommand =
  | { op: "create"; session: SessionCreate }
  | { op: "destroy"; id: string; nowMs?: number };

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

function clockOf(cmd: Record<string, unknown>): { nowMs: number } {
  return { nowMs: isIndex(cmd.nowMs) ? cmd.nowMs : 0 };
}

const isStr = (v: unknown): v is string => typeof v === "string";
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
const optStr = (v: unknown) => v === undefined || isStr(v);
const optStrList = (v: unknown) => v === undefined || (Array.isArray(v) && v.every(isStr));
const optStrMap = (v: unknown) => v === undefined || (isObj(v) && Object.values(v).every(isStr));
const optNum = (v: unknown) => v === undefined || (typeof v === "number" && Number.isFinite(v));

/** Why a Register command's body is malformed, or undefined when it is well-formed. */
export function registerCommandProblem(cmd: Record<string, unknown>): string | undefined {
  if (!isStr(cmd.node) || !isStr(cmd.address)) return "missing node or address";
  if (!optStr(cmd.id) || !optStr(cmd.datacenter) || !optStrMap(cmd.taggedAddresses) || !optStrMap(cmd.nodeMeta)) return "bad node fields";
  const s = cmd.service;
  if (s !== undefined) {
    if (!isObj(s) || !isStr(s.service) || !optStr(s.id) || !optStr(s.kind) || !optStr(s.address)) return "bad service";
    if (!optStrList(s.tags) || !optStrMap(s.meta) || !optNum(s.port)) return "bad service fields";
    if (s.weights !== undefined && (!isObj(s.weights) || !optNum(s.weights.passing) || !optNum(s.weights.warning))) return "bad service weights";
    if (s.taggedAddresses !== undefined && (!isObj(s.taggedAddresses) || !Object.values(s.taggedAddresses).every((a) => isObj(a) && isStr(a.address) && typeof a.port === "number"))) {
      return "bad service tagged addresses";
    }
    if (s.enableTagOverride !== undefined && typeof s.enableTagOverride !== "boolean") return "bad service fields";
  }
  const checks = [...(cmd.check !== undefined ? [cmd.check] : []), ...(Array.isArray(cmd.checks) ? cmd.checks : cmd.checks === undefined ? [] : [null])];
  for (const c of checks) {
    if (!isObj(c) || !optStr(c.name) || !optStr(c.checkId) || !optStr(c.node) || !optStr(c.serviceId)) return "bad check";
    if (c.status !== undefined && !isCheckStatus(c.status)) return `bad check status ${JSON.stringify(c.status)}`;
    for (const f of ["notes", "output", "type", "interval", "timeout"]) if (!optStr(c[f])) return "bad check fields";
    if (c.definition !== undefined && !isObj(c.definition)) return "bad check definition";
  }
  return undefined;
}

/** Register: returns true or an Error. */
export function applyRegisterCommand(state: StateStore, index: number, cmd: Record<string, unknown>): unknown {
  const problem = registerCommandProblem(cmd);
  if (problem) return new Error(`Invalid register request: ${problem}`);
  try {
    state.write(index, (tx) => registerTxn(tx, index, clockOf(cmd), cmd as unknown as RegisterCommand));
    return true;
  } catch (err) {
    return asError(err);
  }
}

/** Deregister: returns true or an Error. */
export function applyDeregisterCommand(state: StateStore, index: number, cmd: Record<string, unknown>): unknown {
  if (typeof cmd.node !== "string") return new Error("Invalid deregister request: missing node");
  for (const f of ["serviceId", "checkId"]) {
    if (cmd[f] !== undefined && typeof cmd[f] !== "string") return new Error(`Invalid deregister request: bad ${f}`);
  }
  try {
    state.write(index, (tx) => deregisterTxn(tx, index, clockOf(cmd), cmd as unknown as DeregisterCommand));
    return true;
  } catch (err) {
    return asError(err);
  }
}

/** Session create → the session ID; destroy → true. An Error otherwise. */
export function applySessionCommand(state: StateStore, index: number, cmd: Record<string, unknown>): unknown {
  try {
    if (cmd.op === "create") {
      const s = cmd.session as unknown;
      if (!isObj(s) || !isStr(s.id) || !isStr(s.node) || !optStr(s.name) || !optStr(s.ttl) || !optNum(s.lockDelayMs)) {
        return new Error("Invalid session request: missing session");
      }
      if (!Array.isArray(s.nodeChecks) || !s.nodeChecks.every(isStr) || !Array.isArray(s.serviceChecks) || !s.serviceChecks.every((c) => isObj(c) && isStr(c.id))) {
        return new Error("Invalid session request: bad checks");
      }
      if (s.behavior !== "release" && s.behavior !== "delete") return new Error("Invalid session request: bad behavior");
      const session = s as SessionCreate;
      return state.write(index, (tx) => sessionCreateFullTxn(tx, index, session)).id;
    }
    if (cmd.op === "destroy") {
      if (typeof cmd.id !== "string") return new Error("Invalid session request: missing session ID");
      const id = cmd.id;
      state.write(index, (tx) => sessionInvalidateTxn(tx, index, clockOf(cmd), id));
      return true;
    }
    return new Error(`Invalid session operation ${JSON.stringify(String(cmd.op))}`);
  } catch (err) {
    return asError(err);
  }
}
