// Coordinate endpoint family (consul agent/consul/coordinate_endpoint.go).
// Agents send their LAN coordinate (Coordinate.Update) to the leader, which
// keeps the latest one per node and segment and, every
// coordinate_update_period, proposes them through Raft in batches of
// coordinate_update_batch_size, at most coordinate_update_max_batches batches
// a period (the rest are dropped with a warning: the agents send again). The
// reads answer from the catalog's coordinates table, with blocking queries.

import { defaultVivaldiConfig } from "../gossip/coordinate.ts";
import { BadRequestError, errorMessage } from "../errors.ts";
import type { CoordinateEntry, RpcHandlers } from "../rpc/methods.ts";
import type { Timer } from "../clock/clock.ts";
import { coordinatesTxn, nodeCoordinatesTxn, vivaldiFrom } from "../state/coordinate.ts";
import { withCheckedArgs } from "./args.ts";
import type { ServerContext } from "./context.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, ignoreUnknownTypeFlag, MessageType } from "./fsm.ts";

/** Consul's defaults (agent/consul/config.go): 5 s, 128 updates a batch, 5 batches a period. */
export interface CoordinateUpdateConfig {
  updatePeriodMs: number;
  batchSize: number;
  maxBatches: number;
}

export const defaultCoordinateUpdateConfig: Readonly<CoordinateUpdateConfig> = Object.freeze({ updatePeriodMs: 5_000, batchSize: 128, maxBatches: 5 });

/** The leader's pending coordinate updates and the timer that flushes them through Raft. */
export class CoordinateBatcher {
  readonly #ctx: ServerContext;
  readonly #config: CoordinateUpdateConfig;
  /** node + ":" + segment → the latest update (Consul keys it the same way). */
  #pending = new Map<string, CoordinateEntry>();
  #timer: Timer | undefined;
  #stopped = false;
  /** Counters for tests and metrics. */
  readonly stats = { batches: 0, applied: 0, discarded: 0 };

  constructor(ctx: ServerContext, config: Partial<CoordinateUpdateConfig> = {}) {
    this.#ctx = ctx;
    const c = { ...defaultCoordinateUpdateConfig, ...config };
    // Zero would mean "never" or an endless loop: keep at least one update, one batch, one ms.
    this.#config = { updatePeriodMs: Math.max(1, c.updatePeriodMs), batchSize: Math.max(1, c.batchSize), maxBatches: Math.max(1, c.maxBatches) };
  }

  /** Updates waiting for the next period. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Keep the latest update of a node and segment; the period's timer is armed by the first one. */
  add(update: CoordinateEntry): void {
    if (this.#stopped) return;
    this.#pending.set(`${update.node}:${update.segment}`, update);
    if (!this.#timer) this.#timer = this.#ctx.clock.setTimer(this.#config.updatePeriodMs, () => void this.flush());
  }

  /** Apply what is pending (Consul batchApplyUpdates): one command per batch; a server that is no longer leader drops them. */
  async flush(): Promise<void> {
    this.#timer = undefined;
    const pending = [...this.#pending.values()];
    this.#pending = new Map();
    if (pending.length === 0) return;
    if (!this.#ctx.consensus.isLeader()) {
      this.#ctx.logger.debug("dropping coordinate updates: no longer the leader", { updates: pending.length });
      return;
    }
    const { batchSize, maxBatches } = this.#config;
    const limit = batchSize * maxBatches;
    if (pending.length > limit) {
      this.stats.discarded += pending.length - limit;
      this.#ctx.logger.warn("discarded coordinate updates", { discarded: pending.length - limit });
      pending.length = limit;
    }
    for (let start = 0; start < pending.length; start += batchSize) {
      const updates = pending.slice(start, start + batchSize);
      // Flagged: a server that does not know the type skips it (Consul does the same).
      const command = encodeCommand(MessageType.CoordinateBatchUpdate | ignoreUnknownTypeFlag, { updates });
      try {
        await raftApply(this.#ctx, command);
        this.stats.batches++;
        this.stats.applied += updates.length;
      } catch (err) {
        this.#ctx.logger.warn("coordinate batch update failed", { updates: updates.length, error: errorMessage(err) });
        return;
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#pending.clear();
  }
}

export function coordinateEndpoints(ctx: ServerContext, batcher: CoordinateBatcher): Pick<RpcHandlers, "Coordinate.Update" | "Coordinate.ListNodes" | "Coordinate.Node"> {
  return withCheckedArgs<"Coordinate.Update" | "Coordinate.ListNodes" | "Coordinate.Node">({
    async "Coordinate.Update"(args) {
      if (args.node === "") throw new BadRequestError("Must provide node");
      // Older clients could send NaN or Inf; newer ones never should (Consul's check, its wording).
      const coord = vivaldiFrom(args.coord);
      if (!coord) throw new BadRequestError("invalid coordinate");
      if (coord.vec.length !== defaultVivaldiConfig.dimensionality) throw new BadRequestError("incompatible coordinate");
      requireLeader(ctx);
      batcher.add({ node: args.node, segment: args.segment ?? "", coord });
      return {};
    },
    async "Coordinate.ListNodes"(args, options) {
      const { value, meta } = await read(ctx, args.query, (state, ws) => coordinatesTxn(state, ws), options);
      return { coordinates: value, meta };
    },
    async "Coordinate.Node"(args, options) {
      const { value, meta } = await read(ctx, args.query, (state, ws) => nodeCoordinatesTxn(state, ws, args.node), options);
      return { coordinates: value, meta };
    },
  });
}
