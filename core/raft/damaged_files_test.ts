// Fuzz: damaged Raft files. A multi-segment log (partly compacted), the
// stable state and the snapshot store are written by our own code, then
// damaged: bit flips, bytes set, truncation, zeroed or duplicated ranges,
// appended garbage, anywhere in any file. On open each store must either
// recover as documented (a torn tail of the last log segment is cut, with a
// warning naming the file; a damaged snapshot is skipped for an older one)
// and then serve exactly what was written, or refuse with a CorruptionError
// whose message names the damaged file. Never another error, never altered
// data. FUZZ_SEED=n replays one seed. (log_store_file_node_test.ts covers
// one segment: crashes at every byte, flipped bytes before the last record.)

import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { CaptureSink, createLogger, nullLogger } from "../log/logger.ts";
import { fuzzSeeds, mutateBytes, replayHint, type ByteMutation } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { Fsm } from "../server/fsm.ts";
import { Server } from "../server/server.ts";
import { createRaftNode } from "./driver.ts";
import { FileLogStore } from "./log_store_file_node.ts";
import { FileSnapshotStore } from "./snapshot_store_file_node.ts";
import { FileStableStore, stableFileName } from "./stable_store_file_node.ts";
import type { LogEntry, SnapshotMeta } from "./types.ts";

const damage: readonly ByteMutation[] = ["flip-bit", "flip-bit", "set-byte", "truncate", "delete-range", "duplicate-range", "insert-random", "huge-length"];

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-damage-"));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readAll(dir: string): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for (const n of await readdir(dir)) out.set(n, new Uint8Array(await readFile(join(dir, n))));
  return out;
}

async function writeAll(dir: string, files: Map<string, Uint8Array>): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const [n, b] of files) await writeFile(join(dir, n), b);
}

function entryOf(rng: Rng, index: number, term: number): LogEntry {
  const type = index % 17 === 0 ? "config" : index % 13 === 0 ? "noop" : "normal";
  return { index, term, type, data: type === "noop" ? new Uint8Array(0) : rng.bytes(rng.range(1, 60)) };
}

test("damaged Raft log segments: a torn tail is cut, any other damage is a CorruptionError naming the segment, never altered entries", async () => {
  await withDir(async (root) => {
    for (const seed of fuzzSeeds(4)) {
      const rng = new Rng(seed);
      const src = join(root, `src-${seed}`);
      const written: LogEntry[] = [];
      const log = await FileLogStore.open({ dir: src, logger: nullLogger(), segmentSizeBytes: 600 });
      for (let i = 1; i <= 90; ) {
        const batch = Array.from({ length: rng.range(1, 6) }, (_, k) => entryOf(rng, i + k, 1 + Math.floor((i + k) / 30)));
        await log.append(batch);
        written.push(...batch);
        i += batch.length;
      }
      const compactTo = rng.pick([0, 0, 25, 40]);
      if (compactTo > 0) await log.deleteRange(1, compactTo);
      const first = await log.firstIndex();
      const last = await log.lastIndex();
      await log.close();
      const files = await readAll(src);
      const segments = [...files.keys()].filter((n) => n.endsWith(".log")).sort();
      assert.ok(segments.length >= 3, `seed ${seed}: ${segments.length} segments`);
      const lastSegmentFirst = Number(segments.at(-1)!.slice(0, 20));

      const work = join(root, `work-${seed}`);
      for (let i = 0; i < 40; i++) {
        const what = replayHint(seed, i);
        const victim = rng.chance(0.4) ? segments.at(-1)! : rng.pick(segments);
        const damaged = new Map(files);
        damaged.set(victim, mutateBytes(rng, files.get(victim)!, { only: damage, rounds: 1 }));
        await writeAll(work, damaged);
        const sink = new CaptureSink();
        let opened: FileLogStore;
        try {
          opened = await FileLogStore.open({ dir: work, logger: createLogger({ sink, level: "debug" }), segmentSizeBytes: 600 });
        } catch (err) {
          assert.ok(err instanceof CorruptionError, `${what}: ${victim} damaged: not a CorruptionError: ${String(err)}`);
          assert.ok(err.message.includes(join(work, victim)), `${what}: the message does not name "${victim}": ${err.message}`);
          assert.equal(err.file, join(work, victim), what);
          continue;
        }
        // Recovered: the same first index, a prefix of what was written, entry for entry.
        const f = await opened.firstIndex();
        const l = await opened.lastIndex();
        assert.equal(f, first, `${what}: ${victim} damaged: first index ${f}, was ${first}`);
        assert.ok(l <= last, `${what}: last index ${l} beyond ${last}`);
        const got = await opened.getEntries(f, l + 1);
        assert.deepEqual(got, written.slice(f - 1, l), `${what}: ${victim} damaged: entries differ from those written`);
        if (l < last) {
          // Only the tail of the last segment may go, and the operator is told which file lost what.
          assert.equal(victim, segments.at(-1), `${what}: entries lost from "${victim}", not the last segment`);
          assert.ok(l >= lastSegmentFirst - 1, `${what}: cut to ${l}, before the last segment (${lastSegmentFirst})`);
          const warn = sink.records.find((r) => r.message.includes("torn tail"));
          assert.ok(warn && warn.fields.file === join(work, victim), `${what}: entries ${l + 1}..${last} dropped without a warning naming the file`);
        }
        // And it takes appends again where it stopped.
        await opened.append([{ index: l + 1, term: 99, type: "normal", data: new Uint8Array([1]) }]);
        await opened.close();
      }
    }
  });
});

test("a damaged log-start file stops the open with its name, unless it still reads as an index", async () => {
  await withDir(async (root) => {
    const dir = join(root, "raft");
    const log = await FileLogStore.open({ dir, logger: nullLogger(), segmentSizeBytes: 600 });
    await log.append(Array.from({ length: 50 }, (_, k) => ({ index: k + 1, term: 1, type: "normal" as const, data: new Uint8Array(40) })));
    await log.deleteRange(1, 20);
    await log.close();
    const start = join(dir, "log-start");
    const text = new TextDecoder().decode(await readFile(start));
    for (const bad of ["", "x", `${text.trim()}x`, "-5", "1e400", "\u0000\u0000"]) {
      await writeFile(start, bad);
      if (bad === "") {
        // An empty file reads as 0 (Number("") === 0): everything is visible again, which is only the entries still on disk.
        const s = await FileLogStore.open({ dir, logger: nullLogger() });
        await s.close();
        continue;
      }
      await assert.rejects(FileLogStore.open({ dir, logger: nullLogger() }), (err: unknown) => {
        assert.ok(err instanceof CorruptionError, `${JSON.stringify(bad)}: ${String(err)}`);
        assert.ok(err.message.includes(start), err.message);
        return true;
      });
    }
  });
});

test("damaged Raft stable state: every flipped bit, truncation and trailing byte is a CorruptionError naming the file", async () => {
  await withDir(async (dir) => {
    const s = await FileStableStore.open({ dir, logger: nullLogger() });
    await s.save({ term: 7, vote: "5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44", commit: 1234 });
    await s.close();
    const path = join(dir, stableFileName);
    const good = new Uint8Array(await readFile(path));
    const variants: [string, Uint8Array][] = [];
    for (let at = 0; at < good.length; at++) {
      for (let bit = 0; bit < 8; bit++) {
        const b = good.slice();
        b[at]! ^= 1 << bit;
        variants.push([`bit ${bit} of byte ${at} flipped`, b]);
      }
    }
    for (let n = 0; n < good.length; n++) variants.push([`cut to ${n} bytes`, good.subarray(0, n)]);
    variants.push(["a trailing byte", new Uint8Array([...good, 0])], ["zeroed", new Uint8Array(good.length)]);
    for (const [what, bytes] of variants) {
      await writeFile(path, bytes);
      if (bytes.length === 0) {
        // An empty file: is it "no state yet" or damage? It must not pass for a fresh start silently.
        await assert.rejects(FileStableStore.open({ dir, logger: nullLogger() }), CorruptionError, what);
        continue;
      }
      await assert.rejects(FileStableStore.open({ dir, logger: nullLogger() }), (err: unknown) => {
        assert.ok(err instanceof CorruptionError, `${what}: ${String(err)}`);
        assert.ok(err.message.includes(path), `${what}: ${err.message}`);
        return true;
      }, what);
    }
  });
});

function meta(index: number, term: number): SnapshotMeta {
  return { index, term, sizeBytes: 300, configuration: { servers: [{ id: "a", address: "10.0.0.1:8300", suffrage: "voter" }] } };
}

test("damaged Raft snapshots: a damaged one is skipped for an older one with a warning naming it, never served", async () => {
  await withDir(async (root) => {
    for (const seed of fuzzSeeds(4)) {
      const rng = new Rng(seed);
      const dir = join(root, `snaps-${seed}`);
      const store = await FileSnapshotStore.open({ dir, logger: nullLogger(), retain: 3 });
      const originals = new Map<number, Uint8Array>();
      for (const index of [100, 200, 300]) {
        const data = rng.bytes(rng.range(1, 400));
        originals.set(index, data);
        await store.create(meta(index, index / 100), data);
      }
      await store.close();
      const files = await readAll(dir);
      const names = [...files.keys()].sort();
      for (let i = 0; i < 25; i++) {
        const what = replayHint(seed, i);
        const victim = rng.pick(names);
        const damaged = new Map(files);
        damaged.set(victim, mutateBytes(rng, files.get(victim)!, { only: damage, rounds: 1 }));
        await writeAll(join(root, "work"), damaged);
        const sink = new CaptureSink();
        let latest: { meta: SnapshotMeta; data: Uint8Array } | undefined;
        try {
          const s = await FileSnapshotStore.open({ dir: join(root, "work"), logger: createLogger({ sink, level: "debug" }), retain: 3 });
          latest = await s.latest();
        } catch (err) {
          assert.fail(`${what}: ${victim} damaged: open or latest threw ${String(err)}`);
        }
        assert.ok(latest, `${what}: ${victim} damaged: no snapshot at all, though two are intact`);
        assert.deepEqual(latest.data, originals.get(latest.meta.index), `${what}: ${victim} damaged: snapshot ${latest.meta.index} served with other data`);
        assert.deepEqual(latest.meta, meta(latest.meta.index, latest.meta.index / 100), what);
        const victimIndex = Number(victim.slice(0, 20));
        if (latest.meta.index < 300) {
          assert.equal(victimIndex, 300, `${what}: fell back below 300 though "${victim}" was damaged`);
          const base = victim.replace(/\.(snap|meta)$/, "");
          const warned = sink.records.some((r) => r.level === "warn" && String(r.fields.file).includes(base));
          assert.ok(warned, `${what}: snapshot 300 skipped without a warning naming it`);
        }
      }
    }
  });
});

// A damaged newest snapshot makes the store fall back to an older one. If
// the log was already compacted past that older snapshot, the entries in
// between exist nowhere: RaftCore logs "stored log has a gap" and drops the
// log, commitTo() clamps the stored commit index, and the node serves the
// older state as if it were current (here 12 acknowledged writes vanish).
// createRaftNode (core/raft/driver.ts) refuses to start instead: the log's
// first index is past the snapshot's index + 1, so it throws a
// CorruptionError saying which entries are missing.
test("a damaged newest snapshot with the log compacted past the older one stops the start instead of serving old state", async () => {
  await withDir(async (dir) => {
    const lone = { localAddress: "a:1", send() {}, onMessage() {}, close: async () => {} };
    const start = async () => {
      const fsm = new Fsm({ logger: nullLogger() });
      const clock = new SimClock();
      const raft = await createRaftNode({
        id: "a", address: "a:1", peers: [{ id: "a", address: "a:1" }], fsm,
        logStore: await FileLogStore.open({ dir, logger: nullLogger(), segmentSizeBytes: 400 }),
        stableStore: await FileStableStore.open({ dir, logger: nullLogger() }),
        snapshotStore: await FileSnapshotStore.open({ dir: join(dir, "snapshots"), logger: nullLogger() }),
        transport: lone, clock, rng: new Rng(1), snapshotThreshold: 10, raft: { trailingLogs: 2 },
      });
      return { raft, fsm, server: new Server({ fsm, consensus: raft, clock, rng: new Rng(2) }) };
    };
    const a = await start();
    a.raft.campaign();
    for (let i = 0; i < 50 && !a.raft.isLeader(); i++) await a.raft.idle();
    for (let i = 0; i < 40; i++) {
      await a.server.handlers["KVS.Apply"]({ op: "set", entry: { key: `k${i}`, value: new Uint8Array([i]) } });
      await a.raft.idle();
    }
    assert.equal(a.fsm.state.kvsList("").value.length, 40);
    await a.raft.stop();
    const snaps = (await readdir(join(dir, "snapshots"))).filter((n) => n.endsWith(".snap")).sort();
    assert.ok(snaps.length >= 2, "an older snapshot to fall back to");
    const newest = join(dir, "snapshots", snaps.at(-1)!);
    const bytes = new Uint8Array(await readFile(newest));
    bytes[5]! ^= 1;
    await writeFile(newest, bytes);
    let restarted: Awaited<ReturnType<typeof start>> | undefined;
    try {
      restarted = await start();
    } catch (err) {
      assert.ok(err instanceof CorruptionError, String(err));
      return;
    }
    const keys = restarted.fsm.state.kvsList("").value.length;
    await restarted.raft.stop();
    assert.fail(`the node started and serves ${keys} of the 40 keys written`);
  });
});
