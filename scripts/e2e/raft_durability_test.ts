// End-to-end: three real server processes (`-bootstrap-expect=3`, joined with
// -retry-join) under write load. kill -9 of the leader → a new leader within
// three election timeouts and every acknowledged write readable; a full
// restart recovers from disk; a torn last log record is cut on start; a
// server whose Raft data was wiped catches up by snapshot; a server that
// leaves is removed from the peers; with no quorum a write fails with
// "No cluster leader" after the hold timeout.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { cairn, getJson, makeCluster, waitFor, waitForLeader, type Cluster, type ServerSpec } from "./harness.ts";

const electionTimeoutMs = 1_000; // raft_multiplier 1

let cluster: Cluster | undefined;
const loads: Array<{ stop(): Promise<void> }> = [];
after(async () => {
  await Promise.all(loads.map((l) => l.stop()));
  await cluster?.stopAll();
  if (process.env.KEEP_E2E_DIRS) console.log(`kept ${cluster?.root.path}`);
  else cluster?.root.remove();
});

async function put(c: Cluster, s: ServerSpec, key: string, value: string): Promise<boolean> {
  try {
    const r = await fetch(c.url(s, `/v1/kv/${key}`), { method: "PUT", body: value, signal: AbortSignal.timeout(10_000) });
    return r.ok && (await r.text()).trim() === "true";
  } catch {
    return false;
  }
}

/** Every key under `prefix` as seen by `s` (consistent unless stale). */
async function readAll(c: Cluster, s: ServerSpec, prefix: string, mode: "consistent" | "stale" = "consistent"): Promise<Map<string, string>> {
  const body = await getJson(c.url(s, `/v1/kv/${prefix}?recurse&${mode}`), 10_000);
  const out = new Map<string, string>();
  if (!Array.isArray(body)) return out;
  for (const e of body as Array<{ Key: string; Value: string | null }>) out.set(e.Key, Buffer.from(e.Value ?? "", "base64").toString());
  return out;
}

function assertHasAll(seen: Map<string, string>, acked: Map<string, string>, what: string): void {
  const missing = [...acked].filter(([k, v]) => seen.get(k) !== v).map(([k]) => k);
  assert.equal(missing.length, 0, `${what}: ${missing.length} of ${acked.size} acknowledged writes missing, e.g. ${missing.slice(0, 5).join(", ")}`);
}

/** Writers that PUT distinct keys to random live servers until stopped; only acknowledged writes are recorded. */
function writeLoad(c: Cluster, live: () => ServerSpec[], acked: Map<string, string>, prefix: string, writers = 4): { stop(): Promise<void> } {
  let running = true;
  let seq = 0;
  const loops = Array.from({ length: writers }, async (_, w) => {
    while (running) {
      const targets = live();
      const s = targets[(seq + w) % targets.length]!;
      const key = `${prefix}/${w}-${seq++}`;
      const value = `v${seq}`;
      if (await put(c, s, key, value)) acked.set(key, value);
      else await new Promise((r) => setTimeout(r, 20));
    }
  });
  const load = {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
  loads.push(load);
  return load;
}

async function raftStats(c: Cluster, s: ServerSpec): Promise<Record<string, string> | undefined> {
  const self = (await getJson(c.url(s, "/v1/agent/self"))) as { Stats?: { raft?: Record<string, string> } } | undefined;
  return self?.Stats?.raft;
}

test("three servers: leader kill -9 under load, full restart, torn log tail, wiped server, no quorum", { timeout: 240_000 }, async (t) => {
  // Snapshots every 200 entries (checked every 1 to 2 s), 50 kept behind: a wiped server must catch up by snapshot.
  cluster = await makeCluster(3, { config: { raft_snapshot_interval: "1s", raft_snapshot_threshold: 200, raft_trailing_logs: 50 } });
  const c = cluster;
  const a = c.servers[0]!;
  for (const s of c.servers) c.start(s);

  // 1. Bootstrap from gossip: one leader, three voters.
  const leader1 = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
  const peers = await getJson(c.url(a, "/v1/status/peers"));
  assert.equal((peers as string[]).length, 3, `peers: ${JSON.stringify(peers)}`);
  const list = await cairn(["operator", "raft", "list-peers", `-http-addr=127.0.0.1:${a.http}`]);
  assert.equal(list.code, 0, list.stderr);
  assert.equal(list.stdout.trim().split("\n").length, 4, list.stdout);
  assert.match(list.stdout, /leader/);

  // A client agent (no -server) finds the servers in gossip and forwards to them.
  const client = await c.startClient("client1", { ready: false });
  try {
    await waitFor(async () => {
      const r = await fetch(`${client.http}/v1/kv/from-client`, { method: "PUT", body: "c", signal: AbortSignal.timeout(10_000) });
      return r.ok;
    }, { timeoutMs: 30_000, what: "a write through the client agent" }).catch((err) => {
      throw new Error(`${String(err)}\n--- client ---\n${client.proc.output().slice(-3000)}`);
    });
    const viaClient = await fetch(`${client.http}/v1/kv/from-client?raw`);
    assert.equal(await viaClient.text(), "c");
    assert.equal(viaClient.headers.get("x-consul-knownleader"), "true");
    const clientLeader = await getJson(`${client.http}/v1/status/leader`);
    assert.equal(clientLeader, c.rpcAddr(leader1));
    // A client has no Raft: it asks a server for the configuration.
    const clientConf = (await getJson(`${client.http}/v1/operator/raft/configuration`, 10_000)) as { Servers?: Array<{ Node: string }> } | undefined;
    assert.deepEqual(clientConf?.Servers?.map((s) => s.Node).sort(), ["s1", "s2", "s3"]);
  } finally {
    await client.stop();
  }

  // A stale read on a follower answers locally with true leader facts.
  const follower1 = c.servers.find((s) => s !== leader1)!;
  await waitFor(async () => (await fetch(c.url(follower1, "/v1/kv/from-client?stale&raw"))).ok, { what: "the write on a follower" });
  const stale = await fetch(c.url(follower1, "/v1/kv/from-client?stale"));
  assert.equal(stale.headers.get("x-consul-knownleader"), "true");
  const lastContact = Number(stale.headers.get("x-consul-lastcontact"));
  assert.ok(Number.isInteger(lastContact) && lastContact >= 0 && lastContact < 2_000, `X-Consul-LastContact ${lastContact}`);

  // 2. Write load; kill -9 the leader in the middle.
  const acked = new Map<string, string>();
  let alive = [...c.servers];
  const load = writeLoad(c, () => alive, acked, "load");
  await waitFor(() => acked.size >= 150, { timeoutMs: 30_000, what: "150 acknowledged writes" });
  const killedAt = Date.now();
  await c.kill(leader1);
  alive = alive.filter((s) => s !== leader1);
  const leader2 = await waitForLeader(c, alive, { not: c.rpcAddr(leader1), timeoutMs: 20_000 });
  const failoverMs = Date.now() - killedAt;
  const before = acked.size;
  await waitFor(() => acked.size >= before + 150, { timeoutMs: 30_000, what: "writes after failover" });
  await load.stop();
  t.diagnostic(`new leader ${failoverMs} ms after kill -9 of the old one; ${acked.size} acknowledged writes`);
  assert.ok(failoverMs <= 3 * electionTimeoutMs + 500, `new leader after ${failoverMs} ms (limit: three election timeouts)`);
  assertHasAll(await readAll(c, leader2, "load"), acked, "after leader kill");

  // 3. The killed server comes back and catches up.
  c.start(leader1);
  await waitFor(async () => (await readAll(c, leader1, "load", "stale")).size >= acked.size, { timeoutMs: 30_000, what: "old leader catching up" });

  // 4. Full restart of all three (kill -9): everything recovers from disk.
  await Promise.all(c.servers.map((s) => c.kill(s)));
  for (const s of c.servers) c.start(s);
  const leader3 = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
  assertHasAll(await readAll(c, leader3, "load"), acked, "after full restart");

  // 5. A torn last record: cut bytes off the newest segment of a follower while it is down.
  const torn = c.servers.find((s) => s !== leader3)!;
  const raftDir = join(torn.dir, "raft");
  const newestSegment = () => readdirSync(raftDir).filter((f) => f.endsWith(".log")).sort().at(-1);
  // A follower that last caught up by snapshot (the old leader, in step 3) has no segment until
  // the new leader's first entry reaches it.
  await waitFor(() => {
    const seg = newestSegment();
    return seg !== undefined && statSync(join(raftDir, seg)).size > 0;
  }, { timeoutMs: 30_000, what: "a record in the follower's newest log segment" });
  await c.kill(torn);
  const last = join(raftDir, newestSegment()!);
  // A crash in the middle of writing a record that was never acknowledged:
  // its header promises 100 payload bytes, only 20 reached the disk.
  const header = Buffer.alloc(8);
  header.writeUInt32BE(100, 0);
  header.writeUInt32BE(0xdeadbeef, 4);
  const sizeBefore = statSync(last).size;
  appendFileSync(last, Buffer.concat([header, Buffer.alloc(20, 0x5a)]));
  const outBefore = c.output(torn).length;
  c.start(torn);
  await waitFor(() => /torn tail/.test(c.output(torn).slice(outBefore)), { timeoutMs: 30_000, what: "torn tail warning" });
  assert.match(c.output(torn).slice(outBefore), new RegExp(`offset=${sizeBefore} droppedBytes=28`), "the torn record is cut where it starts");
  assert.ok(await put(c, leader3, "after-torn", "x"), "write after torn-tail restart");
  acked.set("after-torn", "x");
  await waitFor(async () => (await readAll(c, torn, "", "stale")).get("after-torn") === "x", { timeoutMs: 30_000, what: "torn server catching up" })
    .catch(async (err) => {
      const stats = JSON.stringify({ torn: await raftStats(c, torn), leader: await raftStats(c, leader3) });
      throw new Error(`${String(err)}\n${stats}\n--- ${torn.name} ---\n${c.output(torn).slice(-3000)}`);
    });

  // 6. Wipe a follower's Raft data and bring it back: it catches up by snapshot.
  const more = writeLoad(c, () => [leader3], acked, "more", 8);
  await waitFor(() => acked.size >= 700, { timeoutMs: 60_000, what: "enough writes for a snapshot" });
  await more.stop();
  const wiped = c.servers.find((s) => s !== leader3 && s !== torn) ?? torn;
  await c.kill(wiped);
  // Remove it from the configuration (operator raft remove-peer), wipe its Raft
  // data; the leader re-adds it when gossip shows it alive again.
  const wipedId = readFileSync(join(wiped.dir, "node-id"), "utf8").trim();
  const rm = await cairn(["operator", "raft", "remove-peer", `-id=${wipedId}`, `-http-addr=127.0.0.1:${leader3.http}`]);
  assert.equal(rm.code, 0, rm.stderr);
  assert.match(rm.stdout, /Removed peer with id/);
  rmSync(join(wiped.dir, "raft"), { recursive: true, force: true });
  assert.ok(!existsSync(join(wiped.dir, "raft")));
  for (let i = 0; i < 60; i++) if (await put(c, leader3, `post-wipe/${i}`, "y")) acked.set(`post-wipe/${i}`, "y");
  c.start(wiped);
  await waitFor(async () => {
    const seen = await readAll(c, wiped, "", "stale");
    return [...acked].every(([k, v]) => seen.get(k) === v);
  }, { timeoutMs: 60_000, what: "wiped server holding every acknowledged write" }).catch((err) => {
    throw new Error(`${String(err)}\n--- ${wiped.name} ---\n${c.output(wiped).slice(-4000)}`);
  });
  const stats = await raftStats(c, wiped);
  assert.ok(Number(stats?.last_snapshot_index ?? 0) > 0, `wiped server restored a snapshot: ${JSON.stringify(stats)}`);

  // 7. A server that leaves (PUT /v1/agent/leave) is removed from the peer set by the leader.
  const leaver = c.servers.find((s) => s !== leader3)!;
  const left = await fetch(c.url(leaver, "/v1/agent/leave"), { method: "PUT", signal: AbortSignal.timeout(30_000) });
  assert.equal(left.status, 200);
  await waitFor(async () => {
    const p = await getJson(c.url(leader3, "/v1/status/peers"));
    return Array.isArray(p) && p.length === 2 && !p.includes(c.rpcAddr(leaver));
  }, { timeoutMs: 30_000, what: "the leaving server removed from the peers" });
  await c.kill(leaver);

  // 8. No quorum: one of the two voters left, a write waits for the hold timeout, then 500 "No cluster leader".
  const survivor = c.servers.find((s) => s !== leader3 && s !== leaver)!;
  await c.kill(leader3);
  const t0 = Date.now();
  const r = await fetch(c.url(survivor, "/v1/kv/no-quorum"), { method: "PUT", body: "z", signal: AbortSignal.timeout(30_000) });
  const heldMs = Date.now() - t0;
  assert.equal(r.status, 500);
  assert.equal((await r.text()).trim(), "No cluster leader");
  assert.ok(heldMs >= 5_000, `held ${heldMs} ms before failing (rpc_hold_timeout 7 s)`);
});
