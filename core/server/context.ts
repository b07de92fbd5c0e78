// What every endpoint family gets: the FSM (for reads of the current store),
// the consensus seam (for writes), time, randomness and a logger.

import type { Clock } from "../clock/clock.ts";
import { CairnError, NoLeaderError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { HandlerOptions, QueryMeta, QueryOptions, Rpc } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import { blockingQuery } from "./blocking.ts";
import type { BlockingContext, QueryFn, QueryTimes } from "./blocking.ts";
import { notLeader } from "./consensus.ts";
import type { Consensus } from "./consensus.ts";
import type { Fsm } from "./fsm.ts";
import type { AclResolver } from "./acl.ts";
import type { AclReplicator } from "./acl_replication.ts";
import { wrapCommand } from "./fsm.ts";

export interface ServerContext {
  fsm: Fsm;
  consensus: Consensus;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** This server's datacenter (stamped on catalog nodes); "" when not configured. */
  datacenter?: string;
  /** Known datacenters (WAN pool), ours first, then nearest first: Catalog.ListDatacenters, prepared-query failover. */
  datacenters?: () => string[];
  /** Calls to other datacenters (the server's router); absent: none (prepared queries do not fail over). */
  remote?: () => Rpc | undefined;
  /** Blocking waits (default_query_time, max_query_time); absent: Consul's 5 and 10 minutes. */
  queryTimes?: QueryTimes;
  /** ACLs (absent or disabled: every request is allowed). */
  acl?: AclResolver;
  /** ACL replication from the primary (servers of a secondary datacenter; its leader runs it). */
  aclReplication?: AclReplicator;
}

/** Writes go to the leader; a follower says where the leader is (the RPC layer forwards). */
export function requireLeader(ctx: ServerContext): void {
  if (ctx.consensus.isLeader()) return;
  if (ctx.consensus.leaderAddr() === "") throw new NoLeaderError();
  throw notLeader(ctx.consensus);
}

/**
 * Replicate a command; an Error result from the FSM becomes a rejection. A
 * command with a request id is applied once however often it is proposed
 * (see core/state/requests.ts); the leader's wall clock rides along.
 */
export async function raftApply(
  ctx: ServerContext,
  command: Uint8Array,
  options?: HandlerOptions,
): Promise<{ index: number; result: unknown }> {
  const data = options?.requestId ? wrapCommand(command, options.requestId, ctx.clock.wallNow()) : command;
  const out = await ctx.consensus.apply(data, options);
  if (out.result instanceof CairnError) throw out.result;
  if (out.result instanceof Error) throw new CairnError("state", out.result.message, { cause: out.result });
  return out;
}

const blockingContexts = new WeakMap<ServerContext, BlockingContext>();

function blockingContext(ctx: ServerContext): BlockingContext {
  let b = blockingContexts.get(ctx);
  if (!b) {
    const fsm = ctx.fsm;
    b = { clock: ctx.clock, rng: ctx.rng, consensus: ctx.consensus, queryTimes: ctx.queryTimes, state: () => fsm.state };
    blockingContexts.set(ctx, b);
  }
  return b;
}

/** A read: forwarded unless stale reads are allowed or this is the leader, then blocking rules. */
export function read<T>(
  ctx: ServerContext,
  q: QueryOptions,
  query: QueryFn<T>,
  options?: { signal?: AbortSignal },
): Promise<{ value: T; meta: QueryMeta }> {
  if (!q.allowStale) requireLeader(ctx);
  return blockingQuery(blockingContext(ctx), q, query, options);
}
