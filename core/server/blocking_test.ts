import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, seeds } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { StateStore } from "../state/store.ts";
import { blockingQuery, clampWaitMs, defaultQueryTimeMs, maxQueryTimeMs, waitWithJitterMs } from "./blocking.ts";
import type { BlockingContext } from "./blocking.ts";
import type { Consensus } from "./consensus.ts";
import { q } from "./_test_query.ts";

function fakeConsensus(over: Partial<Consensus> = {}): Consensus {
  return {
    apply: () => Promise.reject(new Error("unused")),
    isLeader: () => true,
    leaderAddr: () => "10.0.0.1:8300",
    lastContactMs: () => 0,
    peers: () => ["10.0.0.1:8300"],
    readBarrier: () => Promise.resolve(),
    ...over,
  };
}

function world(seed = 1, consensus = fakeConsensus()) {
  const clock = new SimClock();
  let state = new StateStore();
  const ctx: BlockingContext = { clock, rng: new Rng(seed), consensus, state: () => state };
  return { clock, ctx, get state() { return state; }, setState(s: StateStore) { state = s; } };
}


const getA = (s: StateStore, ws: Parameters<StateStore["kvsGet"]>[1]) => {
  const r = s.kvsGet("a", ws);
  return r.value ? { index: r.value.modifyIndex, value: r.value.key } : { index: r.index, value: "" };
};

test("blocking: index 0 answers at once, and never with index 0", async () => {
  const w = world();
  const r = await blockingQuery(w.ctx, q(), getA);
  assert.equal(r.meta.index, 1);
  assert.deepEqual(r.meta, { index: 1, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" });
  assert.equal(w.clock.pending(), 0, "no timer for a non-blocking read");
});

test("blocking: an answer newer than minQueryIndex returns without waiting", async () => {
  const w = world();
  w.state.kvsSet(5, { key: "a" });
  const r = await blockingQuery(w.ctx, q({ minQueryIndex: 4, maxQueryTimeMs: 10_000 }), getA);
  assert.equal(r.meta.index, 5);
  assert.equal(w.clock.pending(), 0);
});

test("blocking: woken by a write to the watched key, not by other keys", async () => {
  const w = world();
  w.state.kvsSet(5, { key: "a" });
  const box: { done?: { value: string; meta: { index: number } } } = {};
  void blockingQuery(w.ctx, q({ minQueryIndex: 5, maxQueryTimeMs: 60_000 }), getA).then((r) => { box.done = r; });
  await w.clock.runFor(1_000);
  w.state.kvsSet(6, { key: "b" });
  await w.clock.runFor(1_000);
  assert.equal(box.done === undefined, true, "a write to b must not answer a watcher of a");
  w.state.kvsSet(7, { key: "a", value: new Uint8Array([1]) });
  await drainMicrotasks(3);
  assert.equal(box.done?.meta.index, 7);
  assert.equal(w.clock.now(), 2_000, "answered without waiting out the timer");
  assert.equal(w.clock.pending(), 0, "timer cancelled");
});

test("blocking: times out at the wait (plus jitter ≤ wait/16) with the current answer", async () => {
  for (const seed of seeds(5)) {
    const w = world(seed);
    w.state.kvsSet(5, { key: "a" });
    const expected = waitWithJitterMs(60_000, new Rng(seed));
    let doneAt = -1;
    let index = 0;
    void blockingQuery(w.ctx, q({ minQueryIndex: 5, maxQueryTimeMs: 60_000 }), getA).then((r) => {
      doneAt = w.clock.now();
      index = r.meta.index;
    });
    await w.clock.runUntil(() => doneAt >= 0, { maxMs: 70_000 });
    assert.equal(doneAt, expected, `seed ${seed}`);
    assert.ok(doneAt >= 60_000 && doneAt < 60_000 + 60_000 / 16, `seed ${seed}: ${doneAt}`);
    assert.equal(index, 5, `seed ${seed}`);
  }
});

test("blocking: wait is clamped to 10 min, defaults to 5 min, jitter stays in bound", () => {
  assert.equal(clampWaitMs(0), defaultQueryTimeMs);
  assert.equal(clampWaitMs(-5), defaultQueryTimeMs);
  assert.equal(clampWaitMs(3_600_000), maxQueryTimeMs);
  assert.equal(clampWaitMs(1_000), 1_000);
  const rng = new Rng(9);
  let sawJitter = false;
  for (let i = 0; i < 1_000; i++) {
    const v = waitWithJitterMs(160_000, rng);
    assert.ok(v >= 160_000 && v < 170_000, String(v));
    if (v > 160_000) sawJitter = true;
  }
  assert.ok(sawJitter);
});

test("blocking: a restore wakes the query, which answers from the new store", async () => {
  const w = world();
  w.state.kvsSet(5, { key: "a" });
  let done: { value: string; meta: { index: number } } | undefined;
  void blockingQuery(w.ctx, q({ minQueryIndex: 5, maxQueryTimeMs: 60_000 }), getA).then((r) => { done = r; });
  await w.clock.runFor(10);
  const fresh = new StateStore();
  fresh.kvsSet(3, { key: "a" });
  const old = w.state;
  w.setState(fresh);
  old.abandon();
  await drainMicrotasks(3);
  assert.equal(done?.meta.index, 3, "answered from the restored store even though its index is lower");
});

test("blocking: consistent reads pass the barrier; stale reads report follower facts", async () => {
  let barriers = 0;
  const follower = fakeConsensus({
    isLeader: () => false,
    lastContactMs: () => 42,
    readBarrier: () => { barriers++; return Promise.resolve(); },
  });
  const w = world(1, follower);
  const c = await blockingQuery(w.ctx, q({ requireConsistent: true }), getA);
  assert.equal(barriers, 1);
  assert.equal(c.meta.consistencyLevel, "consistent");
  const s = await blockingQuery(w.ctx, q({ allowStale: true }), getA);
  assert.deepEqual(s.meta, { index: 1, knownLeader: true, lastContactMs: 42, consistencyLevel: "stale" });
});

test("blocking: an abort signal rejects and frees the watch", async () => {
  const w = world();
  w.state.kvsSet(5, { key: "a" });
  const ac = new AbortController();
  const p = blockingQuery(w.ctx, q({ minQueryIndex: 5, maxQueryTimeMs: 60_000 }), getA, { signal: ac.signal });
  await w.clock.runFor(10);
  assert.equal(w.state.tables.kvs.watches.watchedCount, 1);
  ac.abort();
  await assert.rejects(p, (e: unknown) => e instanceof Error && e.name === "AbortError");
  assert.equal(w.state.tables.kvs.watches.watchedCount, 0);
  assert.equal(w.clock.pending(), 0);
});

test("blocking: default_query_time and max_query_time from the server's config set the wait", async () => {
  const times = { defaultMs: 10_000, maxMs: 30_000 };
  assert.equal(clampWaitMs(0, times), 10_000);
  assert.equal(clampWaitMs(60_000, times), 30_000);
  assert.equal(clampWaitMs(20_000, times), 20_000);
  for (const [asked, wait] of [[0, 10_000], [600_000, 30_000]] as const) {
    const w = world(3);
    w.ctx.queryTimes = times;
    w.state.kvsSet(5, { key: "a" });
    let doneAt = -1;
    void blockingQuery(w.ctx, q({ minQueryIndex: 5, maxQueryTimeMs: asked }), getA).then(() => {
      doneAt = w.clock.now();
    });
    await w.clock.runUntil(() => doneAt >= 0, { maxMs: 700_000 });
    assert.ok(doneAt >= wait && doneAt < wait + wait / 16, `asked ${asked}: answered at ${doneAt}`);
  }
});
