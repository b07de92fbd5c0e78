// Server discovery through LAN gossip and bootstrap-expect (consul
// agent/consul/server_serf.go `maybeBootstrap`, agent/metadata/server.go
// `IsConsulServer`), plus `raft/peers.json` manual recovery. Pure: gossip
// members in, decisions out.
import type { Configuration, ServerEntry } from "../raft/types.ts";
import { aliveServers } from "./leader/membership.ts";
import type { MemberLike, ServerMeta } from "./leader/membership.ts";

export { aliveServers, serverFromMember } from "./leader/membership.ts";
export type { LanPoolLike, MemberLike, ServerMeta } from "./leader/membership.ts";
export { reconcileAction } from "./leader/raft_peers.ts";
export type { ReconcileAction } from "./leader/raft_peers.ts";

export type BootstrapDecision =
  | { kind: "wait"; reason: string; seen: number }
  | { kind: "refuse"; reason: string }
  | { kind: "bootstrap"; servers: ServerMeta[] };

/**
 * Whether a server started with bootstrap_expect = `expect` may bootstrap now:
 * once `expect` alive servers of its datacenter agree on the same expect value.
 * Every server decides from the same gossip view, so all get the same voter list.
 */
export function decideBootstrap(members: readonly MemberLike[], options: { expect: number; datacenter: string }): BootstrapDecision {
  const servers = aliveServers(members, options.datacenter);
  for (const s of servers) {
    if (s.id === "") return { kind: "wait", reason: `server "${s.name}" has no "id" tag`, seen: servers.length };
    if (s.bootstrap) return { kind: "refuse", reason: `server "${s.name}" is in bootstrap mode; bootstrap-expect is not used with -bootstrap` };
    if (s.expect !== 0 && s.expect !== options.expect) {
      return {
        kind: "refuse",
        reason: `server "${s.name}" has a conflicting expect value ${s.expect} (ours is ${options.expect}): all servers should expect the same number`,
      };
    }
  }
  const ids = new Set(servers.map((s) => s.id));
  if (ids.size !== servers.length) return { kind: "wait", reason: "two servers share one node ID", seen: servers.length };
  if (servers.length < options.expect) {
    return { kind: "wait", reason: `${servers.length} of ${options.expect} expected servers seen`, seen: servers.length };
  }
  return { kind: "bootstrap", servers };
}

/** The first configuration for a bootstrap: every server as a voter. */
export function bootstrapConfiguration(servers: readonly ServerMeta[]): Configuration {
  return { servers: servers.map((s): ServerEntry => ({ id: s.id, address: s.address, suffrage: "voter" })) };
}

/**
 * Parse `raft/peers.json` in Consul's Raft protocol 3 format:
 * `[{"id": "...", "address": "10.1.0.1:8300", "non_voter": false}]`.
 * Returns the configuration, or an error message naming what is wrong.
 */
export function parsePeersJson(text: string): Configuration | string {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return `Cannot parse peers.json: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!Array.isArray(raw)) return "Cannot use peers.json: expected a JSON array of {\"id\", \"address\", \"non_voter\"}";
  const servers: ServerEntry[] = [];
  const seen = new Set<string>();
  for (const [i, item] of raw.entries()) {
    if (typeof item !== "object" || item === null) return `Cannot use peers.json: entry ${i} is not an object`;
    const { id, address, non_voter: nonVoter } = item as Record<string, unknown>;
    if (typeof id !== "string" || id === "") return `Cannot use peers.json: entry ${i} has no "id"`;
    if (typeof address !== "string" || !/^.+:\d+$/.test(address)) return `Cannot use peers.json: entry ${i} has no "address" of the form host:port`;
    if (nonVoter !== undefined && typeof nonVoter !== "boolean") return `Cannot use peers.json: entry ${i} has a non-boolean "non_voter"`;
    if (seen.has(id)) return `Cannot use peers.json: ID "${id}" is listed twice`;
    seen.add(id);
    servers.push({ id, address, suffrage: nonVoter ? "nonvoter" : "voter" });
  }
  if (!servers.some((s) => s.suffrage === "voter")) return "Cannot use peers.json: it lists no voter";
  return { servers };
}
