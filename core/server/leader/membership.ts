// What leader duties and server discovery read of a gossip pool: members
// with their status and tags, and a way to hear of changes. The agent's
// pools (core/pool/) fit; tests use a fake. Pure.
import type { Coordinate } from "../../gossip/coordinate.ts";

/** The part of a gossip member this layer reads (core/pool/ `PoolMember` fits). */
export interface MemberLike {
  name: string;
  addr: string;
  port: number;
  tags: Record<string, string>;
  status: string;
}

/** The part of a gossip pool this layer reads (core/pool/ `GossipPool` fits). */
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
