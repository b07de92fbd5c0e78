// Server discovery through LAN gossip and bootstrap-expect (consul
// agent/consul/server_serf.go `maybeBootstrap`, agent/metadata/server.go
// `IsConsulServer`), plus `raft/peers.json` manual recovery. Pure: gossip
// members in, decisions out.
import type { Coordinate } from "../gossip/coordinate.ts";
import type { Configuration, ServerEntry } from "../raft/types.ts";

/** The part of a gossip member this layer reads (core/agent/gossip.ts `PoolMember` fits). */
export interface MemberLike {
  name: string;
  addr: string;
  port: number;
  tags: Record<string, string>;
  status: string;
}

/** The part of a gossip pool this layer reads (core/agent/gossip.ts `GossipPool` fits). */
export interface LanPoolLike {
  members(): MemberLike[];
  /** Members' Vivaldi coordinates (prepared queries sort by them). */
  coordinates?(): Array<{ node: string; coord: Coordinate }>;
  onMemberEvent(fn: (e: { type: string; members: MemberLike[] }) => void): () => void;
}

/** A Consul server as its gossip tags describe it. */
export interface ServerMeta {
  name: string;
  /** Raft server ID (the node ID). */
  id: string;
  /** Server RPC address "host:port". */
  address: string;
  datacenter: string;
  /** bootstrap_expect it was started with; 0 when unset. */
  expect: number;
  bootstrap: boolean;
  status: string;
}

/** The server behind a gossip member, or undefined for clients and members with unusable tags. */
export function serverFromMember(m: MemberLike): ServerMeta | undefined {
  const t = m.tags ?? {};
  if (t.role !== "consul") return undefined;
  const port = Number(t.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return undefined;
  if (typeof m.addr !== "string" || m.addr === "") return undefined;
  const expect = t.expect === undefined ? 0 : Number(t.expect);
  const host = m.addr.includes(":") ? `[${m.addr}]` : m.addr;
  return {
    name: m.name,
    id: t.id ?? "",
    address: `${host}:${port}`,
    datacenter: t.dc ?? "",
    expect: Number.isInteger(expect) && expect > 0 ? expect : 0,
    bootstrap: t.bootstrap === "1",
    status: m.status,
  };
}

/** Alive servers of one datacenter, sorted by ID. */
export function aliveServers(members: readonly MemberLike[], datacenter: string): ServerMeta[] {
  const out: ServerMeta[] = [];
  for (const m of members) {
    const s = serverFromMember(m);
    if (s && s.status === "alive" && s.datacenter === datacenter) out.push(s);
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

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

export type ReconcileAction = { op: "addVoter"; id: string; address: string; name: string } | { op: "removeServer"; id: string; name: string };

/**
 * What a leader changes in the Raft configuration to follow gossip (consul
 * leader.go `reconcileMember`): alive servers of its datacenter that are not
 * voters are added; servers that left are removed. Failed servers stay (an
 * operator removes them, or they come back). One action per call: Raft takes
 * one membership change at a time.
 */
export function reconcileAction(
  members: readonly MemberLike[],
  configuration: Configuration,
  options: { datacenter: string; selfId: string },
): ReconcileAction | undefined {
  const inConfig = new Map(configuration.servers.map((s) => [s.id, s]));
  for (const m of members) {
    const s = serverFromMember(m);
    if (!s || s.datacenter !== options.datacenter || s.id === "" || s.id === options.selfId) continue;
    const entry = inConfig.get(s.id);
    if (s.status === "left" && entry) return { op: "removeServer", id: s.id, name: s.name };
    if (s.status === "alive" && (!entry || entry.suffrage !== "voter" || entry.address !== s.address)) {
      if (entry && entry.address !== s.address) return { op: "removeServer", id: s.id, name: s.name };
      // A server that came back with a new ID on the same address (its data dir
      // was wiped): drop the stale entry first, as Consul's joinConsulServer does.
      const stale = configuration.servers.find((x) => x.address === s.address && x.id !== s.id);
      if (stale && stale.id !== options.selfId) return { op: "removeServer", id: stale.id, name: s.name };
      return { op: "addVoter", id: s.id, address: s.address, name: s.name };
    }
  }
  return undefined;
}
