// The nemesis: a seeded schedule of faults on a real cluster, one at a time,
// each followed by its heal and a quiet period.
// - partition: one nftables table `inet cairn_robust_<pid>` with an
//   output-hook chain dropping `ip saddr A ip daddr B` both ways for every cut
//   pair (servers dial each other from their bind address, so this cuts Raft
//   RPC and gossip alike; clients on 127.0.0.1 still reach every server).
//   Shapes: isolate the leader, majority/minority, a bridge (two sides that
//   only one server sees both of), a ring (5 servers: each sees its two
//   neighbours only).
// - kill: kill -9 the leader, a random server or a majority, restart on the
//   same data dir after a while.
// - pause: SIGSTOP the leader or a random server, SIGCONT a few seconds on.
// - disk: fill a tmpfs-backed server's data dir with a filler file until
//   writes fail, hold, delete the filler; a server that exited meanwhile is
//   restarted.
// A server that exits outside a kill or disk fault is noted as a crash and
// restarted at the next heal.
import { spawnSync } from "node:child_process";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Rng } from "../../core/sim/mod.ts";
import type { Cluster, Server } from "./cluster.ts";
import { nft, trackTable, untrackTable } from "./resources.ts";

const haltMarker = "raft node halted";

/** The current incarnation logged that its Raft node halted (storage or FSM failure). */
function isHalted(s: Server): boolean {
  return s.proc?.output().includes(haltMarker) ?? false;
}

function haltLine(s: Server): string {
  return s.proc?.output().split("\n").find((l) => l.includes(haltMarker))?.trim() ?? "";
}

export type FaultKind = "kill" | "pause" | "partition" | "disk";
export const allFaults: readonly FaultKind[] = ["kill", "pause", "partition", "disk"];

export interface NemesisEvent {
  /** ms since the run started. */
  at: number;
  what: string;
}

export interface NemesisOptions {
  cluster: Cluster;
  rng: Rng;
  faults: readonly FaultKind[];
  now(): number;
  log(line: string): void;
  /** Quiet period between faults, ms. */
  quietMs?: [number, number];
}

export class Nemesis {
  readonly events: NemesisEvent[] = [];
  /** Exits nobody asked for, with the server's name and how it ended. */
  readonly crashes: string[] = [];
  /** Servers whose Raft node halted on a full disk while the process stayed up. */
  readonly halts: string[] = [];
  readonly table = `cairn_robust_${process.pid}`;
  readonly #o: NemesisOptions;
  #partitioned = false;
  #fillers = new Map<Server, string>();
  /** Servers we are allowed to see dead right now (killed, or on a full disk). */
  #expectDown = new Set<Server>();
  #stopping = false;
  #wake: (() => void) | undefined;

  constructor(options: NemesisOptions) {
    this.#o = options;
  }

  #note(what: string): void {
    this.events.push({ at: this.#o.now(), what });
    this.#o.log(`${(this.#o.now() / 1000).toFixed(1).padStart(6)}s nemesis: ${what}`);
  }

  /** Sleep, cut short by stop(). */
  async #sleep(ms: number): Promise<void> {
    if (this.#stopping) return;
    await new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      this.#wake = () => { clearTimeout(t); r(); };
    });
    this.#wake = undefined;
  }

  /** Run faults until `until` (ms on the run clock) or stop(). */
  async run(until: number): Promise<void> {
    const { rng, faults } = this.#o;
    const [qLo, qHi] = this.#o.quietMs ?? [2_000, 5_000];
    const usable = faults.filter((f) => f !== "disk" || this.#o.cluster.servers.some((s) => s.tmpfs));
    while (!this.#stopping && this.#o.now() < until) {
      await this.#sleep(rng.range(qLo, qHi));
      this.checkCrashes();
      if (this.#stopping || this.#o.now() >= until || usable.length === 0) break;
      const kind = rng.pick(usable);
      const holdMs = rng.range(2_000, 7_000);
      switch (kind) {
        case "partition": await this.#partition(rng, holdMs); break;
        case "kill": await this.#kill(rng, holdMs); break;
        case "pause": await this.#pause(rng, holdMs); break;
        case "disk": await this.#disk(rng, holdMs); break;
      }
      this.checkCrashes();
      await this.#restartDead("after heal");
    }
  }

  stop(): void {
    this.#stopping = true;
    this.#wake?.();
  }

  async #leaderOrRandom(rng: Rng, pLeader: number): Promise<Server | undefined> {
    const c = this.#o.cluster;
    const wantLeader = rng.chance(pLeader);
    const fallback = rng.pick(c.servers);
    if (wantLeader) {
      const l = await c.leader();
      if (l) return l;
    }
    return c.isRunning(fallback) ? fallback : c.running()[0];
  }

  async #partition(rng: Rng, holdMs: number): Promise<void> {
    const c = this.#o.cluster;
    const n = c.servers.length;
    const shapes = n >= 5 ? ["isolate-leader", "majority-minority", "bridge", "ring"] : ["isolate-leader", "majority-minority", "bridge"];
    const shape = rng.pick(shapes);
    const order = rng.shuffle([...c.servers]);
    const cut: Array<[Server, Server]> = [];
    const cutBetween = (a: Server[], b: Server[]) => { for (const x of a) for (const y of b) cut.push([x, y]); };
    let desc: string;
    if (shape === "isolate-leader") {
      const l = (await c.leader()) ?? order[0]!;
      cutBetween([l], c.servers.filter((s) => s !== l));
      desc = `isolate leader ${l.name}`;
    } else if (shape === "majority-minority") {
      const minority = order.slice(0, Math.floor((n - 1) / 2));
      const majority = order.slice(minority.length);
      cutBetween(minority, majority);
      desc = `split ${minority.map((s) => s.name).join(",")} | ${majority.map((s) => s.name).join(",")}`;
    } else if (shape === "bridge") {
      const bridge = order[0]!;
      const rest = order.slice(1);
      const left = rest.slice(0, Math.floor(rest.length / 2));
      const right = rest.slice(left.length);
      cutBetween(left, right);
      desc = `bridge ${left.map((s) => s.name).join(",")} - ${bridge.name} - ${right.map((s) => s.name).join(",")}`;
    } else {
      for (let i = 0; i < n; i++) {
        for (let j = i + 1; j < n; j++) {
          const adjacent = j === i + 1 || (i === 0 && j === n - 1);
          if (!adjacent) cut.push([order[i]!, order[j]!]);
        }
      }
      desc = `ring ${order.map((s) => s.name).join("-")}-${order[0]!.name}`;
    }
    this.applyCuts(cut);
    this.#note(`partition: ${desc} (${cut.length} pairs cut) for ${holdMs} ms`);
    await this.#sleep(holdMs);
    this.healPartition();
  }

  /** Install exactly these cuts (both directions), replacing any earlier ones. */
  applyCuts(cut: Array<[Server, Server]>): void {
    const rules = cut.flatMap(([a, b]) => [`ip saddr ${a.addr} ip daddr ${b.addr} drop`, `ip saddr ${b.addr} ip daddr ${a.addr} drop`]);
    // "add table" first so "delete table" never fails, then the new table in one transaction.
    const script = `add table inet ${this.table}\ndelete table inet ${this.table}\n` +
      `table inet ${this.table} {\n  chain out {\n    type filter hook output priority 0; policy accept;\n` +
      rules.map((r) => `    ${r}\n`).join("") + "  }\n}\n";
    trackTable(this.table);
    const r = nft([], script);
    if (!r.ok) throw new Error(`nft failed to install the partition: ${r.stderr.trim()}`);
    this.#partitioned = true;
  }

  healPartition(): void {
    if (!this.#partitioned) return;
    const r = nft(["delete", "table", "inet", this.table]);
    if (!r.ok) throw new Error(`nft failed to delete table "${this.table}": ${r.stderr.trim()}`);
    untrackTable(this.table);
    this.#partitioned = false;
    this.#note("heal partition");
  }

  async #kill(rng: Rng, holdMs: number): Promise<void> {
    const c = this.#o.cluster;
    let victims: Server[];
    const p = rng.float();
    if (p < 0.1) {
      const l = await c.leader();
      const others = rng.shuffle(c.servers.filter((s) => s !== l));
      victims = [...(l ? [l] : []), ...others].slice(0, Math.floor(c.servers.length / 2) + 1);
    } else {
      const v = await this.#leaderOrRandom(rng, p < 0.7 ? 1 : 0);
      victims = v ? [v] : [];
    }
    if (victims.length === 0) return;
    const leader = await c.leader();
    for (const v of victims) this.#expectDown.add(v);
    await Promise.all(victims.map((v) => c.kill(v)));
    this.#note(`kill -9 ${victims.map((v) => `${v.name}${v === leader ? " (leader)" : ""}`).join(", ")} for ${holdMs} ms`);
    await this.#sleep(holdMs);
    for (const v of victims) {
      c.start(v);
      this.#expectDown.delete(v);
    }
    this.#note(`restart ${victims.map((v) => v.name).join(", ")}`);
  }

  async #pause(rng: Rng, holdMs: number): Promise<void> {
    const c = this.#o.cluster;
    const v = await this.#leaderOrRandom(rng, 0.6);
    if (!v) return;
    const leader = await c.leader();
    c.pause(v);
    this.#note(`SIGSTOP ${v.name}${v === leader ? " (leader)" : ""} for ${holdMs} ms`);
    await this.#sleep(holdMs);
    c.resume(v);
    this.#note(`SIGCONT ${v.name}`);
  }

  async #disk(rng: Rng, holdMs: number): Promise<void> {
    const c = this.#o.cluster;
    const candidates = c.servers.filter((s) => s.tmpfs);
    const v = rng.pick(candidates);
    this.#expectDown.add(v);
    const bytes = this.fill(v);
    const leader = await c.leader();
    this.#note(`disk full on ${v.name}${v === leader ? " (leader)" : ""} (filler ${(bytes / 1048576).toFixed(1)} MiB) for ${holdMs} ms`);
    await this.#sleep(holdMs);
    this.unfill(v);
    const running = c.isRunning(v);
    const how = v.proc?.child.exitCode ?? v.proc?.child.signalCode;
    if (!running) {
      this.#note(`free disk on ${v.name} (it had exited: ${how}; restarting)`);
      c.start(v);
    } else if (isHalted(v)) {
      // The process lives on with its Raft node stopped: restart it, as an operator would.
      this.#note(`free disk on ${v.name} (its Raft node halted on the full disk and the process stayed up; kill -9 and restart)`);
      this.halts.push(`${v.name} at ${(this.#o.now() / 1000).toFixed(1)} s: ${haltLine(v)}`);
      await c.kill(v);
      c.start(v);
    } else {
      this.#note(`free disk on ${v.name}`);
    }
    this.#expectDown.delete(v);
  }

  /** Fill the server's tmpfs until a write fails; returns the filler's size. */
  fill(s: Server): number {
    if (!s.tmpfs) throw new RangeError(`Server ${s.name} has no tmpfs data dir`);
    const path = join(s.tmpfs.path, "filler");
    this.#fillers.set(s, path);
    const fd = openSync(path, "w");
    let total = 0;
    try {
      for (const size of [1 << 20, 4096, 1]) {
        const chunk = Buffer.alloc(size, 0x5a);
        for (;;) {
          try {
            total += writeSync(fd, chunk);
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === "ENOSPC") break;
            throw err;
          }
        }
      }
    } finally {
      closeSync(fd);
    }
    return total;
  }

  unfill(s: Server): void {
    const path = this.#fillers.get(s);
    if (path === undefined) return;
    rmSync(path, { force: true });
    this.#fillers.delete(s);
  }

  /** Note servers that died (or whose Raft node halted) without a fault that allows it. */
  checkCrashes(): void {
    const c = this.#o.cluster;
    for (const s of c.servers) {
      if (!s.proc || this.#expectDown.has(s) || s.crashNoted) continue;
      const dead = !c.isRunning(s);
      if (!dead && !isHalted(s)) continue;
      s.crashNoted = true;
      const how = dead ? `exited: ${s.proc.child.exitCode ?? s.proc.child.signalCode}` : "Raft node halted, process up";
      const tail = s.proc.output().trim().split("\n").filter((l) => /ERROR|halted|panic|Error/.test(l)).slice(-5).join("\n      ");
      // The data dir as the failed server left it, for a post-mortem (a tmpfs one is gone after the run).
      const copy = join(c.root, `${s.name}-data-at-failure-${s.starts}`);
      spawnSync("cp", ["-a", s.dataDir, copy]);
      this.crashes.push(`${s.name} (${how}) at ${(this.#o.now() / 1000).toFixed(1)} s, data dir copied to ${copy}:\n      ${tail}`);
      this.#note(`${s.name} failed by itself (${how})`);
    }
  }

  async #restartDead(why: string): Promise<void> {
    const c = this.#o.cluster;
    for (const s of c.servers) {
      if (this.#expectDown.has(s)) continue;
      if (c.isRunning(s) && !isHalted(s)) continue;
      if (c.isRunning(s)) await c.kill(s);
      c.start(s);
      this.#note(`restart ${s.name} (${why})`);
    }
  }

  /** End of run: heal every fault, resume, free disks, restart the dead. */
  async healAll(): Promise<void> {
    this.stop();
    this.healPartition();
    for (const s of this.#fillers.keys()) {
      this.unfill(s);
      this.#note(`free disk on ${s.name}`);
    }
    for (const s of this.#o.cluster.servers) {
      if (s.paused) {
        this.#o.cluster.resume(s);
        this.#note(`SIGCONT ${s.name}`);
      }
    }
    this.checkCrashes();
    this.#expectDown.clear();
    await this.#restartDead("final heal");
  }
}
