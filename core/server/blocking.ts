// Blocking queries (consul agent/blockingquery/blockingquery.go): run a read;
// if the client asked to wait (minQueryIndex > 0) and nothing newer exists,
// sleep on the read's WatchSet until it fires or the wait (plus jitter)
// runs out, then read again. Never answers index 0.

import type { Clock } from "../clock/clock.ts";
import type { QueryMeta, QueryOptions } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import type { Indexed } from "../state/kvs.ts";
import type { StateStore } from "../state/store.ts";
import { WatchSet } from "../state/watch.ts";
import type { Consensus } from "./consensus.ts";

/** Blocking wait when the request names none (Consul's default_query_time default). */
export const defaultQueryTimeMs = 5 * 60_000;
/** Longest blocking wait (Consul's max_query_time default). */
export const maxQueryTimeMs = 10 * 60_000;

/** How long blocking queries wait: the agent's default_query_time and max_query_time. */
export interface QueryTimes {
  defaultMs: number;
  maxMs: number;
}

/** Consul's defaults: 5 minutes unless asked, 10 at most. */
export const consulQueryTimes: QueryTimes = Object.freeze({ defaultMs: defaultQueryTimeMs, maxMs: maxQueryTimeMs });
/** Jitter is up to wait / jitterFraction (Consul lib.RandomStagger(wait / 16)). */
export const jitterFraction = 16;

export interface BlockingContext {
  clock: Clock;
  rng: Rng;
  consensus: Consensus;
  /** Default and longest wait; absent: Consul's. */
  queryTimes?: QueryTimes;
  /** The current store; it changes when a snapshot is restored. */
  state(): StateStore;
}

/** The read to run: given the store and a WatchSet (absent when not blocking). */
export type QueryFn<T> = (state: StateStore, ws: WatchSet | undefined) => Indexed<T>;

/** How long a blocking query may wait, before jitter (consul blockingquery.go: capped, never 0). */
export function clampWaitMs(requested: number, times: QueryTimes = consulQueryTimes): number {
  if (!(requested > 0)) return times.defaultMs;
  return requested > times.maxMs ? times.maxMs : requested;
}

/** The wait plus a random stagger in [0, wait / 16). */
export function waitWithJitterMs(requested: number, rng: Rng, times: QueryTimes = consulQueryTimes): number {
  const wait = clampWaitMs(requested, times);
  return wait + rng.int(Math.floor(wait / jitterFraction));
}

function consistencyLevel(q: QueryOptions): QueryMeta["consistencyLevel"] {
  return q.requireConsistent ? "consistent" : q.allowStale ? "stale" : "leader";
}

function queryMeta(ctx: BlockingContext, q: QueryOptions, index: number): QueryMeta {
  const leader = ctx.consensus.isLeader();
  return {
    index: index > 0 ? index : 1,
    knownLeader: leader || ctx.consensus.leaderAddr() !== "",
    lastContactMs: leader ? 0 : ctx.consensus.lastContactMs(),
    consistencyLevel: consistencyLevel(q),
  };
}

type WakeReason = "fired" | "timeout";

function waitFor(ws: WatchSet, clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<WakeReason> {
  return new Promise<WakeReason>((resolve, reject) => {
    let done = false;
    const finish = (): void => {
      done = true;
      timer.cancel();
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = (): void => {
      if (done) return;
      finish();
      ws.cancel();
      reject(signal!.reason);
    };
    const timer = clock.setTimer(ms, () => {
      if (done) return;
      finish();
      ws.cancel();
      resolve("timeout");
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    ws.onFire(() => {
      if (done) return;
      finish();
      resolve("fired");
    });
  });
}

/**
 * Run query under the blocking rules. Rejects with the signal's reason when
 * aborted, or with the readBarrier's error for a consistent read.
 */
export async function blockingQuery<T>(
  ctx: BlockingContext,
  q: QueryOptions,
  query: QueryFn<T>,
  options?: { signal?: AbortSignal },
): Promise<{ value: T; meta: QueryMeta }> {
  const signal = options?.signal;
  const minIndex = q.minQueryIndex > 0 ? q.minQueryIndex : 0;
  if (minIndex === 0) {
    if (q.requireConsistent) await ctx.consensus.readBarrier({ signal });
    const r = query(ctx.state(), undefined);
    return { value: r.value, meta: queryMeta(ctx, q, r.index) };
  }

  const deadline = ctx.clock.now() + waitWithJitterMs(q.maxQueryTimeMs, ctx.rng, ctx.queryTimes);
  let restored = false;
  for (;;) {
    if (signal?.aborted) throw signal.reason;
    if (q.requireConsistent) await ctx.consensus.readBarrier({ signal });
    const state = ctx.state();
    const ws = new WatchSet();
    const r = query(state, ws);
    // abandon() wakes every table watcher; only a read that watched nothing
    // needs the store-wide abandon list.
    if (ws.size === 0) state.watchAbandon(ws);
    const index = r.index > 0 ? r.index : 1;
    const remaining = deadline - ctx.clock.now();
    // After a restore, answer with what the new store holds (its index may
    // even be lower), as Consul does when the state store is abandoned.
    if (index > minIndex || restored || remaining <= 0) {
      ws.cancel();
      return { value: r.value, meta: queryMeta(ctx, q, index) };
    }
    const why = await waitFor(ws, ctx.clock, remaining, signal);
    if (why === "timeout") return { value: r.value, meta: queryMeta(ctx, q, index) };
    restored = state.abandoned;
  }
}
