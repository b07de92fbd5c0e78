import assert from "node:assert/strict";
import { test } from "node:test";
import { bulkIdleMs, busyCpuShare, busyFlags, busyWindowMs, clientV8, heapGrowingPercent, isBusy, leanFlags, maxHeapGrowingPercent, reduceAfterGrowthBytes, reduceEveryMs, serverBudgetFlags, serverHeapFloorBytes, type V8Deps } from "./agent_v8.ts";

/** A process whose CPU time and clock the test moves, and whose timer it fires. */
function fakeProcess() {
  const flags: string[] = [];
  let cpuMicros = 0;
  let nowMs = 0;
  let tick: (() => void) | undefined;
  let heap = 12 << 20;
  let oldGen = 8 << 20;
  let fullGc: (() => void) | undefined;
  let timeouts: { at: number; fn: () => void }[] = [];
  const reductions: number[] = [];
  const deps: V8Deps = {
    setV8Flags: (f) => void flags.push(...f),
    cpuMicros: () => cpuMicros,
    heapBytes: () => heap,
    reduceMemory: () => {
      reductions.push(nowMs);
      heap = 9 << 20;
    },
    oldGenerationBytes: () => oldGen,
    after: (ms, fn) => {
      const t = { at: nowMs + ms, fn };
      timeouts.push(t);
      return { cancel: () => void (timeouts = timeouts.filter((x) => x !== t)) };
    },
    onFullGc: (fn) => {
      fullGc = fn;
      return { cancel: () => (fullGc = undefined) };
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
    /** A full collection leaves the old generation at `bytes`. */
    fullGc(bytes: number) {
      oldGen = bytes;
      fullGc?.();
    },
    get watchingGcs() {
      return fullGc !== undefined;
    },
    get pendingTimeouts() {
      return timeouts.length;
    },
    /** The clock moves on by `ms`; timeouts due by then fire. */
    advance(ms: number) {
      nowMs += ms;
      for (;;) {
        const due = timeouts.find((t) => t.at <= nowMs);
        if (!due) return;
        timeouts = timeouts.filter((t) => t !== due);
        due.fn();
      }
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
    assert.deepEqual(p.flags.filter((f) => !f.startsWith("--heap-growing-percent=")), serverBudgetFlags);
    assert.equal(v8.busy, true);
    assert.equal(p.watching, false);
    assert.deepEqual(p.reductions, []);
  }
});

test("heapGrowingPercent: the factor that puts the next limit at the floor, V8's own (0) at or above it", () => {
  const MiB = 1 << 20;
  assert.equal(heapGrowingPercent(12 * MiB, 48 * MiB), 300);
  assert.equal(heapGrowingPercent(10 * MiB, 48 * MiB), 380);
  assert.equal(heapGrowingPercent(47 * MiB, 48 * MiB), 3);
  assert.equal(heapGrowingPercent(48 * MiB, 48 * MiB), 0);
  assert.equal(heapGrowingPercent(500 * MiB, 48 * MiB), 0);
  assert.equal(heapGrowingPercent(1 * MiB, 48 * MiB), maxHeapGrowingPercent);
  assert.equal(heapGrowingPercent(0, 48 * MiB), 0);
  assert.equal(heapGrowingPercent(NaN, 48 * MiB), 0);
});

test("clientV8: a server sets the heap floor's factor after each full collection, only when it changes", () => {
  const MiB = 1 << 20;
  const p = fakeProcess();
  const v8 = clientV8({ server: true, dev: false }, p.deps);
  const growth = () => p.flags.filter((f) => f.startsWith("--heap-growing-percent="));
  assert.deepEqual(growth(), [`--heap-growing-percent=${heapGrowingPercent(8 * MiB)}`]);
  p.fullGc(8 * MiB); // the same size: nothing set again
  assert.equal(growth().length, 1);
  p.fullGc(16 * MiB);
  assert.deepEqual(growth().at(-1), `--heap-growing-percent=${heapGrowingPercent(16 * MiB)}`);
  p.fullGc(serverHeapFloorBytes + MiB); // above the floor: V8's own factor
  assert.deepEqual(growth().at(-1), "--heap-growing-percent=0");
  p.fullGc(10 * MiB);
  assert.deepEqual(growth().at(-1), `--heap-growing-percent=${heapGrowingPercent(10 * MiB)}`);
  assert.equal(growth().length, 4);
  v8.stop();
  assert.equal(p.watchingGcs, false);
});

test("clientV8: a client leaves V8's heap growth alone", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: false, dev: false }, p.deps);
  v8.started();
  p.window(1);
  assert.equal(p.watchingGcs, false);
  assert.deepEqual(p.flags.filter((f) => f.startsWith("--heap-growing-percent")), []);
  v8.stop();
});

test("clientV8: a server pauses TurboFan while snapshot writes come, until bulkIdleMs after the last", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: true, dev: false }, p.deps);
  const turbo = () => p.flags.filter((f) => f === "--turbofan" || f === "--no-turbofan");
  v8.bulkWriting();
  v8.bulkWriting();
  assert.deepEqual(turbo(), ["--no-turbofan"], "paused once");
  p.advance(bulkIdleMs / 2);
  v8.bulkWriting(); // the pause runs on from this write
  p.advance(bulkIdleMs / 2 + 1);
  assert.deepEqual(turbo(), ["--no-turbofan"], "a write came within bulkIdleMs");
  p.advance(bulkIdleMs / 2);
  assert.deepEqual(turbo(), ["--no-turbofan", "--turbofan"], "back bulkIdleMs after the last write");
  assert.equal(p.pendingTimeouts, 0);
  v8.bulkWriting();
  assert.deepEqual(turbo(), ["--no-turbofan", "--turbofan", "--no-turbofan"], "paused again by the next write");
  v8.stop();
  assert.equal(p.pendingTimeouts, 0, "stop cancels the timer");
});

test("clientV8: a client's snapshot writes leave TurboFan alone (it has none; its own flags follow its CPU)", () => {
  const p = fakeProcess();
  const v8 = clientV8({ server: false, dev: false }, p.deps);
  const before = [...p.flags];
  v8.bulkWriting();
  assert.deepEqual(p.flags, before);
  assert.equal(p.pendingTimeouts, 0);
  v8.stop();
});
