// Txn endpoint family (consul agent/consul/txn_endpoint.go). Read-only
// transactions are answered from local state without Raft (Consul Txn.Read);
// writes are pre-checked, then replicated as one command.

import { TooLargeError } from "../errors.ts";
import type { RpcHandlers, TxnError, TxnOp } from "../rpc/methods.ts";
import { isReadOnlyTxn } from "../state/txn_ops.ts";
import type { TxnOutcome } from "../state/txn_ops.ts";
import { kvsMaxIndex } from "../state/kvs.ts";
import type { ServerContext } from "./context.ts";
import { raftApply, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";

/** Most operations in one transaction (Consul maxTxnOps). */
export const maxTxnOps = 128;

/** kvsPreApply for each op: every verb but delete-tree names a key. */
function preCheck(ops: readonly TxnOp[]): TxnError[] {
  const errors: TxnError[] = [];
  ops.forEach((op, i) => {
    const kv = op?.kv;
    if (!kv || typeof kv !== "object") {
      errors.push({ opIndex: i, what: "unknown operation type" });
    } else if ((kv.key === "" || kv.key === undefined) && kv.verb !== "delete-tree") {
      errors.push({ opIndex: i, what: "Must provide key" });
    }
  });
  return errors;
}

export function txnEndpoints(ctx: ServerContext): Pick<RpcHandlers, "Txn.Apply"> {
  return {
    async "Txn.Apply"(args, options) {
      const ops = Array.isArray(args?.ops) ? args.ops : [];
      if (ops.length > maxTxnOps) {
        throw new TooLargeError(`Transaction contains too many operations (${ops.length} > ${maxTxnOps})`, maxTxnOps);
      }
      const errors = preCheck(ops);
      if (errors.length > 0) return { results: [], errors, index: 0 };
      requireLeader(ctx);
      if (isReadOnlyTxn(ops)) {
        const state = ctx.fsm.state;
        const out = state.txnRO(ops);
        const index = kvsMaxIndex(state);
        return { results: out.results, errors: out.errors, index: index > 0 ? index : 1 };
      }
      const { index, result } = await raftApply(ctx, encodeCommand(MessageType.Txn, { ops }), options);
      const out = result as TxnOutcome;
      return { results: out.errors.length > 0 ? [] : out.results, errors: out.errors, index };
    },
  };
}
