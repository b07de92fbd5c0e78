// Everything a robustness run sets up outside its own process: child
// processes, nftables tables, tmpfs mounts, temp dirs. Each is registered
// when made and released by `releaseAll()` (normal path, async) or by the
// synchronous fallback on exit, SIGINT, SIGTERM and SIGHUP, so a crashed or
// interrupted run leaves no table, mount or process behind.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";

interface Tracked {
  pids: Set<number>;
  tables: Set<string>;
  mounts: Set<string>;
  dirs: Map<string, { keep: boolean }>;
}

const tracked: Tracked = { pids: new Set(), tables: new Set(), mounts: new Set(), dirs: new Map() };
let hooked = false;

function hook(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", releaseAllSync);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: cleaning up ${tracked.pids.size} processes, ${tracked.tables.size} nft tables, ${tracked.mounts.size} mounts`);
      releaseAllSync();
      process.exit(130);
    });
  }
}

export function trackPid(pid: number): void {
  hook();
  tracked.pids.add(pid);
}

export function untrackPid(pid: number): void {
  tracked.pids.delete(pid);
}

export function trackTable(name: string): void {
  hook();
  tracked.tables.add(name);
}

export function untrackTable(name: string): void {
  tracked.tables.delete(name);
}

export function trackMount(path: string): void {
  hook();
  tracked.mounts.add(path);
}

export function untrackMount(path: string): void {
  tracked.mounts.delete(path);
}

/** A directory removed at exit unless `keep(path)` was called for it. */
export function trackDir(path: string): void {
  hook();
  tracked.dirs.set(path, { keep: false });
}

export function keepDir(path: string): void {
  const d = tracked.dirs.get(path);
  if (d) d.keep = true;
}

export function nft(args: string[], input?: string): { ok: boolean; stderr: string } {
  const r = spawnSync("nft", input === undefined ? args : ["-f", "-"], { input, encoding: "utf8" });
  return { ok: r.status === 0, stderr: `${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

export function umount(path: string): boolean {
  if (spawnSync("umount", [path]).status === 0) return true;
  // Busy (a process we could not wait for still holds a file): detach lazily.
  return spawnSync("umount", ["-l", path]).status === 0;
}

/** Release everything synchronously: SIGKILL by PID, delete tables, unmount, remove dirs. */
export function releaseAllSync(): void {
  for (const pid of tracked.pids) {
    try { process.kill(pid, "SIGCONT"); } catch { /* gone */ }
    try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
  }
  tracked.pids.clear();
  for (const t of tracked.tables) nft(["delete", "table", "inet", t]);
  tracked.tables.clear();
  if (tracked.mounts.size > 0) {
    // The killed processes may still hold files for a moment.
    spawnSync("sleep", ["0.2"]);
    for (const m of tracked.mounts) umount(m);
  }
  tracked.mounts.clear();
  for (const [path, d] of tracked.dirs) if (!d.keep) rmSync(path, { recursive: true, force: true });
  tracked.dirs.clear();
}

/** What is still registered (for tests of the cleanup itself). */
export function trackedCounts(): { pids: number; tables: number; mounts: number; dirs: number } {
  return { pids: tracked.pids.size, tables: tracked.tables.size, mounts: tracked.mounts.size, dirs: tracked.dirs.size };
}

/** Can this process install nftables rules (root, nft present)? */
export function canUseNft(): boolean {
  return nft(["list", "tables"]).ok;
}

/** Can this process mount a tmpfs (root, or CAP_SYS_ADMIN)? */
export function canMountTmpfs(dir: string): boolean {
  if (spawnSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir]).status !== 0) return false;
  umount(dir);
  return true;
}
