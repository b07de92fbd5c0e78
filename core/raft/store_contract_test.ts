// One contract for every LogStore, StableStore and SnapshotStore
// implementation: memory and file stores must behave the same. Each harness
// can "reopen" a store (the file stores really close and reopen from disk).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nullLogger } from "../log/logger.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { FileLogStore } from "./log_store_file_node.ts";
import { MemoryLogStore } from "./log_store_memory.ts";
import { FileSnapshotStore } from "./snapshot_store_file_node.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import { FileStableStore } from "./stable_store_file_node.ts";
import { MemoryStableStore } from "./stable_store_memory.ts";
import type { LogEntry, LogStore, SnapshotMeta, SnapshotStore, StableStore } from "./types.ts";

interface Harness<S> {
  name: string;
  open(): Promise<S>;
  reopen(s: S): Promise<S>;
  cleanup(): Promise<void>;
}

type Factory<S> = () => Promise<Harness<S>>;

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "cairn-raft-contract-"));
}

const logStores: [string, Factory<LogStore>][] = [
  [
    "memory",
    async () => ({
      name: "memory",
      open: async () => new MemoryLogStore(),
      reopen: async (s) => s,
      cleanup: async () => {},
    }),
  ],
  [
    "file",
    async () => {
      const dir = await tempDir();
      // Small segments so the contract also runs across segment boundaries.
      const open = () => FileLogStore.open({ dir, logger: nullLogger(), segmentSizeBytes: 512, cacheEntries: 4 });
      return {
        name: "file",
        open,
        reopen: async (s) => {
          await s.close();
          return open();
        },
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
];

function entry(index: number, term: number, text = `cmd-${index}`): LogEntry {
  return { index, term, type: "normal", data: new TextEncoder().encode(text) };
}

function range(lo: number, hi: number, term: number): LogEntry[] {
  const out: LogEntry[] = [];
  for (let i = lo; i < hi; i++) out.push(entry(i, term));
  return out;
}

function summary(entries: LogEntry[]): string {
  return entries.map((e) => `${e.index}/${e.term}/${new TextDecoder().decode(e.data)}`).join(" ");
}

async function withLog(factory: Factory<LogStore>, fn: (h: Harness<LogStore>, s: LogStore) => Promise<LogStore | void>): Promise<void> {
  const h = await factory();
  let s = await h.open();
  try {
    s = (await fn(h, s)) ?? s;
  } finally {
    await s.close();
    await h.cleanup();
  }
}

for (const [name, factory] of logStores) {
  test(`log store contract (${name}): empty store`, () =>
    withLog(factory, async (_h, s) => {
      assert.equal(await s.firstIndex(), 0);
      assert.equal(await s.lastIndex(), 0);
      assert.deepEqual(await s.getEntries(1, 10), []);
      await s.append([]);
      assert.equal(await s.lastIndex(), 0);
    }));

  test(`log store contract (${name}): append, read ranges, reopen`, () =>
    withLog(factory, async (h, s) => {
      await s.append(range(1, 11, 1));
      await s.append(range(11, 41, 2));
      assert.equal(await s.firstIndex(), 1);
      assert.equal(await s.lastIndex(), 40);
      assert.equal(summary(await s.getEntries(1, 4)), "1/1/cmd-1 2/1/cmd-2 3/1/cmd-3");
      assert.equal((await s.getEntries(5, 35)).map((e) => e.index).join(), range(5, 35, 0).map((e) => e.index).join());
      assert.equal((await s.getEntries(38, 100)).length, 3, "clipped at the end");
      assert.equal((await s.getEntries(0, 2)).length, 1, "clipped at the start");
      assert.deepEqual(await s.getEntries(41, 50), []);
      assert.deepEqual(await s.getEntries(7, 7), []);
      const e10 = (await s.getEntries(10, 11))[0]!;
      assert.equal(e10.term, 1);
      assert.equal(e10.type, "normal");
      s = await h.reopen(s);
      assert.equal(await s.firstIndex(), 1);
      assert.equal(await s.lastIndex(), 40);
      assert.equal(summary(await s.getEntries(9, 13)), "9/1/cmd-9 10/1/cmd-10 11/2/cmd-11 12/2/cmd-12");
      await s.append([entry(41, 3)]);
      assert.equal(await s.lastIndex(), 41);
      return s;
    }));

  test(`log store contract (${name}): entry types and binary data survive`, () =>
    withLog(factory, async (h, s) => {
      const bin = new Uint8Array(300).map((_, i) => (i * 7) & 0xff);
      await s.append([
        { index: 1, term: 1, type: "noop", data: new Uint8Array(0) },
        { index: 2, term: 1, type: "config", data: bin },
        { index: 3, term: 2, type: "normal", data: bin.subarray(5, 10) },
      ]);
      s = await h.reopen(s);
      const got = await s.getEntries(1, 4);
      assert.deepEqual(got.map((e) => e.type), ["noop", "config", "normal"]);
      assert.equal(got[0]!.data.length, 0);
      assert.deepEqual([...got[1]!.data], [...bin]);
      assert.deepEqual([...got[2]!.data], [...bin.subarray(5, 10)]);
      return s;
    }));

  test(`log store contract (${name}): stored entries are copies`, () =>
    withLog(factory, async (_h, s) => {
      const e = entry(1, 1, "abc");
      await s.append([e]);
      e.data[0] = 0x7a;
      const got = (await s.getEntries(1, 2))[0]!;
      assert.equal(new TextDecoder().decode(got.data), "abc");
      got.data[0] = 0x7a;
      assert.equal(new TextDecoder().decode((await s.getEntries(1, 2))[0]!.data), "abc");
    }));

  test(`log store contract (${name}): a gap is refused`, () =>
    withLog(factory, async (_h, s) => {
      await s.append(range(1, 6, 1));
      await assert.rejects(s.append([entry(8, 1)]), RangeError);
      assert.equal(await s.lastIndex(), 5);
      await s.append([entry(6, 1)]);
      assert.equal(await s.lastIndex(), 6);
    }));

  test(`log store contract (${name}): a conflicting append drops the old suffix`, () =>
    withLog(factory, async (h, s) => {
      await s.append(range(1, 31, 1));
      await s.append([entry(12, 2, "new-12"), entry(13, 2, "new-13")]);
      assert.equal(await s.lastIndex(), 13);
      assert.equal(summary(await s.getEntries(11, 20)), "11/1/cmd-11 12/2/new-12 13/2/new-13");
      s = await h.reopen(s);
      assert.equal(await s.lastIndex(), 13);
      assert.equal(summary(await s.getEntries(11, 20)), "11/1/cmd-11 12/2/new-12 13/2/new-13");
      // Overwrite from the very first entry.
      await s.append([entry(1, 3, "x")]);
      assert.equal(await s.firstIndex(), 1);
      assert.equal(await s.lastIndex(), 1);
      assert.equal(summary(await s.getEntries(1, 5)), "1/3/x");
      return s;
    }));

  test(`log store contract (${name}): deleteRange of a suffix`, () =>
    withLog(factory, async (h, s) => {
      await s.append(range(1, 31, 1));
      await s.deleteRange(20, 30);
      assert.equal(await s.lastIndex(), 19);
      s = await h.reopen(s);
      assert.equal(await s.lastIndex(), 19);
      await s.append([entry(20, 2, "again")]);
      assert.equal(summary(await s.getEntries(19, 21)), "19/1/cmd-19 20/2/again");
      return s;
    }));

  test(`log store contract (${name}): deleteRange of a prefix (compaction)`, () =>
    withLog(factory, async (h, s) => {
      await s.append(range(1, 41, 1));
      await s.deleteRange(1, 25);
      assert.equal(await s.firstIndex(), 26);
      assert.equal(await s.lastIndex(), 40);
      assert.deepEqual(await s.getEntries(1, 26), []);
      assert.equal((await s.getEntries(1, 28)).map((e) => e.index).join(), "26,27");
      s = await h.reopen(s);
      assert.equal(await s.firstIndex(), 26);
      assert.equal(await s.lastIndex(), 40);
      await s.append(range(41, 45, 2));
      await s.deleteRange(26, 42);
      assert.equal(await s.firstIndex(), 43);
      assert.equal((await s.getEntries(0, 100)).map((e) => e.index).join(), "43,44");
      return s;
    }));

  test(`log store contract (${name}): deleting everything, then starting after a snapshot`, () =>
    withLog(factory, async (h, s) => {
      await s.append(range(1, 21, 1));
      await s.deleteRange(1, 20);
      assert.equal(await s.firstIndex(), 0);
      assert.equal(await s.lastIndex(), 0);
      await s.append(range(100, 103, 4));
      assert.equal(await s.firstIndex(), 100);
      assert.equal(await s.lastIndex(), 102);
      s = await h.reopen(s);
      assert.equal(await s.firstIndex(), 100);
      assert.equal(await s.lastIndex(), 102);
      assert.equal(summary(await s.getEntries(0, 1000)), "100/4/cmd-100 101/4/cmd-101 102/4/cmd-102");
      // After a compaction point, an empty log still accepts any start.
      await s.deleteRange(100, 101);
      await s.deleteRange(102, 102);
      assert.equal(await s.lastIndex(), 0);
      await s.append([entry(50, 5)]);
      s = await h.reopen(s);
      assert.equal(await s.firstIndex(), 50);
      assert.equal(await s.lastIndex(), 50);
      return s;
    }));

  test(`log store contract (${name}): concurrent appends all land in order`, () =>
    withLog(factory, async (h, s) => {
      const writes: Promise<void>[] = [];
      for (let i = 1; i <= 50; i++) writes.push(s.append([entry(i, 1)]));
      await Promise.all(writes);
      assert.equal(await s.lastIndex(), 50);
      s = await h.reopen(s);
      assert.equal((await s.getEntries(1, 51)).map((e) => e.index).join(), range(1, 51, 1).map((e) => e.index).join());
      return s;
    }));
}

// ---------------------------------------------------------------- stable store

const stableStores: [string, Factory<StableStore>][] = [
  [
    "memory",
    async () => ({ name: "memory", open: async () => new MemoryStableStore(), reopen: async (s) => s, cleanup: async () => {} }),
  ],
  [
    "file",
    async () => {
      const dir = await tempDir();
      const open = () => FileStableStore.open({ dir, logger: nullLogger() });
      return {
        name: "file",
        open,
        reopen: async (s) => {
          await s.close();
          return open();
        },
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
];

for (const [name, factory] of stableStores) {
  test(`stable store contract (${name}): save, load, overwrite, reopen`, async () => {
    const h = await factory();
    let s = await h.open();
    try {
      assert.equal(await s.load(), undefined);
      await s.save({ term: 3, vote: "node-a", commit: 10 });
      assert.deepEqual(await s.load(), { term: 3, vote: "node-a", commit: 10 });
      await Promise.all([s.save({ term: 4, vote: "", commit: 11 }), s.save({ term: 5, vote: "node-b", commit: 12 })]);
      s = await h.reopen(s);
      assert.deepEqual(await s.load(), { term: 5, vote: "node-b", commit: 12 });
    } finally {
      await s.close();
      await h.cleanup();
    }
  });
}

// ---------------------------------------------------------------- snapshot store

const snapshotStores: [string, Factory<SnapshotStore>][] = [
  [
    "memory",
    async () => ({ name: "memory", open: async () => new MemorySnapshotStore(), reopen: async (s) => s, cleanup: async () => {} }),
  ],
  [
    "file",
    async () => {
      const dir = await tempDir();
      const open = () => FileSnapshotStore.open({ dir: join(dir, "snapshots"), logger: nullLogger() });
      return {
        name: "file",
        open,
        reopen: async (s) => {
          await s.close();
          return open();
        },
        cleanup: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
];

function meta(index: number, term: number, sizeBytes: number): SnapshotMeta {
  return {
    index,
    term,
    sizeBytes,
    configuration: { servers: [{ id: "a", address: "127.0.0.1:8300", suffrage: "voter" }] },
  };
}

for (const [name, factory] of snapshotStores) {
  test(`snapshot store contract (${name}): latest, list newest first, keep two, reopen`, async () => {
    const h = await factory();
    let s = await h.open();
    try {
      assert.equal(await s.latest(), undefined);
      assert.deepEqual(await s.list(), []);
      const data = (n: number) => new Uint8Array(100 + n).fill(n);
      await s.create(meta(10, 1, 110), data(10));
      await s.create(meta(20, 2, 120), data(20));
      await s.create(meta(30, 2, 130), data(30));
      const latest = await s.latest();
      assert.equal(latest?.meta.index, 30);
      assert.deepEqual(latest?.meta.configuration, meta(30, 2, 130).configuration);
      assert.deepEqual([...latest!.data], [...data(30)]);
      assert.deepEqual((await s.list()).map((m) => m.index), [30, 20]);
      s = await h.reopen(s);
      assert.deepEqual((await s.list()).map((m) => m.index), [30, 20]);
      assert.deepEqual([...(await s.latest())!.data], [...data(30)]);
    } finally {
      await s.close();
      await h.cleanup();
    }
  });
}

// ---------------------------------------------------------------- model check

test("file log store matches the memory store under random operations and reopens", async () => {
  for (const seed of seeds(4)) {
    const rng = new Rng(seed);
    const dir = await tempDir();
    const open = () =>
      FileLogStore.open({ dir, logger: nullLogger(), segmentSizeBytes: rng.pick([200, 600, 4096]), cacheEntries: rng.pick([1, 8, 64]) });
    const model = new MemoryLogStore();
    let file: LogStore = await open();
    const trace: string[] = [];
    try {
      let term = 1;
      for (let step = 0; step < 40; step++) {
        const first = await model.firstIndex();
        const last = await model.lastIndex();
        const roll = rng.int(100);
        if (roll < 55) {
          // Append: usually at the end, sometimes over a suffix, sometimes anywhere on an empty log.
          let start = last + 1;
          if (last === 0) start = rng.range(1, 50);
          else if (rng.chance(0.3)) start = rng.range(first, last);
          if (rng.chance(0.2)) term++;
          const n = rng.range(1, 8);
          const entries = Array.from({ length: n }, (_, i) => entry(start + i, term, `s${seed}-${step}-${i}`));
          trace.push(`append ${start}..${start + n - 1} t${term}`);
          await model.append(entries);
          await file.append(entries);
        } else if (roll < 70 && last > 0) {
          const max = rng.range(first, last);
          trace.push(`compact ..${max}`);
          await model.deleteRange(0, max);
          await file.deleteRange(0, max);
        } else if (roll < 80 && last > 0) {
          const min = rng.range(first, last);
          trace.push(`truncate ${min}..`);
          await model.deleteRange(min, Number.MAX_SAFE_INTEGER);
          await file.deleteRange(min, Number.MAX_SAFE_INTEGER);
        } else if (roll < 85) {
          trace.push("delete all");
          await model.deleteRange(0, Number.MAX_SAFE_INTEGER);
          await file.deleteRange(0, Number.MAX_SAFE_INTEGER);
        } else {
          trace.push("reopen");
          await file.close();
          file = await open();
        }
        const why = `seed ${seed}, after: ${trace.join("; ")}`;
        assert.equal(await file.firstIndex(), await model.firstIndex(), `firstIndex, ${why}`);
        assert.equal(await file.lastIndex(), await model.lastIndex(), `lastIndex, ${why}`);
        const lo = Math.max(0, (await model.firstIndex()) - 2);
        const hi = (await model.lastIndex()) + 3;
        assert.equal(summary(await file.getEntries(lo, hi)), summary(await model.getEntries(lo, hi)), `entries, ${why}`);
      }
    } finally {
      await file.close();
      await rm(dir, { recursive: true, force: true });
    }
  }
});
