// Script checks (consul agent/checks CheckMonitor): run `args`; exit 0 is
// passing, 1 warning, anything else critical. Output is stdout and stderr
// together, the last OutputMaxSize bytes kept. On timeout the process is
// killed. Whether a script check may be registered at all is decided by the
// agent (-enable-script-checks / -enable-local-script-checks).
import { spawn } from "../lazy_builtins_node.ts";
import { formatDuration } from "../config/duration.ts";
import { defaultOutputMaxSize, type ProbeResult } from "./runner.ts";

/** Consul's CheckMonitor default timeout. */
export const defaultScriptTimeoutMs = 30_000;

export function scriptTimeoutOutput(timeoutMs: number): string {
  return `Timed out (${formatDuration(timeoutMs)}) running check`;
}

/** Run once; never throws. The caller's signal kills the process. */
export function scriptProbe(args: readonly string[], options: { signal: AbortSignal; outputMaxSize?: number; timeoutMs?: number }): Promise<ProbeResult> {
  const max = options.outputMaxSize || defaultOutputMaxSize;
  return new Promise((resolve) => {
    let kept = new Uint8Array(0);
    let total = 0;
    const append = (c: Uint8Array) => {
      total += c.length;
      const joined = new Uint8Array(kept.length + c.length);
      joined.set(kept);
      joined.set(c, kept.length);
      kept = joined.length > max ? joined.slice(joined.length - max) : joined;
    };
    const text = () => {
      const s = new TextDecoder().decode(kept);
      return total > max ? `Captured ${max} of ${total} bytes\n...\n${s}` : s;
    };
    let settled = false;
    const finish = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(args[0]!, args.slice(1), { stdio: ["ignore", "pipe", "pipe"], signal: options.signal, killSignal: "SIGKILL" });
    } catch (err) {
      finish({ status: "critical", output: `Failed to start check: ${(err as Error).message}` });
      return;
    }
    child.stdout?.on("data", append);
    child.stderr?.on("data", append);
    child.once("error", (err: Error & { code?: string }) => {
      if (options.signal.aborted) {
        finish({ status: "critical", output: scriptTimeoutOutput(options.timeoutMs ?? defaultScriptTimeoutMs) });
        return;
      }
      finish({ status: "critical", output: `Failed to invoke: ${err.code === "ENOENT" ? `exec: "${args[0]}": executable file not found in $PATH` : err.message}` });
    });
    child.once("close", (code: number | null) => {
      if (options.signal.aborted) {
        finish({ status: "critical", output: scriptTimeoutOutput(options.timeoutMs ?? defaultScriptTimeoutMs) });
        return;
      }
      const status = code === 0 ? "passing" : code === 1 ? "warning" : "critical";
      finish({ status, output: text() });
    });
  });
}
