// Operator endpoint family, Raft part (consul agent/consul/operator_raft_endpoint.go):
// the Raft configuration with node names, removing a peer, leadership
// transfer, and the Raft facts of `/v1/agent/self`. Servers and `-dev` run
// the same RaftNode, so they answer with the same code.

import type { Clock } from "../clock/clock.ts";
import { BadRequestError, CairnError, NoLeaderError, NotLeaderError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { RaftNode } from "../raft/driver.ts";
import { operatorRaftMethods } from "../rpc/methods.ts";

/**
 * What each operator method needs of the caller's token (consul
 * operator_raft_endpoint.go, operator_autopilot_endpoint.go): operator:read
 * to look, operator:write to change.
 */
export const operatorMethodAccess: Readonly<Record<string, "read" | "write">> = {
  [operatorRaftMethods.getConfiguration]: "read",
  [operatorRaftMethods.removePeer]: "write",
  [operatorRaftMethods.transferLeader]: "write",
  [operatorRaftMethods.autopilotGetConfiguration]: "read",
  [operatorRaftMethods.autopilotSetConfiguration]: "write",
  [operatorRaftMethods.serverHealth]: "read",
};

/** One server in `operator raft` output (Consul's `RaftServer`, camelCase). */
export interface RaftServerInfo {
  id: string;
  node: string;
  address: string;
  leader: boolean;
  protocolVersion: string;
  voter: boolean;
  /** Last log index this server is known to hold (the leader's view of it). */
  lastIndex: number;
}

export interface RaftConfigurationReply {
  servers: RaftServerInfo[];
  index: number;
}

export interface RaftOperatorOptions {
  /** The Raft node, once it runs. */
  raft: () => RaftNode | undefined;
  /** This server's Raft ID and node name. */
  selfId: string;
  nodeName: string;
  /** Server ID → node name of the other servers (from gossip). */
  names?: () => Map<string, string>;
  clock: Clock;
  /** performance.raft_multiplier: a leadership transfer waits up to two election timeouts. */
  raftMultiplier: number;
  logger: Logger;
}

export interface RaftOperatorEndpoints {
  getConfiguration(args: unknown): Promise<RaftConfigurationReply>;
  removePeer(args: unknown): Promise<{ removed: string }>;
  transferLeader(args: unknown): Promise<{ success: boolean }>;
}

function requireLeader(node: RaftNode | undefined): RaftNode {
  if (!node || !node.isLeader()) {
    const leader = node?.leaderAddr() ?? "";
    if (leader === "") throw new NoLeaderError();
    throw new NotLeaderError(leader);
  }
  return node;
}

export function raftOperatorEndpoints(o: RaftOperatorOptions): RaftOperatorEndpoints {
  return {
    getConfiguration(args) {
      try {
        const stale = typeof args === "object" && args !== null && (args as { allowStale?: unknown }).allowStale === true;
        const node = o.raft();
        if (!stale) requireLeader(node);
        if (!node) return Promise.resolve({ servers: [], index: 1 });
        const names = new Map(o.names?.() ?? []);
        names.set(o.selfId, o.nodeName);
        const leaderId = node.leaderId();
        const core = node.core;
        const servers = node.configuration().servers.map((s): RaftServerInfo => ({
          id: s.id,
          node: names.get(s.id) ?? "(unknown)",
          address: s.address,
          leader: s.id === leaderId,
          protocolVersion: "3",
          voter: s.suffrage === "voter",
          lastIndex: s.id === o.selfId ? core.lastIndex : core.progressOf(s.id)?.match ?? 0,
        }));
        return Promise.resolve({ servers, index: Math.max(1, core.commitIndex) });
      } catch (err) {
        return Promise.reject(err);
      }
    },

    async removePeer(args) {
      const a = (typeof args === "object" && args !== null ? args : {}) as { id?: unknown; address?: unknown };
      const id = typeof a.id === "string" ? a.id : "";
      const address = typeof a.address === "string" ? a.address : "";
      if ((id === "") === (address === "")) throw new BadRequestError("Must specify either ?id with the server's ID or ?address with IP:port of peer to remove");
      const node = requireLeader(o.raft());
      const entry = node.configuration().servers.find((s) => (id !== "" ? s.id === id : s.address === address));
      if (!entry) {
        throw new CairnError("not_found_peer", id !== "" ? `id "${id}" was not found in the Raft configuration` : `address "${address}" was not found in the Raft configuration`);
      }
      await node.removeServer(entry.id);
      o.logger.info("removed peer from the Raft configuration", { id: entry.id, address: entry.address });
      return { removed: entry.id };
    },

    async transferLeader(args) {
      const a = (typeof args === "object" && args !== null ? args : {}) as { id?: unknown };
      const to = typeof a.id === "string" && a.id !== "" ? a.id : undefined;
      const node = requireLeader(o.raft());
      if (to !== undefined && !node.configuration().servers.some((s) => s.id === to && s.suffrage === "voter")) {
        throw new BadRequestError(`Cannot transfer leadership to "${to}": not a voter in the Raft configuration`);
      }
      const r = node.transferLeadership(to);
      if (!r.ok) throw new CairnError("transfer_failed", `Cannot transfer leadership: ${r.reason}`);
      // Wait for the outcome: up to two election timeouts.
      const deadline = o.clock.now() + 2 * 1_000 * o.raftMultiplier + 500;
      while (node.isLeader() && o.clock.now() < deadline) {
        await new Promise<void>((resolve) => o.clock.setTimer(20, resolve));
      }
      if (node.isLeader()) throw new CairnError("transfer_failed", "Leadership transfer did not complete in time");
      return { success: true };
    },
  };
}

/** Raft facts for `/v1/agent/self` `Stats.raft` (Consul's keys, string values). */
export function raftStats(node: RaftNode | undefined, selfId: string): Record<string, string> {
  if (!node) return { state: "Follower", num_peers: "0", term: "0", commit_index: "0", applied_index: "0", last_log_index: "0", last_contact: "never" };
  const core = node.core;
  const role = core.role;
  const voters = node.configuration().servers.filter((s) => s.suffrage === "voter");
  return {
    state: role === "leader" ? "Leader" : role === "candidate" || role === "preCandidate" ? "Candidate" : "Follower",
    term: String(core.term),
    commit_index: String(core.commitIndex),
    applied_index: String(node.appliedIndex()),
    last_log_index: String(core.lastIndex),
    last_snapshot_index: String(core.snapshotMeta?.index ?? 0),
    num_peers: String(Math.max(0, voters.length - (voters.some((s) => s.id === selfId) ? 1 : 0))),
    last_contact: core.isLeader() ? "0" : `${node.lastContactMs()}ms`,
    protocol_version: "3",
    leader_addr: node.leaderAddr(),
  };
}
