// ROBUSTNESS (issue #15), the short seeded CI version of `npm run robustness`:
// real dist/cairn servers on their own loopback addresses under the seeded
// nemesis (nftables partitions, kill -9, SIGSTOP, full tmpfs data dirs) with
// KV / txn / lock clients, every history checked for linearizability.
// NOTE: until writes are applied exactly once across leader changes (the
// server half of #15), the two runs below may fail on a replayed write; the
// failure names the seed, the replay command and the kept directory
// (history.json, report.txt, timeline.txt, logs/ of every server).
// Needs root for nft and tmpfs; without them those faults are left out.
// Also checks that the nemesis cleans up after itself, on the normal path
// and on SIGINT: no nft table, tmpfs mount or server process is left behind.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Rng } from "../../core/sim/mod.ts";
import { Cluster } from "../robustness/cluster.ts";
import { Nemesis } from "../robustness/nemesis.ts";
import { releaseAllSync } from "../robustness/resources.ts";
import { runOnce, usableFaults, type RunResult } from "../robustness/runner.ts";
import { cairnBin, root } from "./harness.ts";

const haveBinary = existsSync(cairnBin) || !!process.env.CAIRN_E2E_BIN;

function nftTables(): string {
  const r = spawnSync("nft", ["list", "tables"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout : "";
}

function mountsUnder(path: string): string[] {
  return spawnSync("mount", [], { encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes(path));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Server processes whose command line names this directory. */
function processesUnder(path: string): string[] {
  return spawnSync("pgrep", ["-af", path], { encoding: "utf8" }).stdout.split("\n").filter((l) => l.includes(path) && !l.includes("pgrep"));
}

function failureMessage(r: RunResult): string {
  return `robustness run with seed ${r.seed} (${r.servers} servers) found ${r.anomalies.length} anomalies: ` +
    `${[...new Set(r.anomalies.map((a) => a.kind))].join(", ")}\nkept ${r.dir}\nreplay: ${r.replay}\n\n` +
    r.anomalies.slice(0, 3).map((a) => `[${a.kind}] ${a.explanation.split("\n").slice(0, 25).join("\n")}`).join("\n\n");
}

test("robustness: the nemesis leaves no nft table, tmpfs mount or process behind", { skip: !haveBinary && "dist/cairn is missing" }, async () => {
  const faults = usableFaults(["partition", "disk"]);
  const cluster = await Cluster.create({ servers: 3, runNumber: 250, tmpfsServers: faults.includes("disk") ? [0] : [] });
  const t0 = performance.now();
  const nemesis = new Nemesis({ cluster, rng: new Rng(7), faults, now: () => performance.now() - t0, log: () => {} });
  try {
    for (const s of cluster.servers) cluster.start(s);
    await cluster.waitForLeader({ timeoutMs: 60_000 });
    const [a, b, c] = cluster.servers as [typeof cluster.servers[0], typeof cluster.servers[0], typeof cluster.servers[0]];
    if (faults.includes("partition")) {
      nemesis.applyCuts([[a, b]]);
      assert.match(nftTables(), new RegExp(nemesis.table));
    }
    if (faults.includes("disk")) {
      assert.ok(nemesis.fill(a) > 0);
      assert.equal(mountsUnder(cluster.root).length, 1);
    }
    cluster.pause(c);
    const pids = cluster.servers.map((s) => s.proc!.pid);
    await nemesis.healAll();
    await cluster.stop();
    releaseAllSync();
    assert.doesNotMatch(nftTables(), new RegExp(nemesis.table));
    assert.deepEqual(mountsUnder(cluster.root), []);
    assert.deepEqual(pids.filter(alive), []);
    assert.equal(existsSync(cluster.root), false);
  } finally {
    await cluster.stop();
    releaseAllSync();
  }
});

test("robustness: SIGINT in the middle of a run cleans up too", { skip: !haveBinary && "dist/cairn is missing" }, async () => {
  const child = spawn(process.execPath, ["--import", "tsx", join(root, "scripts/robustness/run.ts"), "--seconds", "60", "--servers", "3", "--seed", "9", "--faults", "partition,disk,pause"], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | string>((ok) => child.once("exit", (code, sig) => ok(code ?? sig ?? "?")));
  try {
    // Interrupt right after the first fault is in place.
    const deadline = Date.now() + 90_000;
    while (!/nemesis: (partition|disk full|SIGSTOP)/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.match(out, /nemesis: /, `no fault within 90 s:\n${out}`);
    const dir = /cluster: .* in (\S+)/.exec(out)?.[1];
    assert.ok(dir, out);
    child.kill("SIGINT");
    assert.equal(await exited, 130, out);
    assert.doesNotMatch(nftTables(), new RegExp(`cairn_robust_${child.pid}\\b`));
    assert.deepEqual(mountsUnder(dir), []);
    assert.deepEqual(processesUnder(dir), []);
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
});

// Seeds fixed so a failure here replays with `npm run robustness -- --seed …`.
for (const [seed, servers] of [[1501, 3], [1502, 5]] as const) {
  test(`robustness: ${servers} servers, all faults, 40 s, seed ${seed}`, { skip: !haveBinary && "dist/cairn is missing", timeout: 170_000 }, async () => {
    const r = await runOnce({
      seed, servers, seconds: 40, faults: usableFaults(["kill", "pause", "partition", "disk"]), runNumber: 240 + servers,
      checkTimeoutMs: 20_000, log: () => {},
    });
    console.log(`seed ${seed}, ${servers} servers:\n  ${r.lines.join("\n  ")}`);
    try {
      assert.equal(r.anomalies.length, 0, failureMessage(r));
    } finally {
      releaseAllSync();
    }
  });
}
