// Apply functions for the Register, Deregister and Session FSM commands
// (consul agent/consul/fsm/commands_oss.go applyRegister, applyDeregister,
// applySessionOperation). The command bodies come from the leader's
// endpoints, already validated there; anything malformed here is returned as
// an Error (the proposer sees it), never thrown. The leader's wall clock
// (`nowMs`) rides in the command, so lock delays are the same on every server.

import type { CatalogDeregisterArgs, CatalogRegisterArgs } from "../rpc/methods.ts";
import { deregisterTxn, registerTxn } from "./catalog.ts";
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

/** Register: returns true or an Error. */
export function applyRegisterCommand(state: StateStore, index: number, cmd: Record<string, unknown>): unknown {
  if (typeof cmd.node !== "string" || typeof cmd.address !== "string") return new Error("Invalid register request: missing node or address");
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
      const s = cmd.session as SessionCreate | undefined;
      if (typeof s !== "object" || s === null || typeof s.id !== "string") return new Error("Invalid session request: missing session");
      return state.write(index, (tx) => sessionCreateFullTxn(tx, index, s)).id;
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
