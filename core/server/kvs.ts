// KVS endpoint family (consul agent/consul/kvs_endpoint.go).

import { BadRequestError } from "../errors.ts";
import type { KvsOp, RpcHandlers } from "../rpc/methods.ts";
import { isIndex } from "../state/kvs_schema.ts";
import { kvsLockDelayUntil } from "../state/session_ops.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";

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
      if (entry.flags !== undefined && !isIndex(entry.flags)) throw new BadRequestError(`Invalid flags ${JSON.stringify(entry.flags)}`);
      if (entry.modifyIndex !== undefined && !isIndex(entry.modifyIndex)) {
        throw new BadRequestError(`Invalid index ${JSON.stringify(entry.modifyIndex)}`);
      }
      if (entry.value !== undefined && !(entry.value instanceof Uint8Array)) throw new BadRequestError("Value must be bytes");
      if (entry.session !== undefined && typeof entry.session !== "string") throw new BadRequestError("Session must be a string");
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
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = state.kvsGet(key, ws);
        return r.value ? { index: r.value.modifyIndex, value: [r.value] } : { index: r.index, value: [] };
      }, options);
      return { entries: value, meta };
    },

    async "KVS.List"(args, options) {
      const prefix = args.prefix;
      const { value, meta } = await read(ctx, args.query, (state, ws) => state.kvsList(prefix, ws), options);
      return { entries: value, meta };
    },

    async "KVS.ListKeys"(args, options) {
      const { prefix, separator } = args;
      const { value, meta } = await read(
        ctx,
        args.query,
        (state, ws) => state.kvsListKeys(prefix, separator ?? "", ws),
        options,
      );
      return { keys: value, meta };
    },
  });
}
