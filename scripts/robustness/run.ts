// npm run robustness [-- flags]: Jepsen-style runs of real dist/cairn servers
// under a seeded nemesis, with every history checked.
//   --runs N        runs (default 1)
//   --seconds S     fault period of each run (default 30)
//   --servers 3|5   cluster size (default: 3 and 5 alternately)
//   --seed N        seed of the first run (others +1); replays that run's
//                   nemesis schedule and workload choices
//   --faults LIST   kill,pause,partition,disk (default all)
//   --clients N     concurrent clients (default 10)
//   --keep          keep every run's directory, not only failing ones
//   --snapshot-every N  servers snapshot every N Raft entries (default: their
//                   own setting), so restarts and catch-up go through snapshots
// Each run prints its seed first; a run with an anomaly prints the directory
// holding its history, the checker's explanation and every server's log.
// Exit status 1 when any run found an anomaly.
import { randomInt } from "node:crypto";
import { existsSync } from "node:fs";
import { cairnBin } from "../e2e/harness.ts";
import { closeIdleSockets } from "./http.ts";
import { allFaults, type FaultKind } from "./nemesis.ts";
import { releaseAllSync } from "./resources.ts";
import { runOnce, usableFaults, type RunResult } from "./runner.ts";

interface Flags {
  runs: number;
  seconds: number;
  servers?: number;
  seed?: number;
  faults: FaultKind[];
  clients: number;
  keep: boolean;
  snapshotEvery?: number;
}

function usage(msg: string): never {
  console.error(`${msg}\nusage: npm run robustness -- [--runs N] [--seconds S] [--servers 3|5] [--seed N] [--faults kill,pause,partition,disk] [--clients N] [--keep] [--snapshot-every N]`);
  process.exit(1);
}

function parseFlags(argv: string[]): Flags {
  const f: Flags = { runs: 1, seconds: 30, faults: [...allFaults], clients: 10, keep: false };
  const num = (name: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isSafeInteger(n) || n < 0) usage(`Flag --${name} needs a whole number, got ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [name, inline] = a.startsWith("--") && a.includes("=") ? [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)] : [a, undefined];
    const value = () => inline ?? argv[++i];
    switch (name) {
      case "--runs": f.runs = Math.max(1, num("runs", value())); break;
      case "--seconds": f.seconds = num("seconds", value()); break;
      case "--servers": {
        const n = num("servers", value());
        if (n !== 3 && n !== 5) usage(`Flag --servers takes 3 or 5, got ${n}`);
        f.servers = n;
        break;
      }
      case "--seed": f.seed = num("seed", value()) >>> 0; break;
      case "--clients": f.clients = Math.max(1, num("clients", value())); break;
      case "--keep": f.keep = true; break;
      case "--snapshot-every": f.snapshotEvery = Math.max(1, num("snapshot-every", value())); break;
      case "--faults": {
        const v = value() ?? "";
        const list = v === "" || v === "none" ? [] : v.split(",").map((x) => x.trim());
        for (const x of list) if (!allFaults.includes(x as FaultKind)) usage(`Unknown fault "${x}": use ${allFaults.join(",")} or none`);
        f.faults = list as FaultKind[];
        break;
      }
      default: usage(`Unknown flag "${a}"`);
    }
  }
  return f;
}

function printResult(r: RunResult): void {
  for (const line of r.lines) console.log(`  ${line}`);
  for (const c of r.crashes) console.log(`  crash: ${c}`);
  if (r.anomalies.length > 0) {
    const kinds = new Map<string, number>();
    for (const a of r.anomalies) kinds.set(a.kind, (kinds.get(a.kind) ?? 0) + 1);
    console.log(`  ANOMALIES: ${[...kinds].map(([k, n]) => `${n}× ${k}`).join(", ")}`);
    console.log(`  first: ${r.anomalies[0]!.explanation.split("\n").slice(0, 6).join("\n         ")}`);
  }
  if (r.dir) console.log(`  kept ${r.dir} (report.txt, history.json, timeline.txt, logs/)`);
  console.log(`  replay: ${r.replay}`);
}

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  if (!existsSync(cairnBin) && !process.env.CAIRN_E2E_BIN) usage(`${cairnBin} is missing: run npm run build`);
  const faults = usableFaults(flags.faults);
  const results: RunResult[] = [];
  for (let i = 0; i < flags.runs; i++) {
    const seed = flags.seed !== undefined ? (flags.seed + i) >>> 0 : randomInt(1, 2 ** 31);
    const servers = flags.servers ?? (i % 2 === 0 ? 3 : 5);
    console.log(`\n=== run ${i + 1}/${flags.runs}: seed ${seed}, ${servers} servers, ${flags.seconds} s, faults ${faults.join(",") || "none"} ===`);
    const r = await runOnce({ seed, servers, seconds: flags.seconds, faults, clients: flags.clients, keep: flags.keep, runNumber: i + 1, ...(flags.snapshotEvery ? { snapshotEvery: flags.snapshotEvery } : {}) });
    printResult(r);
    results.push(r);
  }
  closeIdleSockets();
  const bad = results.filter((r) => r.anomalies.length > 0);
  console.log(`\n${results.length - bad.length} passed, ${bad.length} failed`);
  for (const r of bad) console.log(`  seed ${r.seed} (${r.servers} servers): ${r.anomalies.length} anomalies, kept ${r.dir}`);
  releaseAllSync();
  process.exit(bad.length > 0 ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error(err);
  releaseAllSync();
  process.exit(2);
});
