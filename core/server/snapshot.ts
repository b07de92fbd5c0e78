// Snapshot endpoint family (consul agent/consul/snapshot_endpoint.go): save
// the whole state as an archive, or replace it with one. A restore goes
// through the Raft log as one Restore entry (see fsm.ts), so it is bounded by
// what one RPC frame can carry.

import { BadRequestError, CorruptionError, TooLargeError } from "../errors.ts";
import { defaultMaxFrameBytes } from "../rpc/frame.ts";
import type { RpcHandlers } from "../rpc/methods.ts";
import { StateStore } from "../state/store.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import { readSnapshotArchive, writeSnapshotArchive } from "./snapshot_archive.ts";

/** Largest state a snapshot may carry: a Raft entry and an RPC reply must fit one frame, with room to spare. */
export const maxSnapshotStateBytes = defaultMaxFrameBytes - 1024 * 1024;

export function snapshotEndpoints(ctx: ServerContext): Pick<RpcHandlers, "Snapshot.Save" | "Snapshot.Restore"> {
  return withCheckedArgs<"Snapshot.Save" | "Snapshot.Restore">({
    async "Snapshot.Save"(args, options) {
      if (!args.allowStale) {
        requireLeader(ctx);
        // Everything committed before the request is in the state we save.
        await ctx.consensus.readBarrier(options);
      }
      const fsm = ctx.fsm;
      const index = fsm.lastIndex;
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (const c of fsm.snapshotStream()) {
        size += c.length;
        if (size > maxSnapshotStateBytes) {
          throw new TooLargeError(`Snapshot state is over ${maxSnapshotStateBytes} bytes, the most one RPC can carry`, maxSnapshotStateBytes);
        }
        chunks.push(c);
      }
      const state = new Uint8Array(size);
      let off = 0;
      for (const c of chunks) {
        state.set(c, off);
        off += c.length;
      }
      const archive = await writeSnapshotArchive(state, { index, nowMs: ctx.clock.wallNow() });
      return { index, archive };
    },

    async "Snapshot.Restore"(args, options) {
      requireLeader(ctx);
      if (!(args.archive instanceof Uint8Array)) throw new BadRequestError("Missing snapshot archive");
      let state: Uint8Array;
      try {
        state = (await readSnapshotArchive(args.archive)).state;
        if (state.length > maxSnapshotStateBytes) {
          throw new TooLargeError(`Snapshot state is ${state.length} bytes; a restore can carry at most ${maxSnapshotStateBytes}`, maxSnapshotStateBytes);
        }
        // Refuse a bad state here, with its reason, rather than in every server's FSM.
        StateStore.restoreSync(state);
      } catch (err) {
        if (err instanceof CorruptionError) throw new BadRequestError(`Invalid snapshot: ${err.message}`);
        throw err;
      }
      const { index } = await raftApply(ctx, encodeCommand(MessageType.Restore, { state }), options);
      ctx.logger.info("snapshot restored", { index });
      return { index };
    },
  });
}
