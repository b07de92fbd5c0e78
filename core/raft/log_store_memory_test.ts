import { test } from "node:test";
import assert from "node:assert/strict";
import { MemoryLogStore } from "./log_store_memory.ts";
import { MemoryStableStore } from "./stable_store_memory.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import type { LogEntry } from "./types.ts";

const e = (index: number, term = 1): LogEntry => ({ index, term, type: "normal", data: new Uint8Array([index]) });

test("memory log store: append, conflict truncation, gaps, deleteRange", async () => {
  const s = new MemoryLogStore();
  assert.equal(await s.firstIndex(), 0);
  await s.append([e(1), e(2), e(3)]);
  assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [1, 3]);
  await s.append([e(2, 2)]);
  assert.deepEqual((await s.getEntries(1, 10)).map((x) => `${x.index}/${x.term}`), ["1/1", "2/2"]);
  await assert.rejects(s.append([e(5)]), RangeError);
  await s.deleteRange(0, 1);
  assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [2, 2]);
  await s.deleteRange(0, Number.MAX_SAFE_INTEGER);
  await s.append([e(40)]);
  assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [40, 40]);
});

test("memory stores: a crash loses exactly the writes whose sync had not finished", async () => {
  let release: (() => void) | undefined;
  let hold = false;
  const syncDelay = (): Promise<void> => (hold ? new Promise((r) => { release = r; }) : Promise.resolve());
  const log = new MemoryLogStore({ syncDelay });
  const stable = new MemoryStableStore({ syncDelay });
  await log.append([e(1), e(2)]);
  await stable.save({ term: 1, vote: "a", commit: 0 });
  hold = true;
  const pending = log.append([e(3)]);
  assert.equal(await log.lastIndex(), 3, "visible before sync");
  log.crash();
  release!();
  await assert.rejects(pending);
  assert.equal(await log.lastIndex(), 2, "unsynced entry lost");
  const p2 = stable.save({ term: 2, vote: "b", commit: 0 });
  stable.crash();
  release!();
  await assert.rejects(p2);
  assert.deepEqual(await stable.load(), { term: 1, vote: "a", commit: 0 });
});

test("memory snapshot store keeps the newest `retain`", async () => {
  const s = new MemorySnapshotStore({ retain: 2 });
  for (const i of [5, 9, 7]) {
    await s.create({ index: i, term: 1, sizeBytes: 1, configuration: { servers: [] } }, new Uint8Array([i]));
  }
  assert.deepEqual((await s.list()).map((m) => m.index), [9, 7]);
  assert.deepEqual((await s.latest())?.data, new Uint8Array([9]));
});
