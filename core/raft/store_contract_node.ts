// Contract suites for the storage seams (hono `common.case.test.ts` style):
// every LogStore / StableStore / SnapshotStore implementation runs the same
// cases. Call from a *_test.ts with a factory returning a fresh, empty store;
// `reopen` (optional) closes and reopens the same underlying storage to check
// that what was awaited survived.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { LogEntry, LogStore, SnapshotMeta, SnapshotStore, StableStore } from "./types.ts";

const entry = (index: number, term = 1, size = 3): LogEntry => ({
  index,
  term,
  type: "normal",
  data: new Uint8Array(size).fill(index & 0xff),
});

const ids = (es: LogEntry[]): string[] => es.map((e) => `${e.index}/${e.term}`);

export interface StoreFactory<S> {
  create(): Promise<S>;
  reopen?(store: S): Promise<S>;
}

export function logStoreContract(name: string, f: StoreFactory<LogStore>): void {
  test(`${name}: LogStore empty, append, read back`, async () => {
    const s = await f.create();
    assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [0, 0]);
    assert.deepEqual(await s.getEntries(1, 10), []);
    await s.append([entry(1), entry(2), entry(3)]);
    assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [1, 3]);
    const got = await s.getEntries(2, 4);
    assert.deepEqual(ids(got), ["2/1", "3/1"]);
    assert.deepEqual(got[0]!.data, entry(2).data);
    assert.equal(got[0]!.type, "normal");
    await s.close();
  });

  test(`${name}: LogStore append replaces a conflicting suffix and rejects gaps`, async () => {
    const s = await f.create();
    await s.append([entry(1), entry(2), entry(3), entry(4)]);
    await s.append([entry(3, 2), entry(4, 2), entry(5, 2)]);
    assert.deepEqual(ids(await s.getEntries(1, 10)), ["1/1", "2/1", "3/2", "4/2", "5/2"]);
    await s.append([entry(2, 3)]);
    assert.deepEqual(ids(await s.getEntries(1, 10)), ["1/1", "2/3"]);
    await assert.rejects(s.append([entry(9)]), RangeError);
    await s.close();
  });

  test(`${name}: LogStore deleteRange compacts a prefix and can empty the log`, async () => {
    const s = await f.create();
    await s.append(Array.from({ length: 20 }, (_, i) => entry(i + 1)));
    await s.deleteRange(0, 10);
    assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [11, 20]);
    assert.deepEqual(ids(await s.getEntries(1, 13)), ["11/1", "12/1"]);
    await s.append([entry(21)]);
    await s.deleteRange(0, Number.MAX_SAFE_INTEGER);
    assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [0, 0]);
    // After a snapshot install, an empty log accepts any start index.
    await s.append([entry(100, 4), entry(101, 4)]);
    assert.deepEqual([await s.firstIndex(), await s.lastIndex()], [100, 101]);
    await s.close();
  });

  test(`${name}: LogStore keeps config and noop entries and large payloads intact`, async () => {
    const s = await f.create();
    const big = new Uint8Array(300_000);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff;
    const es: LogEntry[] = [
      { index: 1, term: 1, type: "noop", data: new Uint8Array(0) },
      { index: 2, term: 1, type: "config", data: new Uint8Array([1, 2, 3]) },
      { index: 3, term: 2, type: "normal", data: big },
    ];
    await s.append(es);
    assert.deepEqual(await s.getEntries(1, 4), es);
    await s.close();
  });

  if (f.reopen) {
    const reopen = f.reopen;
    test(`${name}: LogStore survives close and reopen`, async () => {
      let s = await f.create();
      await s.append([entry(1), entry(2), entry(3)]);
      await s.append([entry(3, 2)]);
      await s.deleteRange(0, 1);
      s = await reopen(s);
      assert.deepEqual(ids(await s.getEntries(0, 10)), ["2/1", "3/2"]);
      await s.append([entry(4, 2)]);
      assert.equal(await s.lastIndex(), 4);
      await s.close();
    });
  }
}

export function stableStoreContract(name: string, f: StoreFactory<StableStore>): void {
  test(`${name}: StableStore load/save`, async () => {
    let s = await f.create();
    assert.equal(await s.load(), undefined);
    await s.save({ term: 3, vote: "a", commit: 7 });
    await s.save({ term: 4, vote: "", commit: 9 });
    assert.deepEqual(await s.load(), { term: 4, vote: "", commit: 9 });
    if (f.reopen) {
      s = await f.reopen(s);
      assert.deepEqual(await s.load(), { term: 4, vote: "", commit: 9 });
    }
    await s.close();
  });
}

export function snapshotStoreContract(name: string, f: StoreFactory<SnapshotStore>): void {
  const meta = (index: number, sizeBytes: number): SnapshotMeta => ({
    index,
    term: 2,
    sizeBytes,
    configuration: { servers: [{ id: "a", address: "10.0.0.1:8300", suffrage: "voter" }, { id: "b", address: "10.0.0.2:8300", suffrage: "nonvoter" }] },
  });
  test(`${name}: SnapshotStore create, latest, list, retention`, async () => {
    let s = await f.create();
    assert.equal(await s.latest(), undefined);
    assert.deepEqual(await s.list(), []);
    for (const i of [10, 20, 30]) await s.create(meta(i, 4), new Uint8Array([i, i, i, i]));
    const latest = await s.latest();
    assert.deepEqual(latest?.meta, meta(30, 4));
    assert.deepEqual(latest?.data, new Uint8Array([30, 30, 30, 30]));
    const listed = (await s.list()).map((m) => m.index);
    assert.equal(listed[0], 30);
    assert.ok(listed.length >= 1 && listed.length <= 3, `retains a few: ${listed}`);
    if (f.reopen) {
      s = await f.reopen(s);
      assert.deepEqual((await s.latest())?.meta, meta(30, 4));
    }
    await s.close();
  });
}
