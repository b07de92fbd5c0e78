// KVS endpoint family (consul agent/consul/kvs_endpoint.go).

import { BadRequestError } from "../errors.ts";
import { isKvFlags, type KvsOp, type RpcHandlers } from "../rpc/methods.ts";
import { isIndex } from "../state/kvs_schema.ts";
import { kvsLockDelayUntil } from "../state/session_ops.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { aclAuthorize, aclIdentity } from "./acl.ts";
import { PermissionDeniedError } from "../errors.ts";
import { permissionDeniedReason } from "../acl/authorizer.ts";

const kvsOps: ReadonlySet<string> = new Set<KvsOp>(["set", "cas", "delete", "delete-cas", "delete-tree", "lock", "unlock"]);
/** Ops whose reply says whether they acted; the others always answer true (consul KVSPut/KVSDelete). */
const conditionalOps: ReadonlySet<string> = new Set<KvsOp>(["cas", "delete-cas", "lock", "unlock"]);
const emptyValue = new Uint8Array(0);

type KvsHandlers = Pick<RpcHandlers, "KVS.Apply" | "KVS.Get" | "KVS.List" | "KVS.ListKeys">;

export function kvsEndpoints(ctx: ServerContext): KvsHandlers {
  return withCheckedArgs<keyof KvsHandlers>({
    async "KVS.Apply"(args, options) {
      const { op, entry } = args ?? {};
      if (typeof op !== "string" || !kvsOps.has(op)) throw new BadRequestError(`Invalid KVS operation ${JSON.stringify(String(op))}`);
      if (typeof entry !== "object" || entry === null || typeof entry.key !== "string") {
        throw new BadRequestError("Must provide key");
      }
      // kvsPreApply: every op but delete-tree names a key.
      if (entry.key === "" && op !== "delete-tree") throw new BadRequestError("Must provide key");
      if (entry.flags !== undefined && !isKvFlags(entry.flags)) throw new BadRequestError(`Invalid flags ${JSON.stringify(entry.flags)}`);
      if (entry.modifyIndex !== undefined && !isIndex(entry.modifyIndex)) {
        throw new BadRequestError(`Invalid index ${JSON.stringify(entry.modifyIndex)}`);
      }
      if (entry.value !== undefined && !(entry.value instanceof Uint8Array)) throw new BadRequestError("Value must be bytes");
      if (entry.session !== undefined && typeof entry.session !== "string") throw new BadRequestError("Session must be a string");
      // consul kvsPreApply: delete-tree needs write on everything under the prefix, any other op write on the key.
      const id = aclIdentity(ctx, args.token);
      if (id && !(op === "delete-tree" ? id.authz.keyWritePrefix(entry.key) : id.authz.allowed("key", "write", entry.key))) {
        throw new PermissionDeniedError(permissionDeniedReason(id.accessorId, "key", "write", entry.key));
      }
      requireLeader(ctx);
      // kvsPreApply: a key whose lock was just freed by an invalidated session stays unlockable for the lock delay.
      // With a request id the FSM checks it instead (core/server/fsm.ts), so a repeat gets its first answer.
      if (op === "lock" && options?.requestId === undefined && kvsLockDelayUntil(ctx.fsm.state, entry.key, ctx.clock.wallNow()) > 0) {
        return { ok: false, index: Math.max(1, ctx.fsm.state.lastIndex()) };
      }
      const command = encodeCommand(MessageType.KVS, {
        op,
        entry: {
          key: entry.key,
          flags: entry.flags,
          value: entry.value ?? emptyValue,
          session: entry.session,
          modifyIndex: entry.modifyIndex,
        },
      });
      const { index, result } = await raftApply(ctx, command, options);
      return { ok: conditionalOps.has(op) ? result === true : true, index };
    },

    async "KVS.Get"(args, options) {
      const key = args.key;
      aclAuthorize(ctx, args.query.token, "key", "read", key);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = state.kvsGet(key, ws);
        return r.value ? { index: r.value.modifyIndex, value: [r.value] } : { index: r.index, value: [] };
      }, options);
      return { entries: value, meta };
    },

    async "KVS.List"(args, options) {
      const prefix = args.prefix;
      const id = listIdentity(ctx, args.query.token, prefix);
      const { value, meta } = await read(ctx, args.query, (state, ws) => state.kvsList(prefix, ws), options);
      if (!id) return { entries: value, meta };
      const entries = value.filter((e) => id.authz.allowed("key", "read", e.key));
      return { entries, meta: entries.length < value.length ? { ...meta, resultsFilteredByAcls: true } : meta };
    },

    async "KVS.ListKeys"(args, options) {
      const { prefix, separator } = args;
      const { value, meta } = await read(
        ctx,
        args.query,
        (state, ws) => state.kvsListKeys(prefix, separator ?? "", ws),
        options,
      );
      const id = listIdentity(ctx, args.query.token, prefix);
      if (!id) return { keys: value, meta };
      const keys = value.filter((k) => id.authz.allowed("key", "read", k));
      return { keys, meta: keys.length < value.length ? { ...meta, resultsFilteredByAcls: true } : meta };
    },
  });
}

/**
 * The caller of a KV listing (undefined with ACLs off). With
 * acl.enable_key_list_policy the prefix itself needs `list` (consul
 * KVS.List's KeyList check); the entries are then filtered by `read`.
 */
function listIdentity(ctx: ServerContext, token: string | undefined, prefix: string) {
  const id = aclIdentity(ctx, token);
  if (id && ctx.acl?.config.enableKeyListPolicy && !id.authz.allowed("key", "list", prefix)) {
    throw new PermissionDeniedError(permissionDeniedReason(id.accessorId, "key", "list", prefix));
  }
  return id;
}
