// Re-run the checks on a kept history: node --import tsx scripts/robustness/recheck.ts <dir>/history.json
// (for a checker change, or to look at one anomaly again without a cluster).
import { readFileSync } from "node:fs";
import { checkHistories } from "./checks.ts";
import type { Histories, Keys } from "./workloads.ts";

const file = process.argv[2];
if (!file) {
  console.error("usage: node --import tsx scripts/robustness/recheck.ts <history.json>");
  process.exit(1);
}
// JSON has no Infinity: an outcome-unknown return was written as null.
const doc = JSON.parse(readFileSync(file, "utf8"), (k, v: unknown) => (k === "return" && v === null ? Infinity : v)) as {
  seed: number;
  keys: Keys;
  finalKv: Record<string, string | null>;
  histories: Histories;
};
const report = checkHistories(doc.histories, { keys: doc.keys, finalKv: new Map(Object.entries(doc.finalKv)), timeoutMs: 600_000 });
console.log(`seed ${doc.seed}`);
for (const line of report.lines) console.log(`  ${line}`);
for (const a of report.anomalies) console.log(`\n=== ${a.kind} ===\n${a.explanation}`);
process.exit(report.anomalies.length > 0 ? 1 : 0);
