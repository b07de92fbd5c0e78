// Running a child command for `lock` and `watch`, as Consul does: through
// `sh -c` when -shell (the default), else argv directly; output forwarded to
// the command's io; stopped with SIGTERM, then SIGKILL after a grace period.
import type { ChildProcess } from "node:child_process";
import { spawn } from "../core/lazy_builtins_node.ts";
import type { CliIo } from "./_io.ts";

export const killGraceMs = 5_000;

export interface Child {
  readonly process: ChildProcess;
  /** Exit code (128 + signal number style code 1 when killed by a signal). */
  readonly exited: Promise<number>;
  /** SIGTERM, then SIGKILL after `graceMs` if it has not exited. */
  terminate(graceMs?: number): Promise<number>;
}

export function startChild(
  args: readonly string[],
  io: CliIo,
  options: { shell: boolean; env?: Record<string, string>; stdin?: "inherit" | "ignore" | Uint8Array },
): Child {
  const [cmd, argv] = options.shell ? ["/bin/sh", ["-c", args.join(" ")]] : [args[0]!, args.slice(1)];
  const stdinMode = options.stdin instanceof Uint8Array ? "pipe" : options.stdin ?? "ignore";
  const child = spawn(cmd, argv, {
    env: { ...process.env, ...(options.env ?? {}) },
    stdio: [stdinMode, "pipe", "pipe"],
    // Its own process group, so stopping it also stops what a shell started.
    detached: true,
  });
  child.stdout?.on("data", (d: Buffer) => io.stdout(d.toString()));
  child.stderr?.on("data", (d: Buffer) => io.stderr(d.toString()));
  if (options.stdin instanceof Uint8Array) {
    child.stdin?.on("error", () => {});
    child.stdin?.end(options.stdin);
  }
  const exited = new Promise<number>((resolve) => {
    child.once("error", (err) => {
      io.stderr(`Error starting handler: ${err.message}\n`);
      resolve(127);
    });
    // Output is flushed on "close", but a grandchild may hold the pipes open: give it a moment after "exit".
    let closed = false;
    child.once("close", (code, signal) => {
      closed = true;
      resolve(code ?? (signal ? 1 : 0));
    });
    child.once("exit", (code, signal) => {
      setTimeout(() => {
        if (!closed) resolve(code ?? (signal ? 1 : 0));
      }, 200);
    });
  });
  const signalGroup = (sig: NodeJS.Signals): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      try { child.kill(sig); } catch { /* gone */ }
    }
  };
  return {
    process: child,
    exited,
    async terminate(graceMs = killGraceMs) {
      if (child.exitCode === null && child.signalCode === null) {
        signalGroup("SIGTERM");
        const timer = setTimeout(() => signalGroup("SIGKILL"), graceMs);
        const code = await exited;
        clearTimeout(timer);
        return code;
      }
      return exited;
    },
  };
}

/** Resolves on SIGINT/SIGTERM to this process (and removes its handlers via the returned cancel). */
export function onShutdownSignal(): { signal: AbortSignal; cancel(): void } {
  const ctl = new AbortController();
  const handler = () => ctl.abort(new Error("interrupted"));
  process.once("SIGINT", handler);
  process.once("SIGTERM", handler);
  return {
    signal: ctl.signal,
    cancel() {
      process.off("SIGINT", handler);
      process.off("SIGTERM", handler);
    },
  };
}
