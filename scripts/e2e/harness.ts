// The one launcher for end-to-end tests and benchmarks: real child processes
// on loopback, on free ports, killed by PID when this process exits (also on
// SIGINT/SIGTERM). What it starts:
//   startProcess / run        any command (output collected, or to a file)
//   startCairn / cairn        the build under test: CAIRN_E2E_BIN (a `.cjs`
//                             bundle or `.ts` entry runs under node) or dist/cairn
//   startDevAgent             `cairn agent -dev` (or on Deno), every listener free
//   startAgentProcess         `cairn agent <args>` with every listener free
//   startAgent                a named client (or single server) agent with its own data dir
//   makeCluster               N servers (-bootstrap-expect=N, -retry-join), per-server
//                             loopback addresses, config JSON, env; clients joined to them
//   startSerf / serf          the stock Debian `serf` agent and its CLI
// Waits go through core/testing/until.ts (waitFor is until with e2e defaults).
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../../core/testing/free_port_node.ts";
import { until } from "../../core/testing/until.ts";

export const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
/** The build under test: CAIRN_E2E_BIN or dist/cairn. */
export const cairnBin = process.env.CAIRN_E2E_BIN || join(root, "dist/cairn");
export const bin = cairnBin;
export const serfBin = "/usr/bin/serf";

// -----------------------------------------------------------------------------
// Cleanup by PID at exit

const started = new Set<ChildProcess>();
/** Directories the launchers made; removed at exit unless KEEP_E2E_DIRS is set. */
const ownDirs = new Set<string>();

function cleanUp(): void {
  for (const p of started) {
    if (p.pid !== undefined && p.exitCode === null && p.signalCode === null) {
      try { process.kill(p.pid, "SIGKILL"); } catch { /* already gone */ }
    }
  }
  started.clear();
  if (process.env.KEEP_E2E_DIRS) {
    for (const d of ownDirs) console.error(`kept ${d}`);
  } else {
    for (const d of ownDirs) rmSync(d, { recursive: true, force: true });
  }
  ownDirs.clear();
}
process.on("exit", cleanUp);
for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  process.once(signal, () => {
    cleanUp();
    // Another handler (scripts/robustness/resources.ts) exits after its own cleanup.
    if (process.listenerCount(signal) === 0) process.exit(code);
  });
}
// In a test file, also when its tests are done: a running child (its output
// piped to us) would keep the process, and the test runner, waiting.
if (process.env.NODE_TEST_CONTEXT || /_test\.[cm]?[jt]s$/.test(process.argv[1] ?? "")) {
  const { after } = await import("node:test");
  after(cleanUp);
}

// -----------------------------------------------------------------------------
// Ports, directories, processes

// freePort: a port free for TCP and UDP on 127.0.0.1, never one this process
// was given before (the unit tests' helper, used here and re-exported).
export { freePort };

/** A temporary directory the caller removes (not removed at exit). */
export function tempDir(prefix = "cairn-e2e-"): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** A temporary directory removed when this process exits (kept with KEEP_E2E_DIRS=1). */
function exitDir(prefix: string): string {
  const path = mkdtempSync(join(tmpdir(), prefix));
  ownDirs.add(path);
  return path;
}

export interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  /** stdout+stderr so far ("" unless stdio is "pipe"). */
  output(): string;
  /** Resolves with the exit code (or signal name) once the process ends. */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface ProcessOptions {
  /** Added to this process's environment; an undefined value removes the variable. */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Where stdout and stderr go: collected (default), nowhere, or into a file. */
  stdio?: "pipe" | "ignore" | { file: string };
}

function childEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/** Start a command. Killed at exit if still running. */
export function startProcess(cmd: string, args: string[], options: ProcessOptions = {}): Proc {
  const want = options.stdio ?? "pipe";
  const fd = typeof want === "object" ? openSync(want.file, "w") : undefined;
  const out: "pipe" | "ignore" | number = fd ?? (want === "ignore" ? "ignore" : "pipe");
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, { cwd: options.cwd ?? root, env: childEnv(options.env), stdio: ["ignore", out, out] });
  } finally {
    // The child holds its own copy of a log file's descriptor.
    if (fd !== undefined) closeSync(fd);
  }
  started.add(child);
  let text = "";
  child.stdout?.on("data", (d: Buffer) => { text += d.toString(); });
  child.stderr?.on("data", (d: Buffer) => { text += d.toString(); });
  const exited = new Promise<number | string>((ok) => {
    child.once("exit", (code, signal) => {
      started.delete(child);
      ok(code ?? signal ?? "unknown");
    });
    // Not started at all (no such command): no "exit" follows.
    child.once("error", (err: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return;
      started.delete(child);
      text += `${cmd}: ${err.message}\n`;
      ok(err.code ?? "error");
    });
  });
  return {
    child,
    pid: child.pid ?? -1,
    output: () => text,
    exited,
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        try { process.kill(child.pid, signal); } catch { /* gone */ }
      }
      return exited;
    },
  };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run a command to completion (SIGKILL after timeoutMs, default 30 s). */
export async function run(cmd: string, args: string[], options: { env?: Record<string, string | undefined>; input?: string | Uint8Array; timeoutMs?: number; cwd?: string } = {}): Promise<RunResult> {
  const child = spawn(cmd, args, { cwd: options.cwd ?? root, env: childEnv(options.env), stdio: ["pipe", "pipe", "pipe"] });
  started.add(child);
  let stdout = "", stderr = "";
  child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
  child.stdin.on("error", () => { /* the command did not read its input */ });
  child.stdin.end(options.input ?? "");
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  const code = await new Promise<number>((ok) => {
    child.once("error", (err) => { stderr += err.message; ok(127); });
    child.once("exit", (c, s) => ok(c ?? (s ? 128 : 1)));
  });
  clearTimeout(timer);
  started.delete(child);
  return { code, stdout, stderr };
}

/** Poll until fn returns a truthy value: until() with e2e defaults (15 s, every 50 ms). */
export function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string; failOn?: Promise<unknown> } = {},
): Promise<T> {
  return until(fn, options.what ?? "condition", { timeoutMs: options.timeoutMs ?? 15_000, intervalMs: options.intervalMs ?? 50, failOn: options.failOn });
}

/** A rejection once `proc` exits: for waitFor's failOn. */
export function exitOf(proc: Proc, what = "the process"): Promise<never> {
  return proc.exited.then((code) => {
    throw new Error(`${what} exited with ${code}`);
  });
}

/** `wait`, or on failure: kill `proc` and fail with the end of its output. */
async function orKill<T>(wait: Promise<T>, proc: Proc, what: string): Promise<T> {
  try {
    return await wait;
  } catch (err) {
    void proc.kill();
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n--- ${what} output ---\n${proc.output().slice(-4000)}`);
  }
}

// -----------------------------------------------------------------------------
// cairn

/** The command line that runs `b` (the build under test by default) with `args`. */
function cairnCommand(args: string[], b: string): [string, string[]] {
  if (b.endsWith(".ts")) return [process.execPath, ["--import", "tsx", b, ...args]];
  if (b.endsWith(".cjs")) return [process.execPath, [b, ...args]];
  return [b, args];
}

/** Start the build under test (or `options.bin`) with `args`. */
export function startCairn(args: string[], options: ProcessOptions & { bin?: string } = {}): Proc {
  const [cmd, full] = cairnCommand(args, options.bin ?? bin);
  return startProcess(cmd, full, options);
}

/** Run the CLI of the build under test (or `options.bin`) to completion. */
export function cairn(args: string[], options: { env?: Record<string, string | undefined>; input?: string | Uint8Array; timeoutMs?: number; bin?: string; cwd?: string } = {}): Promise<RunResult> {
  const [cmd, full] = cairnCommand(args, options.bin ?? bin);
  return run(cmd, full, options);
}

export interface Agent {
  name: string;
  proc: Proc;
  /** Its data dir, if it has one. */
  dir?: string;
  httpPort: number;
  /** "http://127.0.0.1:port" */
  http: string;
  /** "127.0.0.1:port", for -http-addr and CONSUL_HTTP_ADDR. */
  httpAddr: string;
  /** -1: DNS is off. */
  dnsPort: number;
  /** Serf LAN port; serfAddr is "ip:port", for -join. */
  serfPort: number;
  serfAddr: string;
  stop(): Promise<void>;
}
export type DevAgent = Agent;

export type AgentReady = "leader" | "http" | false;

/**
 * Wait until the agent answers: "http" = GET /v1/agent/self is 200; "leader"
 * = /v1/status/leader names one. Fails at once if it exits, with its output.
 */
export async function waitUp(agent: Agent, ready: Exclude<AgentReady, false>, options: { timeoutMs?: number } = {}): Promise<void> {
  const what = `agent ${agent.name}`;
  await orKill(waitFor(async () => {
    if (ready === "http") return (await fetch(`${agent.http}/v1/agent/self`, { signal: AbortSignal.timeout(5_000) })).ok;
    const r = await fetch(`${agent.http}/v1/status/leader`, { signal: AbortSignal.timeout(5_000) });
    return r.ok && (await r.text()) !== '""';
  }, { timeoutMs: options.timeoutMs ?? 30_000, what: ready === "http" ? `${what} on ${agent.http}` : `a leader on ${agent.http}`, failOn: exitOf(agent.proc, what) }), agent.proc, what);
}

function agentOf(name: string, proc: Proc, ports: { http: number; dns: number; serfLan: number; bind?: string }, dir?: string): Agent {
  const bind = ports.bind ?? "127.0.0.1";
  return {
    name,
    proc,
    dir,
    httpPort: ports.http,
    http: `http://${bind}:${ports.http}`,
    httpAddr: `${bind}:${ports.http}`,
    dnsPort: ports.dns,
    serfPort: ports.serfLan,
    serfAddr: `${bind}:${ports.serfLan}`,
    stop: async () => { await proc.kill("SIGKILL"); },
  };
}

interface AgentProcessOptions extends ProcessOptions {
  /** "all" (default): HTTP, DNS, Serf LAN and WAN, server RPC each on a free port; "http": -http-port only. */
  ports?: "all" | "http";
  /** Given ports instead of free ones (a test of a port in use). */
  use?: { http?: number; dns?: number };
  /** What to wait for (default "leader"). */
  ready?: AgentReady;
  runtime?: "binary" | "deno";
  bin?: string;
  name?: string;
}

/** `cairn agent <head> <a free port for each listener> <tail>`, waited for. */
async function launchAgent(head: string[], tail: string[], options: AgentProcessOptions): Promise<Agent> {
  const b = options.bin ?? bin;
  if (options.runtime !== "deno" && !existsSync(b)) throw new Error(`${b} is missing: run npm run build`);
  // Every port on a free one, so agents of concurrent tests never collide.
  const all = options.ports !== "http";
  const p = { http: options.use?.http ?? await freePort(), dns: all ? options.use?.dns ?? await freePort() : -1, serfLan: all ? await freePort() : -1 };
  const ports = all
    ? [`-http-port=${p.http}`, `-dns-port=${p.dns}`, `-serf-lan-port=${p.serfLan}`, `-serf-wan-port=${await freePort()}`, `-server-port=${await freePort()}`]
    : [`-http-port=${p.http}`];
  const args = ["agent", ...head, ...ports, ...tail];
  const proc = options.runtime === "deno"
    ? startProcess(join(root, "node_modules/.bin/deno"), ["run", "--allow-all", "cli/main.ts", ...args], options)
    : startCairn(args, { ...options, bin: b });
  const agent = agentOf(options.name ?? "dev", proc, p);
  if (options.ready !== false) await waitUp(agent, options.ready ?? "leader");
  return agent;
}

/** Start `cairn agent -dev` on free ports and wait until it has a leader. */
export function startDevAgent(extraArgs: string[] = [], options: Omit<AgentProcessOptions, "name"> = {}): Promise<Agent> {
  return launchAgent(["-dev"], extraArgs, { ...options, name: "dev" });
}

/** `cairn agent <args>` with every listener on a free port, waited for (a leader by default). */
export function startAgentProcess(args: string[], options: AgentProcessOptions = {}): Promise<Agent> {
  return launchAgent(args, [], options);
}

export interface AgentOptions extends ProcessOptions {
  /** A server (-server; also gets free Serf WAN and server RPC ports). */
  server?: boolean;
  /** More flags, after the launcher's own. */
  args?: string[];
  /** The data dir (default: a new one, removed at exit). */
  dir?: string;
  /** Given ports instead of free ones (an agent restarted where it was). */
  use?: { http?: number; serfLan?: number };
  /** What to wait for (default "http"). */
  ready?: AgentReady;
  bin?: string;
}

/**
 * A named agent on 127.0.0.1 with its own data dir: `cairn agent [-server]
 * -node=<name> -data-dir=… -bind=127.0.0.1 -client=127.0.0.1 -serf-lan-port=…
 * [-serf-wan-port=… -server-port=…] -http-port=… -dns-port=-1 <args>`.
 */
export async function startAgent(name: string, options: AgentOptions = {}): Promise<Agent> {
  const dir = options.dir ?? exitDir(`cairn-e2e-${name}-`);
  const http = options.use?.http ?? await freePort();
  const serfLan = options.use?.serfLan ?? await freePort();
  const serverPorts = options.server ? [`-serf-wan-port=${await freePort()}`, `-server-port=${await freePort()}`] : [];
  const proc = startCairn([
    "agent", ...(options.server ? ["-server"] : []), `-node=${name}`, `-data-dir=${dir}`, "-bind=127.0.0.1", "-client=127.0.0.1",
    `-serf-lan-port=${serfLan}`, ...serverPorts, `-http-port=${http}`, "-dns-port=-1", ...(options.args ?? []),
  ], options);
  const agent = agentOf(name, proc, { http, dns: -1, serfLan }, dir);
  if (options.ready !== false) await waitUp(agent, options.ready ?? "http");
  return agent;
}

/** "host:port" (e.g. CAIRN_E2E_HTTP_ADDR) as its parts, or undefined for undefined or "". */
export function hostPort(addr: string | undefined): { host: string; port: number } | undefined {
  if (!addr) return undefined;
  const at = addr.lastIndexOf(":");
  return { host: addr.slice(0, at), port: Number(addr.slice(at + 1)) };
}

export interface AgentTarget {
  host: string;
  port: number;
  /** "http://host:port" */
  http: string;
  /** The agent started here, if no address was given. */
  agent?: Agent;
}

/**
 * The agent at `addr` ("host:port", e.g. from CAIRN_E2E_HTTP_ADDR) if one is
 * given, else a new `cairn agent -dev` (killed at exit).
 */
export async function devAgentAt(addr: string | undefined, options: Omit<AgentProcessOptions, "name"> & { args?: string[] } = {}): Promise<AgentTarget> {
  const given = hostPort(addr);
  if (given) return { ...given, http: `http://${addr}` };
  const agent = await startDevAgent(options.args ?? [], options);
  return { host: "127.0.0.1", port: agent.httpPort, http: agent.http, agent };
}

// -----------------------------------------------------------------------------
// Server clusters

export interface ServerSpec {
  name: string;
  /** Its loopback address (-bind and -client). */
  addr: string;
  dir: string;
  http: number;
  serfLan: number;
  serfWan: number;
  server: number;
  proc?: Proc;
  /** Output of earlier runs of this server (restarts). */
  history: string;
}

export interface Cluster {
  servers: ServerSpec[];
  root: { path: string; remove(): void };
  configFile: string;
  env: Record<string, string>;
  start(s: ServerSpec): void;
  kill(s: ServerSpec, signal?: NodeJS.Signals): Promise<void>;
  url(s: ServerSpec, path: string): string;
  /** "addr:port" of the server's RPC listener, as /v1/status/leader names it. */
  rpcAddr(s: ServerSpec): string;
  output(s: ServerSpec): string;
  /** A client agent (no -server) that -retry-joins the servers. */
  startClient(name: string, options?: Omit<AgentOptions, "server">): Promise<Agent>;
  stopAll(): Promise<void>;
}

export interface ClusterOptions {
  env?: Record<string, string>;
  /** Merged into the config file every server reads (raft_multiplier 1 unless given). */
  config?: Record<string, unknown>;
  prefix?: string;
  /** Server i's loopback address (default 127.0.0.1 for all), e.g. (i) => `127.0.1.${i + 1}`. */
  address?: (i: number) => string;
  bin?: string;
}

/** Ports and data dirs for n servers; nothing is started. */
export async function makeCluster(n: number, options: ClusterOptions = {}): Promise<Cluster> {
  const root = tempDir(options.prefix ?? "cairn-raft-e2e-");
  const servers: ServerSpec[] = [];
  for (let i = 0; i < n; i++) {
    servers.push({
      name: `s${i + 1}`,
      addr: options.address?.(i) ?? "127.0.0.1",
      dir: join(root.path, `s${i + 1}`),
      http: await freePort(),
      serfLan: await freePort(),
      serfWan: await freePort(),
      server: await freePort(),
      history: "",
    });
  }
  const configFile = join(root.path, "cluster.json");
  writeFileSync(configFile, JSON.stringify({ performance: { raft_multiplier: 1 }, ...options.config }));
  const env = options.env ?? {};
  const cluster: Cluster = {
    servers,
    root,
    configFile,
    env,
    start(s) {
      if (s.proc) s.history += s.proc.output();
      const joins = servers.filter((o) => o !== s).map((o) => `-retry-join=${o.addr}:${o.serfLan}`);
      s.proc = startCairn([
        "agent",
        "-server",
        `-bootstrap-expect=${n}`,
        `-data-dir=${s.dir}`,
        `-node=${s.name}`,
        `-bind=${s.addr}`,
        `-client=${s.addr}`,
        `-http-port=${s.http}`,
        "-dns-port=-1",
        `-serf-lan-port=${s.serfLan}`,
        `-serf-wan-port=${s.serfWan}`,
        `-server-port=${s.server}`,
        "-retry-interval=1s",
        `-config-file=${configFile}`,
        ...joins,
      ], { env, bin: options.bin });
    },
    async kill(s, signal = "SIGKILL") {
      await s.proc?.kill(signal);
    },
    url(s, path) {
      return `http://${s.addr}:${s.http}${path}`;
    },
    rpcAddr(s) {
      return `${s.addr}:${s.server}`;
    },
    output(s) {
      return s.history + (s.proc?.output() ?? "");
    },
    startClient(name, clientOptions = {}) {
      const joins = servers.map((s) => `-retry-join=${s.addr}:${s.serfLan}`);
      return startAgent(name, {
        dir: join(root.path, name),
        bin: options.bin,
        ...clientOptions,
        args: [...joins, "-retry-interval=1s", ...(clientOptions.args ?? [])],
      });
    },
    async stopAll() {
      for (const s of servers) await s.proc?.kill("SIGKILL");
    },
  };
  return cluster;
}

/** GET a JSON body, or undefined when the server is down or answers non-200. */
export async function getJson(url: string, timeoutMs = 2_000): Promise<unknown> {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!r.ok) return undefined;
    return await r.json();
  } catch {
    return undefined;
  }
}

/** The leader's RPC address every listed live server agrees on, or undefined. */
export async function agreedLeader(c: Cluster, among: ServerSpec[]): Promise<string | undefined> {
  const seen = await Promise.all(among.map((s) => getJson(c.url(s, "/v1/status/leader"))));
  const first = seen[0];
  if (typeof first !== "string" || first === "") return undefined;
  return seen.every((x) => x === first) ? first : undefined;
}

export async function waitForLeader(c: Cluster, among: ServerSpec[], options: { timeoutMs?: number; not?: string } = {}): Promise<ServerSpec> {
  const addr = await waitFor(async () => {
    const l = await agreedLeader(c, among);
    return l !== undefined && l !== options.not ? l : undefined;
  }, { timeoutMs: options.timeoutMs ?? 30_000, intervalMs: 50, what: `a leader among ${among.map((s) => s.name).join(",")}` })
    .catch((err: unknown) => {
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${among.map((s) => `--- ${s.name} ---\n${c.output(s).slice(-4000)}`).join("\n")}`);
    });
  const s = c.servers.find((x) => c.rpcAddr(x) === addr);
  if (!s) throw new Error(`Leader "${addr}" is none of the servers`);
  return s;
}

// -----------------------------------------------------------------------------
// serf

export interface SerfAgent {
  name: string;
  proc: Proc;
  /** Gossip port on 127.0.0.1; addr is "127.0.0.1:port". */
  port: number;
  addr: string;
  /** "127.0.0.1:port" of its RPC listener; rpc is the `-rpc-addr=…` flag. */
  rpcAddr: string;
  rpc: string;
}

/**
 * The stock `serf agent -node=<name> -bind=127.0.0.1:<port>
 * -rpc-addr=127.0.0.1:<free> <args>`, by default waited for until `serf
 * members` answers.
 */
export async function startSerf(name: string, options: { args?: string[]; port?: number; wait?: boolean } & Omit<ProcessOptions, "cwd"> = {}): Promise<SerfAgent> {
  const port = options.port ?? await freePort();
  const rpcPort = await freePort();
  const rpcAddr = `127.0.0.1:${rpcPort}`;
  const proc = startProcess(serfBin, ["agent", `-node=${name}`, `-bind=127.0.0.1:${port}`, `-rpc-addr=${rpcAddr}`, ...(options.args ?? [])], options);
  const s: SerfAgent = { name, proc, port, addr: `127.0.0.1:${port}`, rpcAddr, rpc: `-rpc-addr=${rpcAddr}` };
  if (options.wait !== false) {
    const what = `serf ${name}`;
    await orKill(waitFor(async () => (await serf(s, ["members"], { timeoutMs: 5_000 })).code === 0, { what, failOn: exitOf(proc, what) }), proc, what);
  }
  return s;
}

/** `serf <command> -rpc-addr=… <args>` against agent `s`. */
export function serf(s: SerfAgent, [command, ...args]: string[], options: { timeoutMs?: number } = {}): Promise<RunResult> {
  return run(serfBin, [command!, s.rpc, ...args], { timeoutMs: options.timeoutMs ?? 15_000 });
}
