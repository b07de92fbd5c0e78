// Fuzz: the agent's own small files, damaged. The node-id file must hold a
// UUID or stop the start with its path (a new ID would give a server a new
// Raft identity). The serf snapshot is a hint (members to rejoin, Lamport
// clocks), as in Serf: damaged lines are skipped with a warning naming the
// file, never a throw, and what comes out can be fed to a Serf core as is.
// FUZZ_SEED=n replays one seed.

import assert from "node:assert/strict";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CorruptionError } from "../errors.ts";
import { consulSerfTimings, lanProfile } from "../gossip/profiles.ts";
import { SerfCore } from "../gossip/serf.ts";
import { CaptureSink, createLogger, nullLogger } from "../log/logger.ts";
import { fuzzSeeds, mutateBytes, mutateText, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { formatSerfSnapshot, parseSerfSnapshot, readSerfSnapshot } from "../pool/serf_snapshot_node.ts";
import { readOrCreateNodeId } from "./server_node.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "cairn-agent-files-"));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("node-id: made once and kept; a damaged one stops the start with a message naming the file", async () => {
  await withDir(async (dir) => {
    const id = await readOrCreateNodeId(dir);
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(await readOrCreateNodeId(dir), id, "read back, not made again");
    const path = join(dir, "node-id");
    await writeFile(path, `  ${id.toUpperCase()}\n\n`);
    assert.equal(await readOrCreateNodeId(dir), id, "case and white space do not matter");
    const good = new Uint8Array(await readFile(path));
    const rng = new Rng(fuzzSeeds(1)[0]!);
    const damaged: Uint8Array[] = [new Uint8Array(0), new TextEncoder().encode("\n"), good.subarray(0, 20), new Uint8Array([...good.subarray(0, 10), 0xff, 0xfe, ...good.subarray(12)])];
    for (let i = 0; i < 30; i++) damaged.push(mutateBytes(rng, good, { only: ["flip-bit", "set-byte", "truncate", "insert-random", "delete-range"] }));
    for (const bytes of damaged) {
      const text = new TextDecoder().decode(bytes).trim();
      if (text.toLowerCase() === id) continue; // A flip in the trailing newline's neighbourhood may leave the ID whole.
      await writeFile(path, bytes);
      await assert.rejects(readOrCreateNodeId(dir), (err: unknown) => {
        assert.ok(err instanceof CorruptionError, String(err));
        assert.ok(err.message.includes(path), err.message);
        assert.equal(err.file, path);
        return true;
      }, JSON.stringify(text));
      assert.deepEqual(new Uint8Array(await readFile(path)), bytes, "the damaged file is left for the operator");
    }
    // A node-id that is a directory (or otherwise unreadable) is refused the same way.
    await rm(path);
    await mkdir(path);
    await assert.rejects(readOrCreateNodeId(dir), (err: unknown) => err instanceof CorruptionError && err.message.includes(path));
  });
});

test("serf snapshot fuzz: damaged files are read as far as they go, bad lines skipped with a warning naming the file, and the rest feeds a Serf core", async () => {
  await withDir(async (dir) => {
    const file = join(dir, "local.snapshot");
    const alive = new Map(Array.from({ length: 8 }, (_, i) => [`node-${i}`, `10.0.0.${i}:8301`] as [string, string]));
    const good = new TextEncoder().encode(formatSerfSnapshot({ alive, clock: 1234, eventClock: 56, queryClock: 7 }) + "leave\nalive: node-9 10.0.0.9:8301\n");
    for (const seed of fuzzSeeds(3)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 40; i++) {
        const what = replayHint(seed, i);
        const bytes = rng.chance(0.7) ? mutateBytes(rng, good) : new TextEncoder().encode(mutateText(rng, new TextDecoder().decode(good)));
        await writeFile(file, bytes);
        const sink = new CaptureSink();
        const snap = readSerfSnapshot(file, createLogger({ sink, level: "debug" }));
        assert.ok(snap, `${what}: nothing read from an existing file`);
        for (const c of [snap.clock, snap.eventClock, snap.queryClock]) assert.ok(Number.isSafeInteger(c) && c >= 0, `${what}: clock ${c}`);
        const { skipped } = parseSerfSnapshot(new TextDecoder().decode(bytes));
        if (skipped > 0) assert.ok(sink.records.some((r) => r.level === "warn" && r.fields.file === file), `${what}: ${skipped} lines skipped without a warning naming the file`);
        // What the agent does with it: witness the clocks and rejoin the members.
        const core = new SerfCore({
          name: "me", addr: "10.0.0.100:8301", profile: lanProfile, timings: consulSerfTimings, rng: rng.fork(), logger: nullLogger(), now: 0,
          restoreClocks: { lTime: snap.clock, eventLTime: snap.eventClock, queryLTime: snap.queryClock },
        });
        assert.doesNotThrow(() => {
          core.step({ kind: "join", now: 1, addrs: [...snap.alive.values()], ignoreOld: true });
          core.ready();
          core.step({ kind: "tick", now: 10_000 });
          core.ready();
        }, what);
      }
    }
    // Not a file at all: no snapshot, a warning naming it.
    await rm(file);
    await mkdir(file);
    const sink = new CaptureSink();
    assert.equal(readSerfSnapshot(file, createLogger({ sink, level: "debug" })), undefined);
    assert.ok(sink.records.some((r) => r.level === "warn" && r.fields.file === file));
  });
});
