// Snapshot benchmark (not a test): `node --import tsx scripts/bench/snapshot.ts [--sizes 100,1024]`.
// For each size (MiB of KV state, in 512 KiB random values: they do not
// compress, the worst case for the archive), on 127.0.0.1 free ports:
//   1. three cairn servers (dist/cairn, or CAIRN_E2E_BIN) take the state
//      through PUTs to the leader; the servers snapshot once near the end
//      (raft_snapshot_threshold = the number of writes, 16 trailing
//      entries), so the leader holds the state once, not also as log entries;
//   2. `cairn snapshot save` against the leader: wall time, and the leader's
//      peak RSS during the save (VmHWM from /proc/<pid>/status, reset through
//      /proc/<pid>/clear_refs just before);
//   3. a fresh three-server cluster, `cairn snapshot restore` against its
//      leader: wall time of the command (it returns once a quorum installed
//      the snapshot, or after 20 s), time until every follower answers with
//      every key, and each server's peak RSS since it started.
// Targets (issue #18): peak RSS below the state size + 200 MiB, and at least
// 100 MiB/s for save and for restore. Prints a table; asserts nothing.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { cairn, getJson, makeCluster, waitFor, waitForLeader, type Cluster, type ServerSpec } from "../e2e/harness.ts";

const valueBytes = 512 * 1024;
const concurrency = 8;

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  if (i >= 0) return process.argv[i + 1];
  const eq = process.argv.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

const sizes = (arg("--sizes") ?? "100").split(",").map((s) => Number(s.trim()));
if (sizes.some((s) => !Number.isFinite(s) || s <= 0)) {
  process.stderr.write("usage: snapshot.ts [--sizes 100,1024]  (MiB of state per run)\n");
  process.exit(2);
}

const MiB = 1024 * 1024;

function status(pid: number): { rssMiB: number; hwmMiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);
  return { rssMiB: kib("VmRSS") / 1024, hwmMiB: kib("VmHWM") / 1024 };
}

/** Reset the peak RSS to the current RSS (Linux: "5" to clear_refs). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

async function keyCount(c: Cluster, s: ServerSpec): Promise<number> {
  const list = await getJson(c.url(s, "/v1/kv/bench/?keys&stale"), 30_000).catch(() => undefined);
  return Array.isArray(list) ? list.length : -1;
}

function snapshotsOnDisk(s: ServerSpec): number {
  try {
    return readdirSync(join(s.dir, "raft", "snapshots")).filter((n) => n.endsWith(".meta")).length;
  } catch {
    return 0;
  }
}

interface Row {
  sizeMiB: number;
  archiveMiB: number;
  saveS: number;
  saveLeaderBeforeMiB: number;
  saveLeaderPeakMiB: number;
  restoreS: number;
  replicatedS: number;
  restoreLeaderPeakMiB: number;
  restoreFollowerPeakMiB: number;
}

async function runSize(sizeMiB: number): Promise<Row> {
  const writes = Math.ceil((sizeMiB * MiB) / valueBytes);
  const config = { raft_snapshot_threshold: writes, raft_trailing_logs: 16, raft_snapshot_interval: "1s" };
  const a = await makeCluster(3, { prefix: "cairn-bench-snap-a-", config });
  let b: Cluster | undefined;
  try {
    for (const s of a.servers) a.start(s);
    const leaderA = await waitForLeader(a, a.servers, { timeoutMs: 60_000 });
    const keys = Array.from({ length: writes }, (_, i) => `bench/${i % 16}/${String(i).padStart(6, "0")}`);
    const t0 = performance.now();
    await pool(keys, concurrency, async (k) => {
      const r = await fetch(a.url(leaderA, `/v1/kv/${k}`), { method: "PUT", body: randomBytes(valueBytes) });
      if (r.status !== 200) throw new Error(`PUT ${k}: ${r.status} ${await r.text()}`);
    });
    const writeS = (performance.now() - t0) / 1000;
    process.stderr.write(`# ${sizeMiB} MiB written in ${writeS.toFixed(1)} s (${(sizeMiB / writeS).toFixed(1)} MiB/s)\n`);
    // The snapshot near the end compacts the leader's log: wait for it, then for the log's memory to go.
    await waitFor(async () => snapshotsOnDisk(leaderA) > 0, { timeoutMs: 300_000, intervalMs: 250, what: "the leader's snapshot" });
    await new Promise((r) => setTimeout(r, 3_000));

    const pidA = leaderA.proc!.pid;
    const before = status(pidA).rssMiB;
    resetPeak(pidA);
    const file = join(a.root.path, "bench.snap");
    const s0 = performance.now();
    const saved = await cairn(["snapshot", "save", `-http-addr=127.0.0.1:${leaderA.http}`, file], { timeoutMs: 900_000 });
    const saveS = (performance.now() - s0) / 1000;
    if (saved.code !== 0) throw new Error(`save failed: ${saved.stderr}`);
    const savePeak = status(pidA).hwmMiB;
    const archiveMiB = statSync(file).size / MiB;
    await a.stopAll();

    // Ports are taken when the cluster is made: made only now, so none went elsewhere meanwhile.
    b = await makeCluster(3, { prefix: "cairn-bench-snap-b-", config });
    for (const s of b.servers) b.start(s);
    const leaderB = await waitForLeader(b, b.servers, { timeoutMs: 60_000 });
    const r0 = performance.now();
    const restored = await cairn(["snapshot", "restore", `-http-addr=127.0.0.1:${leaderB.http}`, file], { timeoutMs: 900_000 });
    const restoreS = (performance.now() - r0) / 1000;
    if (restored.code !== 0) throw new Error(`restore failed: ${restored.stderr}`);
    const bb = b;
    for (const s of b.servers) await waitFor(async () => (await keyCount(bb, s)) === writes, { timeoutMs: 600_000, what: `${writes} keys on ${s.name}`, intervalMs: 250 });
    const replicatedS = (performance.now() - r0) / 1000;
    const leaderPeak = status(leaderB.proc!.pid).hwmMiB;
    const followerPeak = Math.max(...b.servers.filter((s) => s !== leaderB).map((s) => status(s.proc!.pid).hwmMiB));
    return {
      sizeMiB,
      archiveMiB,
      saveS,
      saveLeaderBeforeMiB: before,
      saveLeaderPeakMiB: savePeak,
      restoreS,
      replicatedS,
      restoreLeaderPeakMiB: leaderPeak,
      restoreFollowerPeakMiB: followerPeak,
    };
  } finally {
    await a.stopAll();
    await b?.stopAll();
    a.root.remove();
    b?.root.remove();
  }
}

const rows: Row[] = [];
for (const size of sizes) rows.push(await runSize(size));

const f = (n: number, d = 1) => n.toFixed(d);
console.log("| state MiB | archive MiB | save s | save MiB/s | leader RSS before save MiB | leader peak RSS during save MiB | restore s | restore MiB/s | all followers have it, s | leader peak RSS MiB | follower peak RSS MiB | RSS target (state + 200) MiB |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(`| ${r.sizeMiB} | ${f(r.archiveMiB)} | ${f(r.saveS, 2)} | ${f(r.sizeMiB / r.saveS)} | ${f(r.saveLeaderBeforeMiB, 0)} | ${f(r.saveLeaderPeakMiB, 0)} | ${f(r.restoreS, 2)} | ${f(r.sizeMiB / r.restoreS)} | ${f(r.replicatedS, 1)} | ${f(r.restoreLeaderPeakMiB, 0)} | ${f(r.restoreFollowerPeakMiB, 0)} | ${r.sizeMiB + 200} |`);
}
