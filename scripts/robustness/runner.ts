// One robustness run: start a cluster, run the workloads under the seeded
// nemesis, heal, read every key, check the histories. A run with an anomaly
// (or a crash) keeps its directory: history.json, report.txt, timeline.txt
// and logs/<server>.log with every incarnation of every server.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Rng } from "../../core/sim/mod.ts";
import { checkHistories, type Anomaly } from "./checks.ts";
import { Cluster } from "./cluster.ts";
import { Nemesis, type FaultKind } from "./nemesis.ts";
import { canMountTmpfs, canUseNft, keepDir } from "./resources.ts";
import { finalReads, replicaDivergence, kvClient, lockClient, txnClient, workloadKeys, type Findings, type Histories, type WorkloadKind, type WorkloadOptions } from "./workloads.ts";

export interface RunOptions {
  seed: number;
  servers: number;
  seconds: number;
  faults: readonly FaultKind[];
  /** Concurrent clients (default 10). */
  clients?: number;
  /** Keep the run's directory even when it passes. */
  keep?: boolean;
  /** Distinguishes runs of one process (part of the servers' addresses). */
  runNumber: number;
  /** Client request timeout, ms (default 10 000). */
  requestTimeoutMs?: number;
  /**
   * Snapshot every this many Raft entries (raft_snapshot_threshold, checked
   * each second, 64 trailing logs), so restarts and lagging followers go
   * through snapshots; default off (the servers' own defaults).
   */
  snapshotEvery?: number;
  /** Max pause between one client's operations, ms (default 10). */
  thinkMs?: number;
  /** Time budget of each linearizability check, ms (default 120 000). */
  checkTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface RunResult {
  seed: number;
  servers: number;
  anomalies: Anomaly[];
  crashes: string[];
  inconclusive: string[];
  lines: string[];
  /** The kept directory, if any. */
  dir?: string;
  /** The command that replays this run. */
  replay: string;
}

/** Which workload client i runs: about half KV, 30 % lock, 20 % txn (one each from three clients up). */
export function clientKinds(n: number): WorkloadKind[] {
  const lock = n >= 3 ? Math.max(1, Math.round(n * 0.3)) : 0;
  const txn = n >= 3 ? Math.max(1, Math.round(n * 0.2)) : 0;
  const kv = n - lock - txn;
  return Array.from({ length: n }, (_, i) => (i < kv ? "kv" : i < kv + lock ? "lock" : "txn"));
}

/** Drop faults this machine cannot inject (no root, no nft), saying so. */
export function usableFaults(wanted: readonly FaultKind[]): FaultKind[] {
  const out = [...wanted];
  if (out.includes("partition") && !canUseNft()) {
    console.log("note: nft is unusable here (needs root and nftables): no partitions");
    out.splice(out.indexOf("partition"), 1);
  }
  if (out.includes("disk")) {
    const probe = mkdtempSync(join(tmpdir(), "cairn-robust-probe-"));
    const ok = canMountTmpfs(probe);
    rmSync(probe, { recursive: true, force: true });
    if (!ok) {
      console.log("note: cannot mount a tmpfs here (needs root): no disk faults");
      out.splice(out.indexOf("disk"), 1);
    }
  }
  return out;
}

function replayCommand(o: RunOptions): string {
  return `npm run robustness -- --seed ${o.seed} --servers ${o.servers} --seconds ${o.seconds} --faults ${o.faults.join(",")}` +
    (o.clients !== undefined && o.clients !== 10 ? ` --clients ${o.clients}` : "") +
    (o.snapshotEvery ? ` --snapshot-every ${o.snapshotEvery}` : "");
}

function historyJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v === Infinity ? null : v instanceof Map ? Object.fromEntries(v) : v), 1);
}

export async function runOnce(o: RunOptions): Promise<RunResult> {
  const log = o.log ?? ((line: string) => console.log(line));
  const timeline: string[] = [];
  const note = (line: string) => { timeline.push(line); log(line); };
  const rng = new Rng(o.seed);
  const nemesisRng = rng.fork();
  const setupRng = rng.fork();
  const clientCount = o.clients ?? 10;
  const clientRngs = Array.from({ length: clientCount }, () => rng.fork());
  const tmpfsServers = o.faults.includes("disk")
    ? setupRng.shuffle(Array.from({ length: o.servers }, (_, i) => i)).slice(0, o.servers >= 5 ? 2 : 1)
    : [];
  const config = o.snapshotEvery ? { raft_snapshot_threshold: o.snapshotEvery, raft_snapshot_interval: "1s", raft_trailing_logs: 64 } : undefined;
  const cluster = await Cluster.create({ servers: o.servers, runNumber: o.runNumber, tmpfsServers, tmpfsBytes: 64 * 1024 * 1024, ...(config ? { config } : {}) });
  const t0 = performance.now();
  const now = () => performance.now() - t0;
  const stamp = () => `${(now() / 1000).toFixed(1).padStart(6)}s`;
  note(`${stamp()} binary: ${cluster.binaryVersion}`);
  note(`${stamp()} cluster: ${cluster.servers.map((s) => `${s.name}=${s.addr}${s.tmpfs ? " (tmpfs)" : ""}`).join(" ")} in ${cluster.root}`);
  const keys = workloadKeys();
  const histories: Histories = { kv: [], txn: [], lock: [] };
  const findings: Findings = { direct: [], errors: new Map(), sent: { kv: 0, txn: 0, lock: 0 } };
  const nemesis = new Nemesis({ cluster, rng: nemesisRng, faults: o.faults, now, log: note });
  let failure: string | undefined;
  let finalKv = new Map<string, string | null>();
  let diverged: string[] = [];
  try {
    for (const s of cluster.servers) cluster.start(s);
    const leader = await cluster.waitForLeader({ timeoutMs: 60_000 });
    note(`${stamp()} leader ${leader.name}; ${clientCount} clients (${clientKinds(clientCount).join(",")}) for ${o.seconds} s, faults ${o.faults.join(",") || "none"}`);

    const wo: WorkloadOptions = {
      cluster, keys, targets: () => cluster.running(), now,
      timeoutMs: o.requestTimeoutMs ?? 10_000, thinkMs: o.thinkMs ?? 10, histories, findings,
    };
    let clientsRunning = true;
    const running = () => clientsRunning;
    const kinds = clientKinds(clientCount);
    const clients = kinds.map((kind, i) => {
      const fn = kind === "kv" ? kvClient : kind === "txn" ? txnClient : lockClient;
      return fn(wo, i, clientRngs[i]!, running);
    });
    const faultsUntil = now() + o.seconds * 1000;
    const nemesisDone = nemesis.run(faultsUntil);
    await new Promise((r) => setTimeout(r, Math.max(0, faultsUntil - now())));
    nemesis.stop();
    await nemesisDone;
    await nemesis.healAll();
    note(`${stamp()} faults over, everything healed; clients go on for 5 s`);
    await new Promise((r) => setTimeout(r, 5_000));
    clientsRunning = false;
    await Promise.all(clients);
    note(`${stamp()} clients stopped: ${histories.kv.length} kv, ${histories.txn.length} txn, ${histories.lock.length} lock ops recorded`);
    await nemesis.healAll();
    const finalLeader = await cluster.waitForLeader({ timeoutMs: 60_000 });
    note(`${stamp()} leader ${finalLeader.name}; final reads`);
    finalKv = await finalReads(wo, 1000, { deadlineMs: now() + 60_000 });
    diverged = await replicaDivergence(wo, { timeoutMs: 20_000 });
    note(`${stamp()} replicas: ${diverged.length === 0 ? "all equal the leader's view" : diverged.join("; ")}`);
    nemesis.checkCrashes();
  } catch (err) {
    failure = err instanceof Error ? err.stack ?? err.message : String(err);
    note(`${stamp()} run failed: ${failure}`);
  }

  const anomalies: Anomaly[] = [];
  const lines: string[] = [];
  let inconclusive: string[] = [];
  if (failure === undefined) {
    log(`${stamp()} checking histories`);
    const report = checkHistories(histories, { keys, finalKv, timeoutMs: o.checkTimeoutMs ?? 120_000 });
    anomalies.push(...report.anomalies);
    lines.push(...report.lines);
    inconclusive = report.inconclusive;
  } else {
    anomalies.push({ kind: "run-failed", explanation: failure });
  }
  for (const d of findings.direct) anomalies.push({ kind: "client-saw", explanation: d });
  for (const d of diverged) anomalies.push({ kind: "replica-diverged", explanation: d });
  if (failure === undefined) lines.push(diverged.length === 0 ? "replicas: every server's ?stale view equals the leader's" : `replicas: ${diverged.length} DIVERGED`);
  // A server that exits (or halts) with no fault that allows it, or cannot start on its data dir, fails the run.
  for (const c of nemesis.crashes) anomalies.push({ kind: "server-failed", explanation: c });
  if (findings.direct.length > 0) lines.push(`clients: ${findings.direct.length} direct anomalies, e.g. ${findings.direct[0]}`);
  const errs = [...findings.errors].sort((a, b) => b[1] - a[1]);
  lines.push(`requests: kv ${findings.sent.kv}, txn ${findings.sent.txn}, lock ${findings.sent.lock}; errors: ${errs.length === 0 ? "none" : errs.slice(0, 6).map(([k, n]) => `${n}× ${k}`).join("; ")}`);
  lines.push(`nemesis: ${nemesis.events.length} events; crashes: ${nemesis.crashes.length === 0 ? "none" : nemesis.crashes.length}; ` +
    `Raft halted on a full disk with the process up (restarted): ${nemesis.halts.length}`);

  const keep = o.keep === true || anomalies.length > 0;
  await cluster.stop({ keepData: keep });
  const result: RunResult = { seed: o.seed, servers: o.servers, anomalies, crashes: nemesis.crashes, inconclusive, lines, replay: replayCommand(o) };
  if (keep) {
    keepDir(cluster.root);
    result.dir = cluster.root;
    mkdirSync(join(cluster.root, "logs"), { recursive: true });
    for (const s of cluster.servers) writeFileSync(join(cluster.root, "logs", `${s.name}.log`), cluster.output(s));
    writeFileSync(join(cluster.root, "timeline.txt"), timeline.join("\n") + "\n");
    writeFileSync(join(cluster.root, "history.json"), historyJson({
      note: "return: null means Infinity (outcome unknown); recheck with node --import tsx scripts/robustness/recheck.ts <this file>",
      seed: o.seed, servers: o.servers, seconds: o.seconds, faults: o.faults, keys, finalKv, events: nemesis.events, histories,
    }));
    writeFileSync(join(cluster.root, "report.txt"), [
      `seed ${o.seed}, ${o.servers} servers; replay: ${result.replay}`,
      ...lines,
      ...(nemesis.crashes.length > 0 ? ["", "Crashes:", ...nemesis.crashes] : []),
      ...anomalies.flatMap((a, i) => ["", `=== anomaly ${i + 1}: ${a.kind} ===`, a.explanation]),
      "",
    ].join("\n"));
  }
  return result;
}
