// Operator endpoint family, autopilot part (consul
// agent/consul/operator_autopilot_endpoint.go): read and set the replicated
// autopilot configuration (set with CAS on modifyIndex), and the leader's
// view of every server's health (`/health` and `/state` both render it).
// Served by name beside the Operator.Raft* methods (core/agent/server_node.ts).

import type { Clock } from "../clock/clock.ts";
import { BadRequestError, CairnError, NoLeaderError, NotLeaderError } from "../errors.ts";
import type { Consensus } from "./consensus.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import type { Autopilot } from "./leader/autopilot.ts";
import { autopilotSettingsFrom } from "../state/autopilot.ts";
import type { AutopilotConfig } from "../state/autopilot.ts";

/** One server in the health reply (Consul's structs.ServerHealth, camelCase, times in ms). */
export interface ServerHealthInfo {
  id: string;
  name: string;
  address: string;
  serfStatus: string;
  version: string;
  leader: boolean;
  /** Undefined: never heard from. */
  lastContactMs?: number;
  lastTerm: number;
  lastIndex: number;
  healthy: boolean;
  voter: boolean;
  /** Wall clock (ms since the epoch) since when `healthy` holds. */
  stableSinceMs: number;
}

export interface ServerHealthReply {
  healthy: boolean;
  failureTolerance: number;
  servers: ServerHealthInfo[];
}

export interface AutopilotEndpoints {
  getConfiguration(args: unknown): Promise<AutopilotConfig>;
  setConfiguration(args: unknown): Promise<boolean>;
  serverHealth(args: unknown): Promise<ServerHealthReply>;
}

export interface AutopilotEndpointOptions {
  autopilot: Autopilot;
  consensus: Consensus;
  clock: Clock;
}

function requireLeader(consensus: Consensus): void {
  if (consensus.isLeader()) return;
  const leader = consensus.leaderAddr();
  if (leader === "") throw new NoLeaderError();
  throw new NotLeaderError(leader);
}

function argsObject(args: unknown): Record<string, unknown> {
  return typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
}

export function autopilotEndpoints(o: AutopilotEndpointOptions): AutopilotEndpoints {
  return {
    getConfiguration(args) {
      try {
        if (argsObject(args).allowStale !== true) requireLeader(o.consensus);
        const stored = o.autopilot.stored();
        if (!stored) throw new CairnError("autopilot_not_initialized", "Autopilot configuration not initialized yet");
        return Promise.resolve({ ...stored });
      } catch (err) {
        return Promise.reject(err);
      }
    },

    async setConfiguration(args) {
      const a = argsObject(args);
      const settings = autopilotSettingsFrom(a.config);
      if (!settings) throw new BadRequestError("Invalid autopilot configuration");
      if (a.cas !== undefined && (typeof a.cas !== "number" || !Number.isSafeInteger(a.cas) || a.cas < 0)) {
        throw new BadRequestError(`Invalid cas index "${String(a.cas)}"`);
      }
      requireLeader(o.consensus);
      const out = await o.consensus.apply(encodeCommand(MessageType.Autopilot, { config: settings, ...(a.cas !== undefined ? { cas: a.cas } : {}) }));
      if (out.result instanceof Error) throw out.result;
      return out.result === true;
    },

    serverHealth() {
      try {
        requireLeader(o.consensus);
        const report = o.autopilot.health();
        if (!report) throw new NoLeaderError();
        const now = o.clock.now();
        const wall = o.clock.wallNow();
        return Promise.resolve({
          healthy: report.healthy,
          failureTolerance: report.failureTolerance,
          servers: report.servers.map((s): ServerHealthInfo => ({
            id: s.id,
            name: s.name,
            address: s.address,
            serfStatus: s.serfStatus,
            version: s.version,
            leader: s.leader,
            ...(s.lastContactMs !== undefined ? { lastContactMs: s.lastContactMs } : {}),
            lastTerm: s.lastTerm,
            lastIndex: s.lastIndex,
            healthy: s.healthy,
            voter: s.voter,
            stableSinceMs: Math.round(wall - (now - s.stableSinceMs)),
          })),
        });
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}
