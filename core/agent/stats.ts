// The `consul` and `runtime` sections of /v1/agent/self `Stats` (what
// `cairn info` prints), as Consul's agent fills them: string values only.
import { availableParallelism } from "node:os";

/** Go's names for the CPU architectures Node reports. */
const goArch: Record<string, string> = { x64: "amd64", ia32: "386", arm64: "arm64", arm: "arm" };

export function runtimeStats(): Record<string, string> {
  const mem = process.memoryUsage();
  return {
    arch: goArch[process.arch] ?? process.arch,
    os: process.platform,
    cpu_count: String(availableParallelism()),
    version: process.version,
    heap_used_bytes: String(mem.heapUsed),
    rss_bytes: String(mem.rss),
  };
}

/**
 * Servers: bootstrap mode, leadership and the leader's address (from the Raft
 * stats); clients: how many servers the LAN pool knows.
 */
export function consulStats(options: {
  server: boolean;
  bootstrap: boolean;
  raft: Record<string, string>;
  knownServers: () => number;
  knownDatacenters: () => number;
}): Record<string, string> {
  if (!options.server) return { server: "false", known_servers: String(options.knownServers()) };
  return {
    server: "true",
    bootstrap: String(options.bootstrap),
    known_datacenters: String(options.knownDatacenters()),
    leader: String(options.raft.state === "Leader"),
    leader_addr: options.raft.leader_addr ?? "",
  };
}
