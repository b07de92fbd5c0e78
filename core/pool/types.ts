// The pools' interfaces: what other layers (HTTP, leader duties, user
// events, metrics) read of the agent's gossip.

import type { Clock } from "../clock/clock.ts";
import type { Logger } from "../log/mod.ts";
import type { KeyringPoolResponse, PoolMember } from "../http/backends.ts";

// The member and keyring shapes are the HTTP layer's (it declares what it reads); the pools fill them.
export type { KeyringPoolResponse, PoolMember, PoolMemberStatus } from "../http/backends.ts";

export type PoolName = "lan" | "wan";

export type PoolMemberEventType = "join" | "leave" | "failed" | "update" | "reap";

export interface PoolMemberEvent {
  readonly type: PoolMemberEventType;
  readonly members: PoolMember[];
}

/** A user event delivered by gossip (or fired locally). */
export interface PoolUserEvent {
  readonly lTime: number;
  readonly name: string;
  readonly payload: Uint8Array;
  readonly coalesce: boolean;
}

/** A Vivaldi network coordinate (Serf's `coordinate.Coordinate`). */
export interface PoolCoordinate {
  readonly vec: readonly number[];
  readonly error: number;
  readonly adjustment: number;
  readonly height: number;
}

/** Counters of one pool's transport (garbage, decrypt failures, …) plus member counts. */
export type PoolStats = Record<string, number | string>;

export interface GossipPool {
  readonly name: PoolName;
  members(): PoolMember[];
  localMember(): PoolMember;
  /** Subscribe to member events; returns the unsubscribe function. */
  onMemberEvent(fn: (e: PoolMemberEvent) => void): () => void;
  /** Subscribe to user events; returns the unsubscribe function. */
  onUserEvent(fn: (e: PoolUserEvent) => void): () => void;
  /** Join through the given "host[:port]" addresses; resolves when every attempt has finished. */
  join(addrs: string[]): Promise<{ joined: number; errors: string[] }>;
  /** Gracefully leave the pool (broadcast intent, wait for propagation). */
  leave(): Promise<void>;
  /** Mark a failed member left (`prune`: erase it at once). Rejects if the node is unknown. */
  forceLeave(node: string, options?: { prune?: boolean }): Promise<void>;
  setTags(tags: Record<string, string>): void;
  userEvent(name: string, payload: Uint8Array, coalesce: boolean): void;
  /** This node's Vivaldi coordinate (undefined when coordinates are disabled). */
  coordinate(): PoolCoordinate | undefined;
  /** Last known coordinate of every member that has one (includes this node). */
  coordinates(): Array<{ node: string; coord: PoolCoordinate }>;
  stats(): PoolStats;
  /** Stop without leaving (a crash, or after `leave()`). */
  stop(): Promise<void>;
}


export interface AgentKeyring {
  /** False when gossip encryption is not configured (operations then fail). */
  readonly enabled: boolean;
  list(options?: { localOnly?: boolean }): Promise<KeyringPoolResponse[]>;
  install(key: string): Promise<KeyringPoolResponse[]>;
  use(key: string): Promise<KeyringPoolResponse[]>;
  remove(key: string): Promise<KeyringPoolResponse[]>;
}

export interface AgentGossip {
  readonly lan: GossipPool;
  /** Servers only. */
  readonly wan?: GossipPool;
  readonly keyring: AgentKeyring;
  /** Leave every pool (WAN first), then stop. */
  leave(): Promise<void>;
  /** Stop every pool without leaving. */
  stop(): Promise<void>;
}

export interface GossipDeps {
  logger: Logger;
  clock: Clock;
  /** The node's UUID (the `id` tag). */
  nodeId: string;
  /** Extra tags merged over the ones derived from config. */
  tags?: Record<string, string>;
}
