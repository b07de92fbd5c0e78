// A cluster of real `dist/cairn agent -server` processes for the robustness
// suite and the failover benchmark. Each server has its own loopback address
// (127.X.Y.i+1, X from our PID so concurrent runs never share one, Y from the
// run number) used as -bind and -client, so nftables rules on address pairs
// cut exactly the links we choose. A server may get its data dir on a small
// tmpfs (the disk-full fault). Processes, mounts and dirs are registered with
// resources.ts and released by PID / path.
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { freePort, startProcess, tempDir, type Proc } from "../e2e/harness.ts";
import { bin } from "../e2e/raft_cluster.ts";
import { httpRequest } from "./http.ts";
import { trackDir, trackMount, trackPid, umount, untrackMount, untrackPid } from "./resources.ts";

export interface Server {
  readonly name: string;
  readonly index: number;
  /** Loopback address used for -bind and -client. */
  readonly addr: string;
  readonly http: number;
  readonly serfLan: number;
  readonly serfWan: number;
  readonly server: number;
  readonly dataDir: string;
  /** The tmpfs mount holding dataDir, when this server takes disk faults. */
  readonly tmpfs?: { path: string; sizeBytes: number };
  proc?: Proc;
  paused: boolean;
  /** The nemesis already reported this incarnation's unasked-for exit. */
  crashNoted: boolean;
  /** Output of every incarnation, oldest first, with a header each. */
  logs: string[];
  starts: number;
}

export interface ClusterOptions {
  servers: number;
  /** Distinguishes runs of one process (third octet of the addresses). */
  runNumber: number;
  /** Indexes of servers whose data dir sits on a tmpfs of tmpfsBytes. */
  tmpfsServers?: number[];
  tmpfsBytes?: number;
  /** Extra agent config merged into {"performance":{"raft_multiplier":1}}. */
  config?: Record<string, unknown>;
  prefix?: string;
}

/** 127.X.Y.0 for this process and run: X in 16..239 from our PID. */
export function addressBase(runNumber: number): string {
  return `127.${16 + (process.pid % 224)}.${runNumber % 256}`;
}

/**
 * A private copy of the server binary for one cluster, so that a rebuild of
 * dist/ during a run (other work in the same tree) never mixes builds or
 * catches a half-written file: the copy must answer `version` before use.
 */
function copyBinary(root: string): { path: string; version: string } {
  if (bin.endsWith(".cjs") || bin.endsWith(".ts")) return { path: bin, version: bin };
  const copy = join(root, "cairn");
  let why = "";
  for (let attempt = 1; attempt <= 12; attempt++) {
    if (attempt > 1) spawnSync("sleep", ["5"]);
    try {
      copyFileSync(bin, copy);
    } catch (err) {
      why = String(err);
      continue;
    }
    chmodSync(copy, 0o755);
    const r = spawnSync(copy, ["version"], { encoding: "utf8", timeout: 20_000 });
    if (r.status === 0) return { path: copy, version: r.stdout.split("\n").filter((l) => /^(cairn|Revision)/.test(l)).join(", ") };
    why = r.stderr || String(r.error);
  }
  throw new Error(`No runnable copy of "${bin}" within a minute (is a build writing it?): ${why}`);
}

export class Cluster {
  readonly servers: Server[];
  readonly root: string;
  readonly configFile: string;
  /** The binary every incarnation runs (a private copy, removed by stop()). */
  readonly binary: string;
  /** What it says to `version`: version and revision. */
  readonly binaryVersion: string;
  readonly #t0 = Date.now();

  private constructor(servers: Server[], root: string, configFile: string, binary: { path: string; version: string }) {
    this.servers = servers;
    this.root = root;
    this.configFile = configFile;
    this.binary = binary.path;
    this.binaryVersion = binary.version;
  }

  static async create(options: ClusterOptions): Promise<Cluster> {
    const root = tempDir(options.prefix ?? "cairn-robust-").path;
    trackDir(root);
    const base = addressBase(options.runNumber);
    const servers: Server[] = [];
    for (let i = 0; i < options.servers; i++) {
      const name = `s${i + 1}`;
      let dataDir = join(root, name);
      let tmpfs: Server["tmpfs"];
      if (options.tmpfsServers?.includes(i)) {
        const path = join(root, `${name}-tmpfs`);
        const sizeBytes = options.tmpfsBytes ?? 64 * 1024 * 1024;
        mkdirSync(path, { recursive: true });
        const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes}`, "tmpfs", path], { encoding: "utf8" });
        if (r.status !== 0) throw new Error(`Cannot mount a tmpfs on "${path}": ${r.stderr.trim() || r.error}`);
        trackMount(path);
        tmpfs = { path, sizeBytes };
        dataDir = join(path, "data");
      }
      mkdirSync(dataDir, { recursive: true });
      servers.push({
        name,
        index: i,
        addr: `${base}.${i + 1}`,
        http: await freePort(),
        serfLan: await freePort(),
        serfWan: await freePort(),
        server: await freePort(),
        dataDir,
        ...(tmpfs ? { tmpfs } : {}),
        paused: false,
        crashNoted: false,
        logs: [],
        starts: 0,
      });
    }
    const configFile = join(root, "cluster.json");
    writeFileSync(configFile, JSON.stringify({ performance: { raft_multiplier: 1 }, ...options.config }));
    return new Cluster(servers, root, configFile, copyBinary(root));
  }

  /** Seconds since the cluster was made, for log lines. */
  elapsed(): string {
    return ((Date.now() - this.#t0) / 1000).toFixed(1).padStart(6);
  }

  isRunning(s: Server): boolean {
    return s.proc !== undefined && s.proc.child.exitCode === null && s.proc.child.signalCode === null;
  }

  running(): Server[] {
    return this.servers.filter((s) => this.isRunning(s));
  }

  start(s: Server): void {
    if (this.isRunning(s)) return;
    this.#archive(s);
    const n = this.servers.length;
    const joins = this.servers.filter((o) => o !== s).map((o) => `-retry-join=${o.addr}:${o.serfLan}`);
    const args = [
      "agent", "-server", `-bootstrap-expect=${n}`, `-data-dir=${s.dataDir}`, `-node=${s.name}`,
      `-bind=${s.addr}`, `-client=${s.addr}`, `-http-port=${s.http}`, "-dns-port=-1",
      `-serf-lan-port=${s.serfLan}`, `-serf-wan-port=${s.serfWan}`, `-server-port=${s.server}`,
      "-retry-interval=1s", `-config-file=${this.configFile}`, ...joins,
    ];
    const b = this.binary;
    s.proc = b.endsWith(".cjs") || b.endsWith(".ts")
      ? startProcess(process.execPath, b.endsWith(".ts") ? ["--import", "tsx", b, ...args] : [b, ...args])
      : startProcess(b, args);
    s.starts++;
    s.paused = false;
    s.crashNoted = false;
    const pid = s.proc.pid;
    trackPid(pid);
    void s.proc.exited.then(() => untrackPid(pid));
  }

  #archive(s: Server): void {
    if (!s.proc) return;
    const how = s.proc.child.exitCode ?? s.proc.child.signalCode ?? "running";
    s.logs.push(`==== ${s.name} incarnation ${s.starts} (pid ${s.proc.pid}, ended: ${how}) ====\n${s.proc.output()}`);
    s.proc = undefined;
  }

  /** Every incarnation's output, the current one last. */
  output(s: Server): string {
    const current = s.proc
      ? [`==== ${s.name} incarnation ${s.starts} (pid ${s.proc.pid}, ${this.isRunning(s) ? "running" : `ended: ${s.proc.child.exitCode ?? s.proc.child.signalCode}`}) ====\n${s.proc.output()}`]
      : [];
    return [...s.logs, ...current].join("\n");
  }

  async kill(s: Server): Promise<void> {
    if (!s.proc) return;
    if (s.paused) {
      try { process.kill(s.proc.pid, "SIGCONT"); } catch { /* gone */ }
      s.paused = false;
    }
    await s.proc.kill("SIGKILL");
  }

  pause(s: Server): void {
    if (!this.isRunning(s) || s.paused) return;
    process.kill(s.proc!.pid, "SIGSTOP");
    s.paused = true;
  }

  resume(s: Server): void {
    if (!s.paused) return;
    if (this.isRunning(s)) {
      try { process.kill(s.proc!.pid, "SIGCONT"); } catch { /* gone */ }
    }
    s.paused = false;
  }

  url(s: Server, path: string): string {
    return `http://${s.addr}:${s.http}${path}`;
  }

  byRpcAddress(addr: string): Server | undefined {
    return this.servers.find((s) => `${s.addr}:${s.server}` === addr);
  }

  /** What each running, unpaused server names as leader ("" = none known, undefined = no answer). */
  async leaderViews(): Promise<Map<Server, string | undefined>> {
    const among = this.running().filter((s) => !s.paused);
    const answers = await Promise.all(among.map(async (s) => {
      const r = await httpRequest(this.url(s, "/v1/status/leader"), { timeoutMs: 1_000 });
      if (r.kind !== "reply" || r.status !== 200) return undefined;
      try {
        const v = JSON.parse(r.body) as unknown;
        return typeof v === "string" ? v : undefined;
      } catch {
        return undefined;
      }
    }));
    return new Map(among.map((s, i) => [s, answers[i]]));
  }

  /**
   * The leader most running servers name (a deposed leader cut off from the
   * rest may still name itself), or undefined when none is named.
   */
  async leader(): Promise<Server | undefined> {
    const votes = new Map<string, number>();
    for (const v of (await this.leaderViews()).values()) if (v) votes.set(v, (votes.get(v) ?? 0) + 1);
    let best: string | undefined;
    for (const [addr, n] of votes) if (best === undefined || n > votes.get(best)!) best = addr;
    return best === undefined ? undefined : this.byRpcAddress(best);
  }

  /** Wait until every running server names the same live leader. */
  async waitForLeader(options: { timeoutMs?: number } = {}): Promise<Server> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    let views = new Map<Server, string | undefined>();
    while (Date.now() < deadline) {
      views = await this.leaderViews();
      const names = new Set(views.values());
      if (views.size > 0 && names.size === 1) {
        const [only] = names;
        const s = only ? this.byRpcAddress(only) : undefined;
        if (s && this.isRunning(s)) return s;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const seen = [...views].map(([s, v]) => `${s.name}: ${v === undefined ? "no answer" : JSON.stringify(v)}`).join(", ");
    throw new Error(`No leader agreed by ${this.running().map((s) => s.name).join(",")} within ${options.timeoutMs ?? 60_000} ms (${seen})`);
  }

  /**
   * Kill every process (by PID), then unmount the tmpfs mounts; with
   * keepData a tmpfs data dir is first copied beside the others.
   */
  async stop(options: { keepData?: boolean } = {}): Promise<void> {
    await Promise.all(this.servers.map((s) => this.kill(s)));
    for (const s of this.servers) this.#archive(s);
    for (const s of this.servers) {
      if (!s.tmpfs) continue;
      if (options.keepData) spawnSync("cp", ["-a", s.dataDir, join(this.root, s.name)]);
      if (umount(s.tmpfs.path)) untrackMount(s.tmpfs.path);
    }
    if (this.binary.startsWith(this.root)) rmSync(this.binary, { force: true });
  }
}
