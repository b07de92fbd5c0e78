// End-to-end: `cairn snapshot save` through a follower (forwarded to the
// leader), more writes, `cairn snapshot restore`: every server of a
// three-server cluster answers with the saved state, and it survives a
// kill -9 and restart of a server (the restore is a Raft snapshot on every
// server's disk; snapshot_large_test.ts does the same with 200 MiB).
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cairn, getJson, makeCluster, waitFor, waitForLeader, type Cluster, type ServerSpec } from "./harness.ts";

let cluster: Cluster | undefined;
after(async () => {
  await cluster?.stopAll();
  cluster?.root.remove();
});

async function staleKeys(c: Cluster, s: ServerSpec): Promise<string[]> {
  const keys = await getJson(c.url(s, "/v1/kv/app/?keys&stale")).catch(() => undefined);
  return Array.isArray(keys) ? (keys as string[]) : [];
}

test("three servers: snapshot save via a follower, restore, every server and a restarted one hold the saved state", { timeout: 120_000 }, async () => {
  cluster = await makeCluster(3, { prefix: "cairn-snapshot-e2e-" });
  const c = cluster;
  for (const s of c.servers) c.start(s);
  const leader = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
  const follower = c.servers.find((s) => s !== leader)!;
  for (const k of ["one", "two"]) {
    const r = await fetch(c.url(leader, `/v1/kv/app/${k}`), { method: "PUT", body: k });
    assert.ok(r.ok);
  }

  const file = join(c.root.path, "backup.snap");
  const saved = await cairn(["snapshot", "save", `-http-addr=127.0.0.1:${follower.http}`, file]);
  assert.equal(saved.code, 0, saved.stderr);
  assert.match(saved.stdout, /^Saved and verified snapshot to index \d+/);

  assert.ok((await fetch(c.url(leader, "/v1/kv/app/three"), { method: "PUT", body: "3" })).ok);
  assert.ok((await fetch(c.url(leader, "/v1/kv/app/one"), { method: "DELETE" })).ok);
  const restored = await cairn(["snapshot", "restore", `-http-addr=127.0.0.1:${follower.http}`, file]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.equal(restored.stdout, "Restored snapshot\n");

  for (const s of c.servers) {
    await waitFor(async () => JSON.stringify(await staleKeys(c, s)) === JSON.stringify(["app/one", "app/two"]), { timeoutMs: 10_000, what: `the restored keys on ${s.name}` });
  }

  // Damaged files are refused with the reason, through a follower, and change nothing.
  const good = readFileSync(file);
  const flipped = Buffer.from(good);
  flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
  const damaged: [string, Uint8Array, RegExp][] = [
    ["garbage", randomBytes(10 * 1024 * 1024), /not valid gzip/],
    ["truncated", good.subarray(0, good.length - 40), /truncated/],
    ["flipped", flipped, /Invalid snapshot: /],
  ];
  for (const [name, bytes, reason] of damaged) {
    const bad = join(c.root.path, `${name}.snap`);
    writeFileSync(bad, bytes);
    const r = await cairn(["snapshot", "restore", `-http-addr=127.0.0.1:${follower.http}`, bad]);
    assert.equal(r.code, 1, `${name}: ${r.stdout}`);
    assert.match(r.stderr, /^Error restoring snapshot: Unexpected response code: 400 \(Invalid snapshot: /, name);
    assert.match(r.stderr, reason, name);
  }
  for (const s of c.servers) assert.deepEqual(await staleKeys(c, s), ["app/one", "app/two"], `nothing changed on ${s.name}`);

  // The restore is a stored Raft snapshot: a server killed and restarted starts from it.
  await c.kill(follower, "SIGKILL");
  c.start(follower);
  await waitFor(async () => JSON.stringify(await staleKeys(c, follower)) === JSON.stringify(["app/one", "app/two"]), { timeoutMs: 30_000, what: "the restored keys after a restart" });
  assert.equal(await (await fetch(c.url(follower, "/v1/kv/app/two?raw&stale"))).text(), "two");
});
