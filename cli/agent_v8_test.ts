import assert from "node:assert/strict";
import { test } from "node:test";
import { busyCpuShare, busyFlags, busyWindowMs, clientV8, isBusy, leanFlags, reduceAfterGrowthBytes, reduceEveryMs, serverBudgetFlags, type V8Deps } from "./agent_v8.ts";

/** A process whose CPU time and clock the test moves, and whose timer it fires. */
function fakeProcess() {
  const flags: string[] = [];
  let cpuMicros = 0;
  let nowMs = 0;
  let tick: (() => void) | undefined;
  let heap = 12 << 20;
  const reductions: number[] = [];
  const deps: V8Deps = {
    setV8Flags: (f) => void flags.push(...f),
    cpuMicros: () => cpuMicros,
    heapBytes: () => heap,
    reduceMemory: () => {
      reductions.push(nowMs);
      heap = 9 << 20;
    },
    nowMs: () => nowMs,
    every: (ms, fn) => {
      assert.equal(ms, busyWindowMs);
      tick = fn;
      return { cancel: () => (tick = undefined) };
    },
  };
  return {
    deps,
    flags,
    reductions,
    grow(bytes: number) {
      heap += bytes;
    },
    /** One window passes in which the process uses `share` of a core. */
    window(share: number) {
      nowMs += busyWindowMs;
      cpuMicros += share * busyWindowMs * 1000;
      tick?.();
    },
    get watching() {
      return tick !== undefined;
    },
  };
}

test("isBusy: CPU time over the wall time between two samples against the share", () => {
  assert.equal(isBusy({ cpuMicros: 0, nowMs: 0 }, { cpuMicros: 100_000, nowMs: 1_000 }, 0.05), true);
  assert.equal(isBusy({ cpuMicros: 0, nowMs: 0 }, { cpuMicros: 40_000, nowMs: 1_000 }, 0.05), false);
  assert.equal(isBusy({ cpuMicros: 0, nowMs: 1_000 }, { cpuMicros: 1_000_000, nowMs: 1_000 }), false, "no time passed");
});

test("clientV8: a client starts lean and stays lean while idle", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: false, dev: false }, p.deps);
  assert.deepEqual(p.flags, leanFlags);
  assert.equal(v8.busy, false);
  assert.equal(p.watching, false, "start-up is not measured");
  v8.started();
  for (let i = 0; i < 20; i++) p.window(busyCpuShare / 2);
  assert.deepEqual(p.flags, leanFlags);
  assert.equal(v8.busy, false);
  v8.stop();
  assert.equal(p.watching, false);
});

test("clientV8: one busy window restores V8's defaults for good", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: false, dev: false }, p.deps);
  v8.started();
  p.window(0.001);
  p.window(busyCpuShare * 2);
  assert.deepEqual(p.flags, [...leanFlags, ...busyFlags]);
  assert.equal(v8.busy, true);
  p.window(busyCpuShare * 2);
  p.window(0);
  assert.deepEqual(p.flags, [...leanFlags, ...busyFlags]);
});

test("clientV8: an idle client collects once its heap grew, at most once per reduceEveryMs", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: false, dev: false }, p.deps);
  v8.started();
  p.window(busyCpuShare * 2);
  assert.deepEqual(p.reductions, [], "not while busy");
  p.window(0.001);
  assert.deepEqual(p.reductions, [2 * busyWindowMs], "the start grew the heap: the first idle window collects");
  p.grow(reduceAfterGrowthBytes - 1);
  for (let i = 0; i < 20; i++) p.window(0.001);
  assert.equal(p.reductions.length, 1, "grown by less than the threshold");
  p.grow(1);
  p.window(0.001);
  assert.equal(p.reductions.length, 2);
  assert.ok(p.reductions[1]! - p.reductions[0]! >= reduceEveryMs);
  p.grow(reduceAfterGrowthBytes * 4);
  p.window(0.001);
  assert.equal(p.reductions.length, 2, "not again within reduceEveryMs");
  for (let i = 0; i < reduceEveryMs / busyWindowMs; i++) p.window(0.001);
  assert.equal(p.reductions.length, 3);
  v8.stop();
  assert.equal(p.watching, false);
});

test("clientV8: servers and -dev get the server tier-up budget and are not watched", () => {
  for (const config of [{ server: true, dev: false }, { server: false, dev: true }]) {
    const p = fakeProcess();
    const v8 = clientV8(config, p.deps);
    v8.started();
    p.window(1);
    assert.deepEqual(p.flags, serverBudgetFlags);
    assert.equal(v8.busy, true);
    assert.equal(p.watching, false);
    assert.deepEqual(p.reductions, []);
  }
});
