// End-to-end: a snapshot far above what one Raft entry or RPC frame holds.
// 200 MiB of KV (400 values of 512 KiB) in a three-server cluster, `cairn
// snapshot save` through a follower (the archive is pulled from the leader in
// chunks), `cairn snapshot restore` into a FRESH three-server cluster through
// a follower (pushed to its leader in chunks, installed as a Raft snapshot
// and sent to the followers by InstallSnapshot). Both clusters then hold the
// same keys and bytes, and so does a follower killed and restarted after the
// restore (it starts from the snapshot on its disk).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import { join } from "node:path";
import { cairn, getJson, makeCluster, waitFor, waitForLeader, type Cluster, type ServerSpec } from "./harness.ts";

const valueBytes = 512 * 1024;
const keys = 400; // 200 MiB
const concurrency = 6;

const clusters: Cluster[] = [];
after(async () => {
  for (const c of clusters) {
    await c.stopAll();
    c.root.remove();
  }
});

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

/** Key count and one hash over every key and value under big/ (stale reads: this server's own state). */
async function digest(c: Cluster, s: ServerSpec): Promise<{ count: number; hash: string }> {
  const list = await getJson(c.url(s, "/v1/kv/big/?keys&stale"), 10_000);
  assert.ok(Array.isArray(list), `key list from ${s.name}`);
  const names = (list as string[]).slice().sort();
  const sums = new Map<string, string>();
  await pool(names, concurrency, async (k) => {
    const r = await fetch(c.url(s, `/v1/kv/${k}?raw&stale`));
    assert.equal(r.status, 200, `${k} on ${s.name}`);
    sums.set(k, createHash("sha256").update(new Uint8Array(await r.arrayBuffer())).digest("hex"));
  });
  const h = createHash("sha256");
  for (const k of names) h.update(`${k}\0${sums.get(k)}\n`);
  return { count: names.length, hash: h.digest("hex") };
}

async function keyCount(c: Cluster, s: ServerSpec): Promise<number> {
  const list = await getJson(c.url(s, "/v1/kv/big/?keys&stale"), 10_000).catch(() => undefined);
  return Array.isArray(list) ? list.length : -1;
}

test("200 MiB of KV: save from one cluster, restore into a fresh one, same keys and bytes everywhere, also after a follower restarts", { timeout: 180_000 }, async () => {
  const started = performance.now();
  const a = await makeCluster(3, { prefix: "cairn-snapshot-large-a-" });
  const b = await makeCluster(3, { prefix: "cairn-snapshot-large-b-" });
  clusters.push(a, b);
  for (const s of [...a.servers, ...b.servers]) (a.servers.includes(s) ? a : b).start(s);
  const leaderA = await waitForLeader(a, a.servers, { timeoutMs: 60_000 });
  const followerA = a.servers.find((s) => s !== leaderA)!;

  const written = Array.from({ length: keys }, (_, i) => `big/${String(i % 8)}/${String(i).padStart(4, "0")}`);
  await pool(written, concurrency, async (k) => {
    const r = await fetch(a.url(leaderA, `/v1/kv/${k}`), { method: "PUT", body: randomBytes(valueBytes) });
    assert.equal(r.status, 200, `PUT ${k}: ${await r.text()}`);
  });
  const wroteMs = performance.now() - started;
  const want = await digest(a, leaderA);
  assert.equal(want.count, keys);

  const file = join(a.root.path, "big.snap");
  const saved = await cairn(["snapshot", "save", `-http-addr=127.0.0.1:${followerA.http}`, file], { timeoutMs: 120_000 });
  assert.equal(saved.code, 0, saved.stderr);
  assert.match(saved.stdout, /^Saved and verified snapshot to index \d+\n$/);
  assert.equal(saved.stderr, "", "no progress into a pipe without -progress");
  assert.ok(statSync(file).size > keys * valueBytes, "random values do not compress: the archive holds them all");

  const inspected = await cairn(["snapshot", "inspect", "-format", "json", file], { timeoutMs: 120_000 });
  assert.equal(inspected.code, 0, inspected.stderr);
  const stats = JSON.parse(inspected.stdout) as { Stats: { Name: string; Count: number; Sum: number }[] };
  const kvs = stats.Stats.find((s) => s.Name === "kvs");
  assert.equal(kvs?.Count, keys);
  assert.ok(kvs.Sum > keys * valueBytes);

  // A fresh cluster, restored through a follower.
  const leaderB = await waitForLeader(b, b.servers, { timeoutMs: 60_000 });
  const followerB = b.servers.find((s) => s !== leaderB)!;
  assert.ok((await fetch(b.url(leaderB, "/v1/kv/fresh"), { method: "PUT", body: "cluster b" })).ok);
  const restored = await cairn(["snapshot", "restore", "-progress", `-http-addr=127.0.0.1:${followerB.http}`, file], { timeoutMs: 120_000 });
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal(restored.stdout, "Restored snapshot\n");
  assert.match(restored.stderr, /Restoring snapshot: .*\(100%\)/, "-progress reports on stderr");

  for (const s of b.servers) {
    await waitFor(async () => (await keyCount(b, s)) === keys, { timeoutMs: 60_000, what: `${keys} restored keys on ${s.name}` });
  }
  // The restore replaced the state: what cluster b held before is gone.
  assert.equal((await fetch(b.url(leaderB, "/v1/kv/fresh"))).status, 404);
  assert.deepEqual(await digest(b, leaderB), want, "the leader holds the saved bytes");

  // A follower restarted after the restore starts from the snapshot on its disk.
  const other = b.servers.find((s) => s !== leaderB && s !== followerB)!;
  await b.kill(other, "SIGKILL");
  b.start(other);
  await waitFor(async () => (await keyCount(b, other)) === keys, { timeoutMs: 60_000, what: "the restored keys after a restart" });
  assert.deepEqual(await digest(b, other), want, "the restarted follower holds the saved bytes");
  assert.match(b.output(other), /snapshot/i);

  // Writes go on after the restore, on every server.
  assert.ok((await fetch(b.url(leaderB, "/v1/kv/after"), { method: "PUT", body: "yes" })).ok);
  for (const s of b.servers) {
    await waitFor(async () => (await fetch(b.url(s, "/v1/kv/after?raw&stale")).then((r) => r.text(), () => "")) === "yes", { timeoutMs: 20_000, what: `a write after the restore on ${s.name}` });
  }
  process.stderr.write(`# writes ${(wroteMs / 1000).toFixed(1)} s, whole test ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
});
