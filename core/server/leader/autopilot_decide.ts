// Autopilot's decisions (hashicorp/raft-autopilot: server health, stable
// server introduction, dead server cleanup), as pure functions of what the
// leader sees: each server's Raft progress and last contact, and its gossip
// status. Time is an input (`nowMs`); the leader duty applies the result.
import type { AutopilotSettings } from "../../state/autopilot.ts";

/** One server of the Raft configuration as the leader sees it. */
export interface AutopilotServerView {
  id: string;
  /** Node name from gossip ("" when gossip does not know the server). */
  name: string;
  address: string;
  /** The `build` gossip tag (""). */
  version: string;
  voter: boolean;
  leader: boolean;
  /** Gossip status: alive, leaving, left, failed; "none" when gossip does not know it. */
  serfStatus: string;
  /** Since the leader last heard from it; 0 for the leader; undefined: never. */
  lastContactMs: number | undefined;
  /** Term of the last entry it is known to hold. */
  lastTerm: number;
  /** Last index it is known to hold (its match index; the leader's last index for the leader). */
  lastIndex: number;
}

export interface AutopilotView {
  leaderTerm: number;
  leaderLastIndex: number;
  servers: readonly AutopilotServerView[];
}

export interface ServerHealth extends AutopilotServerView {
  healthy: boolean;
  /** When `healthy` last changed (ms, the leader's clock). */
  stableSinceMs: number;
}

export interface HealthReport {
  healthy: boolean;
  failureTolerance: number;
  servers: ServerHealth[];
}

export type AutopilotAction =
  | { op: "promote"; id: string; address: string; name: string }
  | { op: "removeServer"; id: string; name: string; reason: string };

/**
 * raft-autopilot's health rule: gossip says alive, heard from within
 * last_contact_threshold, holds an entry of the leader's term, and trails
 * the leader's log by at most max_trailing_logs.
 */
export function isServerHealthy(s: AutopilotServerView, view: Pick<AutopilotView, "leaderTerm" | "leaderLastIndex">, settings: AutopilotSettings): boolean {
  if (s.serfStatus !== "alive") return false;
  if (s.lastContactMs === undefined || s.lastContactMs > settings.lastContactThresholdMs) return false;
  if (s.lastTerm !== view.leaderTerm) return false;
  if (view.leaderLastIndex > settings.maxTrailingLogs && s.lastIndex < view.leaderLastIndex - settings.maxTrailingLogs) return false;
  return true;
}

/** Voters that may fail with quorum kept: healthy voters minus the quorum of all voters, at least 0. */
export function failureTolerance(servers: readonly Pick<ServerHealth, "voter" | "healthy">[]): number {
  const voters = servers.filter((s) => s.voter);
  const healthy = voters.filter((s) => s.healthy).length;
  return Math.max(0, healthy - (Math.floor(voters.length / 2) + 1));
}

/**
 * Health with memory: each server's `stableSinceMs` is when its health last
 * changed. A server seen for the first time is stable since now.
 */
export class HealthTracker {
  #since = new Map<string, { healthy: boolean; sinceMs: number }>();

  observe(view: AutopilotView, settings: AutopilotSettings, nowMs: number): HealthReport {
    const next = new Map<string, { healthy: boolean; sinceMs: number }>();
    const servers = view.servers.map((s): ServerHealth => {
      const healthy = isServerHealthy(s, view, settings);
      const prev = this.#since.get(s.id);
      const sinceMs = prev && prev.healthy === healthy ? prev.sinceMs : nowMs;
      next.set(s.id, { healthy, sinceMs });
      return { ...s, healthy, stableSinceMs: sinceMs };
    });
    this.#since = next;
    return { healthy: servers.every((s) => s.healthy), failureTolerance: failureTolerance(servers), servers };
  }

  /** Forget everything (leadership lost: a new term starts its own history). */
  reset(): void {
    this.#since.clear();
  }
}

/**
 * The next Raft configuration change autopilot wants, one at a time (Raft
 * takes one change at a time):
 * - dead server cleanup (cleanup_dead_servers): a server gossip marks
 *   failed (or left) and the leader has not heard from within
 *   last_contact_threshold is removed — non-voters freely, a voter only
 *   while the voters left are at least min_quorum, there are three voters
 *   or more (raft-autopilot removes at most (voters - 1) / 2) and the
 *   healthy voters still make a quorum of those left (never remove into a
 *   lost quorum);
 * - promotion: a non-voter healthy for server_stabilization_time becomes a
 *   voter.
 * A server gossip does not know at all is left alone: right after a restart
 * gossip may not have met everyone yet.
 */
export function autopilotAction(report: HealthReport, settings: AutopilotSettings, nowMs: number): AutopilotAction | undefined {
  const servers = report.servers;
  if (settings.cleanupDeadServers) {
    const dead = servers.filter(
      (s) =>
        !s.leader &&
        (s.serfStatus === "failed" || s.serfStatus === "left") &&
        (s.lastContactMs === undefined || s.lastContactMs > settings.lastContactThresholdMs),
    );
    const voters = servers.filter((s) => s.voter);
    const healthyVoters = voters.filter((s) => s.healthy).length;
    for (const s of dead.filter((x) => !x.voter)) {
      return { op: "removeServer", id: s.id, name: s.name, reason: `non-voter is ${s.serfStatus}` };
    }
    for (const s of dead) {
      const remaining = voters.length - 1;
      if (remaining < Math.max(1, settings.minQuorum)) continue;
      // raft-autopilot removes at most (voters - 1) / 2 voters: none of two.
      if (Math.floor((voters.length - 1) / 2) < 1) continue;
      if (healthyVoters < Math.floor(remaining / 2) + 1) continue;
      return { op: "removeServer", id: s.id, name: s.name, reason: `voter is ${s.serfStatus}` };
    }
  }
  for (const s of servers) {
    if (s.voter || !s.healthy) continue;
    if (nowMs - s.stableSinceMs >= settings.serverStabilizationTimeMs) return { op: "promote", id: s.id, address: s.address, name: s.name };
  }
  return undefined;
}
