// Helpers for end-to-end tests: run dist/cairn (or Deno on the sources) as
// real child processes on 127.0.0.1, on free ports, and clean up by PID.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { createSocket } from "node:dgram";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
export const cairnBin = join(root, "dist/cairn");

const started = new Set<ChildProcess>();

function killAll(): void {
  for (const p of started) {
    if (p.pid !== undefined && p.exitCode === null) {
      try { process.kill(p.pid, "SIGKILL"); } catch { /* already gone */ }
    }
  }
}
process.on("exit", killAll);

/** Every port freePort() handed out in this process. */
const handedOut = new Set<number>();

/**
 * A TCP port that is free on 127.0.0.1 right now, and free for UDP too, and
 * never one this process was given before: nothing holds a port between this
 * call and the child binding it, so the OS can offer the same one again (two
 * agents of one test would then fight over it).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await new Promise<number>((ok, fail) => {
      const srv = createServer();
      srv.once("error", fail);
      srv.listen(0, "127.0.0.1", () => {
        const addr = srv.address();
        srv.close(() => ok(typeof addr === "object" && addr ? addr.port : 0));
      });
    });
    if (handedOut.has(port)) continue;
    const udpFree = await new Promise<boolean>((ok) => {
      const s = createSocket("udp4");
      s.once("error", () => { s.close(); ok(false); });
      s.bind(port, "127.0.0.1", () => s.close(() => ok(true)));
    });
    if (udpFree) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error("Cannot find a free port on 127.0.0.1");
}

export function tempDir(prefix = "cairn-e2e-"): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  output(): string;
  /** Resolves with the exit code (or signal name) once the process ends. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Start a command; its stdout+stderr are collected. Killed at exit if still running. */
export function startProcess(cmd: string, args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): Proc {
  const child = spawn(cmd, args, {
    cwd: options.cwd ?? root,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  let out = "";
  child.stdout?.on("data", (d: Buffer) => { out += d.toString(); });
  child.stderr?.on("data", (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | string>((ok) => {
    child.once("exit", (code, signal) => {
      started.delete(child);
      ok(code ?? signal ?? "unknown");
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    output: () => out,
    exited,
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        try { process.kill(child.pid, signal); } catch { /* gone */ }
      }
      return exited;
    },
  };
}

/** Run a command to completion. */
export async function run(cmd: string, args: string[], options: { env?: Record<string, string>; input?: string | Uint8Array; timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(cmd, args, { cwd: root, env: { ...process.env, ...options.env }, stdio: ["pipe", "pipe", "pipe"] });
  started.add(child);
  let stdout = "", stderr = "";
  child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
  child.stdin.end(options.input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  const code = await new Promise<number>((ok) => child.once("exit", (c, s) => ok(c ?? (s ? 128 : 1))));
  clearTimeout(timer);
  started.delete(child);
  return { code, stdout, stderr };
}

/** Poll until fn returns a truthy value (real time; e2e only). */
export async function waitFor<T>(fn: () => Promise<T | undefined | false> | T | undefined | false, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
  throw new Error(`Timed out waiting for ${options.what ?? "condition"}${lastErr ? `: ${String(lastErr)}` : ""}`);
}

export interface DevAgent {
  proc: Proc;
  httpPort: number;
  dnsPort: number;
  http: string;
  stop(): Promise<void>;
}

/** Start `cairn agent -dev` on free ports and wait until its HTTP API answers. */
export async function startDevAgent(extraArgs: string[] = [], options: { runtime?: "binary" | "deno" } = {}): Promise<DevAgent> {
  if (options.runtime !== "deno" && !existsSync(cairnBin)) throw new Error(`${cairnBin} is missing: run npm run build`);
  const httpPort = await freePort();
  const dnsPort = await freePort();
  // Every port on a free one, so agents of concurrent tests never collide.
  const ports = [`-http-port=${httpPort}`, `-dns-port=${dnsPort}`, `-serf-lan-port=${await freePort()}`,
    `-serf-wan-port=${await freePort()}`, `-server-port=${await freePort()}`];
  const args = ["agent", "-dev", ...ports, ...extraArgs];
  const proc = options.runtime === "deno"
    ? startProcess(join(root, "node_modules/.bin/deno"), ["run", "--allow-all", "cli/main.ts", ...args])
    : startProcess(cairnBin, args);
  const http = `http://127.0.0.1:${httpPort}`;
  await waitFor(async () => {
    if (proc.child.exitCode !== null) throw new Error(`agent exited early:\n${proc.output()}`);
    const r = await fetch(`${http}/v1/status/leader`);
    return r.ok && (await r.text()) !== '""';
  }, { timeoutMs: 30_000, what: `dev agent on ${http}` }).catch((err) => {
    void proc.kill();
    throw new Error(`${String(err)}\n--- agent output ---\n${proc.output()}`);
  });
  return { proc, httpPort, dnsPort, http, stop: async () => { await proc.kill("SIGKILL"); } };
}
