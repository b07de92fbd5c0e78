// Txn endpoint family (consul agent/consul/txn_endpoint.go): KV, Node,
// Service and Check operations. Read-only
// transactions are answered from local state without Raft (Consul Txn.Read);
// writes are pre-checked, then replicated as one command.

import { TooLargeError } from "../errors.ts";
import type { RpcHandlers, TxnError, TxnOp } from "../rpc/methods.ts";
import { catalogMaxIndex } from "../state/catalog.ts";
import { isReadOnlyTxn, txnOpVerb } from "../state/txn_ops.ts";
import type { TxnOutcome } from "../state/txn_ops.ts";
import { kvsMaxIndex } from "../state/kvs.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";

/** Most operations in one transaction (Consul maxTxnOps). */
export const maxTxnOps = 128;

/** kvsPreApply for each KV op: every verb but delete-tree names a key. Node, Service and Check ops are checked by the state store. */
function preCheck(ops: readonly TxnOp[]): TxnError[] {
  const errors: TxnError[] = [];
  ops.forEach((op, i) => {
    if (!op || typeof op !== "object" || typeof txnOpVerb(op) !== "string") {
      errors.push({ opIndex: i, what: "no operation specified" });
      return;
    }
    const kv = op.kv;
    if (kv && (kv.key === "" || kv.key === undefined) && kv.verb !== "delete-tree") {
      errors.push({ opIndex: i, what: "Must provide key" });
    }
  });
  return errors;
}

export function txnEndpoints(ctx: ServerContext): Pick<RpcHandlers, "Txn.Apply"> {
  return withCheckedArgs<"Txn.Apply">({
    async "Txn.Apply"(args, options) {
      const ops = Array.isArray(args?.ops) ? args.ops : [];
      if (ops.length > maxTxnOps) {
        throw new TooLargeError(`Transaction contains too many operations (${ops.length} > ${maxTxnOps})`, maxTxnOps);
      }
      const errors = preCheck(ops);
      if (errors.length > 0) return { results: [], errors, index: 0 };
      if (isReadOnlyTxn(ops)) {
        // Consul Txn.Read: a read, with the read's consistency modes and meta (never blocking).
        const q = { ...(args.query ?? { allowStale: false, requireConsistent: false, maxQueryTimeMs: 0 }), minQueryIndex: 0 };
        const { value: out, meta } = await read(ctx, q, (state) => {
          const index = Math.max(kvsMaxIndex(state), catalogMaxIndex(state));
          return { index: index > 0 ? index : 1, value: state.txnRO(ops) };
        }, options);
        return { results: out.results, errors: out.errors, index: meta.index, meta };
      }
      requireLeader(ctx);
      // The leader's wall clock rides along: a check or node deletion invalidates sessions with their lock delay.
      const { index, result } = await raftApply(ctx, encodeCommand(MessageType.Txn, { ops, nowMs: ctx.clock.wallNow() }), options);
      const out = result as TxnOutcome;
      return { results: out.errors.length > 0 ? [] : out.results, errors: out.errors, index };
    },
  });
}
