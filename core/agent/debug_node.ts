// The agent's side of /v1/agent/host and /v1/agent/debug/*: host facts from
// node:os, /proc and statfs of the data dir; a CPU profile and a heap
// snapshot of this process through node:inspector (in-process: no port is
// opened). The heap snapshot holds every live string, so the agent's secrets
// (gossip keys, the caller's token) are replaced before it leaves.
import type * as Inspector from "node:inspector";
import { readFileSync, statfs } from "node:fs";
import { arch, cpus, freemem, hostname, platform, release, totalmem, type, uptime } from "node:os";
import { replaceAcrossChunks, type AgentDebugBackend, type HostFacts } from "../http/agent_debug.ts";
import { errorMessage } from "../errors.ts";

/** What a redacted secret becomes in a heap snapshot. */
export const redactedText = "<redacted>";

/** Secrets shorter than this are not searched for: replacing every "ab" would wreck the snapshot and hide nothing. */
const minSecretLength = 8;

/** statfs f_type → name (linux/magic.h), for the file systems a data dir is likely on. */
const fsTypes: Record<number, string> = {
  0xef53: "ext4",
  0x58465342: "xfs",
  0x9123683e: "btrfs",
  0x01021994: "tmpfs",
  0x794c7630: "overlay",
  0x6969: "nfs",
  0x2fc12fc1: "zfs",
  0x65735546: "fuse",
};

function readMemAvailable(): number | undefined {
  try {
    const m = /^MemAvailable:\s+(\d+)\s+kB/m.exec(readFileSync("/proc/meminfo", "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

function osReleaseId(): string {
  try {
    const m = /^ID="?([^"\n]*)"?$/m.exec(readFileSync("/etc/os-release", "utf8"));
    return m?.[1] ?? "";
  } catch {
    return "";
  }
}

function statfsAsync(path: string): Promise<{ type: number; bsize: number; blocks: number; bfree: number; bavail: number; files: number; ffree: number }> {
  return new Promise((resolve, reject) => statfs(path, (err, s) => (err ? reject(err) : resolve(s))));
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The data dir's file system as gopsutil's disk.Usage reports it (usedPercent = used / (used + available)). */
export async function diskUsage(path: string): Promise<NonNullable<HostFacts["Disk"]>> {
  const s = await statfsAsync(path);
  const total = s.blocks * s.bsize;
  const free = s.bavail * s.bsize;
  const used = (s.blocks - s.bfree) * s.bsize;
  const inodesUsed = s.files - s.ffree;
  return {
    path,
    fstype: fsTypes[s.type] ?? `0x${s.type.toString(16)}`,
    total,
    free,
    used,
    usedPercent: used + free > 0 ? round2((used / (used + free)) * 100) : 0,
    inodesTotal: s.files,
    inodesFree: s.ffree,
    inodesUsed,
    inodesUsedPercent: s.files > 0 ? round2((inodesUsed / s.files) * 100) : 0,
  };
}

export async function hostFacts(dataDir: string): Promise<HostFacts> {
  const errors: Record<string, string> = {};
  const total = totalmem();
  const free = freemem();
  const available = readMemAvailable() ?? free;
  const up = uptime();
  let disk: HostFacts["Disk"] = null;
  if (dataDir === "") errors.disk = "no data dir: -dev keeps its state in memory";
  else {
    try {
      disk = await diskUsage(dataDir);
    } catch (err) {
      errors.disk = `Cannot statfs data dir "${dataDir}": ${errorMessage(err)}`;
    }
  }
  const mem = process.memoryUsage();
  return {
    Memory: { total, available, used: total - available, usedPercent: total > 0 ? round2(((total - available) / total) * 100) : 0, free },
    CPU: cpus().map((c, i) => ({ cpu: i, modelName: c.model, mhz: c.speed, cores: 1 })),
    Host: {
      hostname: hostname(),
      uptime: Math.floor(up),
      bootTime: Math.floor(Date.now() / 1000 - up),
      os: platform(),
      platform: osReleaseId() || platform(),
      kernelVersion: release(),
      kernelArch: arch() === "x64" ? "x86_64" : arch(),
    },
    Disk: disk,
    Process: {
      pid: process.pid,
      uptime: Math.floor(process.uptime()),
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      heapTotalBytes: mem.heapTotal,
      nodeVersion: `${type()} node ${process.version}`,
    },
    CollectionTime: Date.now() * 1e6,
    Errors: errors,
  };
}

/**
 * Every occurrence of each secret (as it is written inside a JSON string)
 * replaced by "<redacted>", across the snapshot's chunks. The result is
 * still valid JSON: the secrets are replaced inside string literals by a
 * string of safe characters.
 */
export function redactSecrets(chunks: Iterable<string>, secrets: readonly string[]): Iterable<string> {
  const needles = secrets.filter((s) => s.length >= minSecretLength).map((s) => JSON.stringify(s).slice(1, -1));
  return replaceAcrossChunks(chunks, needles, redactedText);
}

function inspectorSession(): Inspector.Session {
  const { Session } = process.getBuiltinModule("node:inspector") as typeof Inspector;
  const session = new Session();
  session.connect();
  return session;
}

function post<T = unknown>(session: Inspector.Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => {
    session.post(method, params ?? {}, (err: Error | null, result?: unknown) => (err ? reject(err) : resolve(result as T)));
  });
}

export function createAgentDebug(options: {
  enableDebug: () => boolean;
  dataDir: string;
  /** Secrets the agent holds right now (gossip keys, configured tokens), cut out of heap snapshots. */
  secrets: () => string[];
}): AgentDebugBackend {
  let profiling = false;
  let snapshotting = false;
  return {
    enabled: options.enableDebug,
    host: () => hostFacts(options.dataDir),
    async cpuProfile({ seconds, signal }) {
      // One at a time, as Go's pprof ("cpu profiling already in use").
      if (profiling) throw new Error("Could not enable CPU profiling: a CPU profile is already being taken");
      profiling = true;
      const session = inspectorSession();
      try {
        await post(session, "Profiler.enable");
        await post(session, "Profiler.start");
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, seconds * 1000);
          function done(): void {
            clearTimeout(timer);
            signal?.removeEventListener("abort", done);
            resolve();
          }
          if (signal?.aborted) done();
          else signal?.addEventListener("abort", done, { once: true });
        });
        const { profile } = await post<{ profile: unknown }>(session, "Profiler.stop");
        return JSON.stringify(profile);
      } finally {
        session.disconnect();
        profiling = false;
      }
    },
    async heapSnapshot({ redact }) {
      if (snapshotting) throw new Error("Could not take a heap snapshot: one is already being taken");
      snapshotting = true;
      const session = inspectorSession();
      const chunks: string[] = [];
      session.on("HeapProfiler.addHeapSnapshotChunk", (m: { params: { chunk: string } }) => chunks.push(m.params.chunk));
      try {
        await post(session, "HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      } finally {
        session.disconnect();
        snapshotting = false;
      }
      return redactSecrets(chunks, [...options.secrets(), ...redact]);
    },
  };
}
