// The terraform driver: any `terraform` or `tofu` found at driver.terraform
// .path (a file, or a directory holding one) or on PATH; it never downloads.
// One generated working directory per task (<working_dir>/<task>/), one
// workspace per task, `init` → `workspace select/new` → `validate` →
// `apply`; `plan -detailed-exitcode` for inspect; `destroy` on request.
// State goes to cairn's KV through Terraform's own consul backend unless
// the config names another backend.
import { spawn } from "node:child_process";
import { accessSync, chmodSync, constants, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { delimiter, isAbsolute, join, relative, resolve } from "node:path";
import type { SyncConfig } from "./config.ts";
import { redact, tail } from "./driver.ts";
import type { DriverResult, DriverRun, SyncDriver } from "./driver.ts";
import { defaultBackend, generateRootModule } from "./tfgen.ts";

/** Versions this driver is tested against; others work with a warning. */
const testedTerraformRange = { min: [0, 13, 0], maxExclusive: [1, 10, 0] } as const;

function isExecutable(p: string): boolean {
  try {
    if (!statSync(p).isFile()) return false;
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The terraform (or tofu) binary to use, or an error message. */
export function findTerraform(path: string, envPath: string | undefined): string | { error: string } {
  const names = ["terraform", "tofu"];
  if (path !== "") {
    if (isExecutable(path)) return resolve(path);
    for (const n of names) if (isExecutable(join(path, n))) return resolve(join(path, n));
    return { error: `driver.terraform.path "${path}" is neither an executable nor a directory holding terraform or tofu; cairn never downloads Terraform` };
  }
  for (const n of names) {
    for (const dir of (envPath ?? "").split(delimiter)) if (dir && isExecutable(join(dir, n))) return join(dir, n);
  }
  return { error: "No terraform or tofu on PATH: install one, or set driver \"terraform\" { path = \"…\" }; cairn never downloads Terraform" };
}

function cmpVersion(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
  return 0;
}

interface Exec {
  code: number;
  out: string;
}

export class TerraformDriver implements SyncDriver {
  readonly kind = "terraform";
  readonly warnings: string[] = [];
  readonly bin: string;
  version = "";
  readonly #cfg: SyncConfig;
  readonly #baseDir: string;
  readonly #secrets: readonly string[];
  readonly #env: Record<string, string>;

  constructor(cfg: SyncConfig, options: { baseDir: string; secrets: readonly string[]; env: Record<string, string | undefined> }) {
    const bin = findTerraform(cfg.driver.terraform.path, options.env.PATH);
    if (typeof bin !== "string") throw new Error(bin.error);
    this.bin = bin;
    this.#cfg = cfg;
    this.#baseDir = options.baseDir;
    this.#secrets = options.secrets;
    this.#env = {};
    for (const [k, v] of Object.entries(options.env)) if (v !== undefined) this.#env[k] = v;
    this.#env.TF_IN_AUTOMATION = "1";
    this.#env.TF_INPUT = "0";
    if (cfg.consul.token) this.#env.CONSUL_HTTP_TOKEN = cfg.consul.token;
    if (cfg.driver.terraform.log) this.#env.TF_LOG = this.#env.TF_LOG || "DEBUG";
  }

  /** Read the version (`version -json`) and warn outside the tested range. */
  async init(): Promise<void> {
    const r = await this.#run(this.#baseDir, ["version", "-json"], new AbortController().signal);
    let v = "";
    try {
      v = String((JSON.parse(r.out) as { terraform_version?: unknown }).terraform_version ?? "");
    } catch {
      v = /v?(\d+\.\d+\.\d+)/.exec(r.out)?.[1] ?? "";
    }
    if (r.code !== 0 || v === "") throw new Error(`"${this.bin} version -json" failed (exit ${r.code}): ${tail(r.out, 500)}`);
    this.version = v;
    const parts = v.split(/[.-]/).slice(0, 3).map(Number);
    if (cmpVersion(parts, testedTerraformRange.min) < 0 || cmpVersion(parts, testedTerraformRange.maxExclusive) >= 0) {
      this.warnings.push(`${this.bin} is version ${v}, outside the tested range 0.13.0 to 1.9.x: it may work, but it is untested`);
    }
  }

  workDir(task: string): string {
    const wd = isAbsolute(this.#cfg.workingDir) ? this.#cfg.workingDir : resolve(this.#baseDir, this.#cfg.workingDir);
    return join(wd, task);
  }

  #variables(run: DriverRun): Record<string, unknown> {
    const out: Record<string, unknown> = { ...run.task.variables };
    for (const f of run.task.variableFiles) {
      const path = isAbsolute(f) ? f : resolve(this.#baseDir, f);
      const text = readFileSync(path, "utf8");
      // tfvars are HCL 2 attribute files; their JSON twin and plain `k = "v"` lines read here.
      const parsed = text.trimStart().startsWith("{") ? (JSON.parse(text) as Record<string, unknown>) : parseSimpleTfvars(text, path);
      Object.assign(out, parsed);
    }
    return out;
  }

  #generate(run: DriverRun): string {
    const dir = this.workDir(run.task.name);
    mkdirSync(dir, { recursive: true, mode: 0o750 });
    // A local module path is the config's; Terraform reads it from the working directory.
    let module = run.task.module;
    if (/^\.\.?\//.test(module)) {
      const rel = relative(dir, resolve(this.#baseDir, module));
      module = rel.startsWith(".") ? rel : `./${rel}`;
    }
    const files = generateRootModule(this.#cfg, { ...run.task, module }, run.inputs, { backend: defaultBackend(this.#cfg), variables: this.#variables(run) });
    for (const f of files) {
      const p = join(dir, f.name);
      writeFileSync(p, f.text, { mode: f.secret ? 0o600 : 0o644 });
      if (f.secret) chmodSync(p, 0o600); // an older file keeps its mode otherwise
    }
    return dir;
  }

  async #prepare(run: DriverRun, signal: AbortSignal, log: string[]): Promise<{ dir: string } | DriverResult> {
    let dir: string;
    try {
      dir = this.#generate(run);
    } catch (err) {
      const msg = `Cannot write the working directory of task "${run.task.name}": ${(err as Error).message}`;
      return { ok: false, exitCode: -1, outputTail: msg, error: msg };
    }
    const init = await this.#step(dir, ["init", "-input=false", "-no-color"], signal, log);
    if (init) return init;
    // One workspace per task: select it, or create it the first time.
    const sel = await this.#run(dir, ["workspace", "select", "-no-color", run.task.name], signal);
    log.push(sel.out);
    if (sel.code !== 0) {
      const r = await this.#step(dir, ["workspace", "new", "-no-color", run.task.name], signal, log);
      if (r) return r;
    }
    return { dir };
  }

  async #step(dir: string, args: string[], signal: AbortSignal, log: string[]): Promise<DriverResult | undefined> {
    const r = await this.#run(dir, args, signal);
    log.push(`$ terraform ${args.join(" ")}\n${r.out}`);
    if (r.code === 0) return undefined;
    return this.#result(false, r.code, log, `terraform ${args[0]} failed with exit code ${r.code}`);
  }

  #result(ok: boolean, code: number, log: string[], error?: string, extra: Partial<DriverResult> = {}): DriverResult {
    return { ok, exitCode: code, outputTail: redact(tail(log.join("\n")), this.#secrets), ...(error !== undefined ? { error } : {}), ...extra };
  }

  apply(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    return this.#steps(run, signal, [["validate", "-no-color"], ["apply", "-auto-approve", "-input=false", "-no-color", "-lock-timeout=30s"]]);
  }

  async inspect(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    const log: string[] = [];
    const prep = await this.#prepare(run, signal, log);
    if (!("dir" in prep)) return prep;
    const r = await this.#run(prep.dir, ["plan", "-detailed-exitcode", "-input=false", "-no-color", "-lock-timeout=30s"], signal);
    log.push(`$ terraform plan\n${r.out}`);
    // -detailed-exitcode: 0 no changes, 2 changes, 1 error.
    if (r.code === 1 || (r.code !== 0 && r.code !== 2)) return this.#result(false, r.code, log, `terraform plan failed with exit code ${r.code}`);
    return this.#result(true, r.code, log, undefined, { plan: redact(r.out, this.#secrets), changesPresent: r.code === 2 });
  }

  destroy(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    return this.#steps(run, signal, [["destroy", "-auto-approve", "-input=false", "-no-color", "-lock-timeout=30s"]]);
  }

  /** Prepare the working directory, then each command in turn; the first failure is the result. */
  async #steps(run: DriverRun, signal: AbortSignal, steps: readonly string[][]): Promise<DriverResult> {
    const log: string[] = [];
    const prep = await this.#prepare(run, signal, log);
    if (!("dir" in prep)) return prep;
    for (const args of steps) {
      const r = await this.#step(prep.dir, args, signal, log);
      if (r) return r;
    }
    return this.#result(true, 0, log);
  }

  #run(cwd: string, args: string[], signal: AbortSignal): Promise<Exec> {
    return new Promise((done) => {
      let out = "";
      const child = spawn(this.bin, args, { cwd, env: this.#env, stdio: ["ignore", "pipe", "pipe"] });
      const onAbort = () => child.kill("SIGINT"); // terraform stops gracefully on SIGINT and releases its lock
      signal.addEventListener("abort", onAbort, { once: true });
      const keep = (b: Buffer) => {
        out = tail(out + b.toString("utf8"), 65_536);
      };
      child.stdout.on("data", keep);
      child.stderr.on("data", keep);
      child.on("error", (err) => {
        signal.removeEventListener("abort", onAbort);
        done({ code: -1, out: `${out}Cannot run "${this.bin}": ${err.message}` });
      });
      child.on("close", (code, sig) => {
        signal.removeEventListener("abort", onAbort);
        done({ code: code ?? (sig ? 128 : -1), out });
      });
    });
  }
}

/** `name = "value"`, numbers and booleans, one per line: the common tfvars; anything else is an error naming the line. */
export function parseSimpleTfvars(text: string, file: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  text.split("\n").forEach((raw, i) => {
    const line = raw.replace(/(^|\s)(#|\/\/).*$/, "").trim();
    if (line === "") return;
    const m = /^([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(.+)$/.exec(line);
    if (!m) throw new Error(`${file}:${i + 1}: only name = value lines are read from variable files (or use JSON)`);
    const v = m[2]!.trim();
    try {
      out[m[1]!] = JSON.parse(v);
    } catch {
      throw new Error(`${file}:${i + 1}: cannot read the value of "${m[1]}" (strings in double quotes, numbers, true/false, or JSON lists/objects)`);
    }
  });
  return out;
}
