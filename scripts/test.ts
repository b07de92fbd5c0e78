// npm test: type-check, then every *_test.ts under core/, cli/ and scripts/
// with Node's test runner. `--unit` skips the end-to-end tests (which need
// dist/cairn); `--e2e` runs only them. Extra arguments are file filters.
import { spawnSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "..");
const args = process.argv.slice(2);
const only = args.includes("--unit") ? "unit" : args.includes("--e2e") ? "e2e" : "all";
const filters = args.filter((a) => !a.startsWith("--"));
const skipTypecheck = args.includes("--no-typecheck");

function findTests(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    if (name === "node_modules" || name.startsWith(".")) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (name.endsWith("_test.ts")) out.push(p);
  }
  return out;
}

const all = ["core", "cli", "scripts"].flatMap((d) => findTests(join(root, d), [])).sort();
const isE2e = (f: string) => relative(root, f).startsWith("scripts/e2e/");
const chosen = all
  .filter((f) => only === "all" || (only === "e2e") === isE2e(f))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)));

function run(cmd: string, cmdArgs: string[]): number {
  const r = spawnSync(cmd, cmdArgs, { cwd: root, stdio: "inherit" });
  return r.status ?? 1;
}

if (!skipTypecheck && filters.length === 0) {
  console.log("# type-check (tsc, strict)");
  const rc = run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", "tsconfig.json"]);
  if (rc !== 0) {
    console.error("type-check failed");
    process.exit(rc);
  }
}

const unit = chosen.filter((f) => !isE2e(f));
const e2e = chosen.filter(isE2e);
let status = 0;
const common = ["--import", "tsx", "--test", "--test-reporter=spec"];
if (unit.length > 0) {
  console.log(`# unit and simulation tests: ${unit.length} files`);
  status ||= run(process.execPath, [...common, "--test-concurrency=2", ...unit.map((f) => relative(root, f))]);
}
if (e2e.length > 0) {
  console.log(`# end-to-end tests of dist/cairn: ${e2e.length} files`);
  status ||= run(process.execPath, [...common, "--test-concurrency=1", ...e2e.map((f) => relative(root, f))]);
}
process.exit(status);
