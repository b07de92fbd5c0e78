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
import { aclIdentity, type AclIdentity } from "./acl.ts";
import { permissionDeniedReason } from "../acl/authorizer.ts";

const kvReadVerbs: ReadonlySet<string> = new Set(["get", "get-or-empty", "get-tree", "check-index", "check-session", "check-not-exists"]);

/** Consul's txn ACL checks: every op is allowed by the caller's token or the whole transaction fails with one error per refused op. */
function aclCheck(id: AclIdentity, ops: readonly TxnOp[]): TxnError[] {
  const errors: TxnError[] = [];
  const deny = (i: number, resource: "key" | "node" | "service", access: "read" | "write", name: string) =>
    errors.push({ opIndex: i, what: `Permission denied: ${permissionDeniedReason(id.accessorId, resource, access, name)}` });
  ops.forEach((op, i) => {
    if (op.kv) {
      const key = op.kv.key ?? "";
      if (kvReadVerbs.has(op.kv.verb)) {
        if (!id.authz.allowed("key", "read", key)) deny(i, "key", "read", key);
      } else if (op.kv.verb === "delete-tree" ? !id.authz.keyWritePrefix(key) : !id.authz.allowed("key", "write", key)) deny(i, "key", "write", key);
    } else if (op.node) {
      const name = op.node.node?.node ?? "";
      if (!id.authz.allowed("node", op.node.verb === "get" ? "read" : "write", name)) deny(i, "node", op.node.verb === "get" ? "read" : "write", name);
    } else if (op.service) {
      const name = op.service.service?.service ?? "";
      if (!id.authz.allowed("service", op.service.verb === "get" ? "read" : "write", name)) deny(i, "service", op.service.verb === "get" ? "read" : "write", name);
    } else if (op.check) {
      const name = op.check.check?.node ?? "";
      if (!id.authz.allowed("node", op.check.verb === "get" ? "read" : "write", name)) deny(i, "node", op.check.verb === "get" ? "read" : "write", name);
    }
  });
  return errors;
}

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
      const id = aclIdentity(ctx, args.token ?? args.query?.token);
      if (id) {
        const denied = aclCheck(id, ops);
        if (denied.length > 0) return { results: [], errors: denied, index: 0 };
      }
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
