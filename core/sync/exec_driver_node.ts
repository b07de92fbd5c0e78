// The exec driver: a task's `module` is a command (an executable path,
// run without a shell); each run gets the rendered inputs as JSON on stdin
// ({ task, run_id, trigger, action, services, consul_kv, catalog_services })
// and CTS_TASK_NAME / CTS_RUN_ID / CTS_TRIGGER / CTS_ACTION in its
// environment. Exit 0 is success. Inspect and destroy run the same command
// with CTS_ACTION=inspect|destroy.
import { spawn } from "node:child_process";
import { isAbsolute, resolve } from "node:path";
import type { ExecDriverConfig } from "./config.ts";
import { redact, tail } from "./driver.ts";
import type { DriverResult, DriverRun, SyncDriver } from "./driver.ts";

export class ExecDriver implements SyncDriver {
  readonly kind = "exec";
  readonly warnings: readonly string[] = [];
  readonly #config: ExecDriverConfig;
  readonly #baseDir: string;
  readonly #secrets: readonly string[];

  constructor(config: ExecDriverConfig, options: { baseDir: string; secrets?: readonly string[] }) {
    this.#config = config;
    this.#baseDir = options.baseDir;
    this.#secrets = options.secrets ?? [];
  }

  apply(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    return this.#exec(run, "apply", signal);
  }

  inspect(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    return this.#exec(run, "inspect", signal);
  }

  destroy(run: DriverRun, signal: AbortSignal): Promise<DriverResult> {
    return this.#exec(run, "destroy", signal);
  }

  #exec(run: DriverRun, action: string, signal: AbortSignal): Promise<DriverResult> {
    const cmd = isAbsolute(run.task.module) || !run.task.module.includes("/") ? run.task.module : resolve(this.#baseDir, run.task.module);
    const input = JSON.stringify({
      task: run.task.name,
      run_id: run.runId,
      trigger: run.trigger,
      action,
      ...run.inputs,
    });
    return new Promise<DriverResult>((done) => {
      let out = "";
      let settled = false;
      const finish = (r: DriverResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        done({ ...r, outputTail: redact(tail(r.outputTail), this.#secrets) });
      };
      let child: ReturnType<typeof spawn>;
      try {
        child = spawn(cmd, [], {
          cwd: this.#baseDir,
          env: { ...process.env, ...this.#config.env, CTS_TASK_NAME: run.task.name, CTS_RUN_ID: run.runId, CTS_TRIGGER: run.trigger, CTS_ACTION: action },
          stdio: ["pipe", "pipe", "pipe"],
        });
      } catch (err) {
        const msg = `Cannot run "${cmd}": ${(err as Error).message}`;
        done({ ok: false, exitCode: -1, outputTail: msg, error: msg });
        return;
      }
      const onAbort = () => child.kill("SIGTERM");
      signal.addEventListener("abort", onAbort);
      const timer = this.#config.timeoutMs > 0 ? setTimeout(() => {
        out += `\n[cairn sync: run timed out after ${this.#config.timeoutMs} ms, killed]`;
        child.kill("SIGKILL");
      }, this.#config.timeoutMs) : undefined;
      const keep = (b: Buffer) => {
        out = tail(out + b.toString("utf8"), 16_384);
      };
      child.stdout!.on("data", keep);
      child.stderr!.on("data", keep);
      child.on("error", (err) => {
        const msg = `Cannot run "${cmd}": ${err.message}`;
        finish({ ok: false, exitCode: -1, outputTail: out + msg, error: msg });
      });
      child.on("close", (code, sig) => {
        const exitCode = code ?? (sig ? 128 : -1);
        finish({ ok: exitCode === 0, exitCode, outputTail: out, ...(exitCode === 0 ? {} : { error: `"${run.task.module}" exited with ${sig ? `signal ${sig}` : `code ${exitCode}`}` }) });
      });
      child.stdin!.on("error", () => {}); // a command that ignores stdin closes it early: not an error
      child.stdin!.end(input);
    });
  }
}
