// Helpers for Raft cluster e2e tests and the cluster benchmark: N cairn
// server agents on 127.0.0.1 (free ports, `-bootstrap-expect=N`, joined
// with -retry-join), started and killed by PID.
// CAIRN_E2E_BIN picks another build (a `.cjs` bundle runs under node).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cairnBin, freePort, startProcess, tempDir, waitFor, type Proc } from "./harness.ts";

export const bin = process.env.CAIRN_E2E_BIN || cairnBin;

export function startCairn(args: string[], env: Record<string, string> = {}): Proc {
  return bin.endsWith(".cjs") || bin.endsWith(".ts")
    ? startProcess(process.execPath, bin.endsWith(".ts") ? ["--import", "tsx", bin, ...args] : [bin, ...args], { env })
    : startProcess(bin, args, { env });
}

export interface ServerSpec {
  name: string;
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
  output(s: ServerSpec): string;
  stopAll(): Promise<void>;
}

/** Ports and data dirs for n servers; nothing is started. */
export async function makeCluster(n: number, options: { env?: Record<string, string>; config?: Record<string, unknown>; prefix?: string } = {}): Promise<Cluster> {
  const root = tempDir(options.prefix ?? "cairn-raft-e2e-");
  const servers: ServerSpec[] = [];
  for (let i = 0; i < n; i++) {
    servers.push({
      name: `s${i + 1}`,
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
      const joins = servers.filter((o) => o !== s).map((o) => `-retry-join=127.0.0.1:${o.serfLan}`);
      s.proc = startCairn([
        "agent",
        "-server",
        `-bootstrap-expect=${n}`,
        `-data-dir=${s.dir}`,
        `-node=${s.name}`,
        "-bind=127.0.0.1",
        "-client=127.0.0.1",
        `-http-port=${s.http}`,
        "-dns-port=-1",
        `-serf-lan-port=${s.serfLan}`,
        `-serf-wan-port=${s.serfWan}`,
        `-server-port=${s.server}`,
        "-retry-interval=1s",
        `-config-file=${configFile}`,
        ...joins,
      ], env);
    },
    async kill(s, signal = "SIGKILL") {
      await s.proc?.kill(signal);
    },
    url(s, path) {
      return `http://127.0.0.1:${s.http}${path}`;
    },
    output(s) {
      return s.history + (s.proc?.output() ?? "");
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
    .catch((err) => {
      throw new Error(`${String(err)}\n${among.map((s) => `--- ${s.name} ---\n${c.output(s).slice(-4000)}`).join("\n")}`);
    });
  const s = c.servers.find((x) => `127.0.0.1:${x.server}` === addr);
  if (!s) throw new Error(`Leader "${addr}" is none of the servers`);
  return s;
}
