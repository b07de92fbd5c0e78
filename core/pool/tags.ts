// What an agent says about itself in gossip (Consul's Serf tags), which
// timings it gossips with, and where it can be reached.

import { lookup } from "../lazy_builtins_node.ts";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import type { AgentConfig } from "../config/types.ts";
import { formatDuration, parseDuration } from "../config/duration.ts";
import { errorMessage } from "../errors.ts";
import type { Logger, LogFields, LogLevel } from "../log/mod.ts";
import type { GossipProfile } from "../gossip/profiles.ts";
import type { SerfMember } from "../gossip/serf.ts";
import { joinHostPort, splitHostPort } from "../gossip/wire/addr.ts";
import { revision, version } from "../version.ts";
import type { PoolMember, PoolName } from "./types.ts";

// ---------------------------------------------------------------------------
// Consul's tags, versions and timings

/** memberlist/Serf versions Consul advertises: protocol 1..5 (cur 2), delegate 2..5 (cur 4). */
export const consulVsn: readonly number[] = [1, 5, 2, 2, 5, 4];
/** Consul's own protocol version tags (vsn / vsn_min / vsn_max) and Raft protocol. */
export const consulProtocol = { cur: 2, min: 2, max: 3, raft: 3 } as const;

/** Consul's `build` tag: `<version>:<short revision>`. */
export function buildTag(): string {
  return `${version}:${revision.slice(0, 8)}`;
}

/** The Serf tags Consul sets (agent/consul/server_serf.go, client_serf.go). */
export function consulTags(config: AgentConfig, options: { nodeId: string; pool: PoolName }): Record<string, string> {
  const tags: Record<string, string> = {
    role: config.server ? "consul" : "node",
    dc: config.datacenter,
  };
  if (options.pool === "lan") tags.segment = "";
  tags.id = options.nodeId;
  tags.vsn = String(consulProtocol.cur);
  tags.vsn_min = String(consulProtocol.min);
  tags.vsn_max = String(consulProtocol.max);
  tags.build = buildTag();
  if (config.server) {
    tags.raft_vsn = String(consulProtocol.raft);
    tags.port = String(config.ports.server);
    if (config.bootstrap) tags.bootstrap = "1";
    if (config.bootstrapExpect > 0) tags.expect = String(config.bootstrapExpect);
    if (options.pool === "lan") tags.wan_join_port = String(config.ports.serfWan);
    tags.ft_fs = "1";
    tags.ft_si = "1";
  }
  // cairn's own: where this agent's HTTP API listens (on its client address), so `cairn doctor` can ask
  // each server for its own view. Absent when the port is chosen at bind time (0) or HTTP is off.
  if (options.pool === "lan" && config.ports.http > 0) tags.http_port = String(config.ports.http);
  // advertise_reconnect_timeout (clients only, Consul's client_serf.go): how long others keep us once we failed.
  if (!config.server && options.pool === "lan" && config.advertiseReconnectTimeoutMs > 0) {
    tags[RECONNECT_TIMEOUT_TAG] = formatDuration(config.advertiseReconnectTimeoutMs);
  }
  return tags;
}

/** Consul's libserf.ReconnectTimeoutTag. */
export const RECONNECT_TIMEOUT_TAG = "rc_tm";

/**
 * Consul's libserf ReconnectOverride: a member advertising `rc_tm` is reaped
 * after that long; a malformed one is logged and the pool's timeout used, and
 * 0 means the pool's timeout.
 */
export function reconnectTimeoutOverride(logger: Logger): (member: SerfMember, defaultMs: number) => number {
  return (member, defaultMs) => {
    const text = member.tags[RECONNECT_TIMEOUT_TAG];
    if (text === undefined) return defaultMs;
    const ms = parseDuration(text);
    if (ms === undefined) {
      logger.warn("Member is advertising a malformed reconnect timeout", { member: member.name, rc_tm: text });
      return defaultMs;
    }
    return ms === 0 ? defaultMs : ms;
  };
}

/** Consul's -dev gossip: probe/gossip every 100 ms, suspicion multiplier 3. */
export function devProfile(base: GossipProfile): GossipProfile {
  return Object.freeze({ ...base, probeIntervalMs: 100, probeTimeoutMs: 100, gossipIntervalMs: 100, suspicionMult: 3 });
}

/** The address to advertise when none is configured: the bind address, or a private IPv4 for a wildcard bind. */
export function pickAdvertiseAddr(bindAddr: string): string {
  if (bindAddr !== "0.0.0.0" && bindAddr !== "::" && bindAddr !== "") return bindAddr;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "127.0.0.1";
}

/** "host", "host:port", "[v6]:port" → resolved "ip:port" (default port when absent). */
export async function resolveJoinAddr(addr: string, defaultPort: number): Promise<string> {
  const text = addr.trim();
  if (text === "") throw new Error("empty join address");
  if (text.includes("provider=")) throw new Error(`Cloud auto-join ("${text}") is not supported`);
  let host = text;
  let port = defaultPort;
  // "host:port" is split before any isIP(): isIP tries its large IPv6 pattern on anything that is not
  // dotted IPv4, and compiling that pattern was a visible part of every agent's first join.
  // A bare IPv6 literal has several colons and no brackets: it is a host without a port.
  const hp = splitHostPort(text);
  if (hp && (text.startsWith("[") || !hp.host.includes(":"))) {
    host = hp.host;
    port = hp.port;
  } else if (text.startsWith("[") && text.endsWith("]")) {
    host = text.slice(1, -1);
  }
  if (isIP(host) === 0) {
    try {
      host = (await lookup(host)).address;
    } catch (err) {
      throw new Error(`Failed to resolve ${host}: ${errorMessage(err)}`);
    }
  }
  return joinHostPort(host, port);
}

export function toPoolMember(m: SerfMember): PoolMember {
  const hp = splitHostPort(m.addr);
  const v = m.vsn;
  return {
    name: m.name,
    addr: hp?.host ?? m.addr,
    port: hp?.port ?? 0,
    tags: m.tags,
    status: m.status,
    protocolMin: v[0] ?? 0,
    protocolMax: v[1] ?? 0,
    protocolCur: v[2] ?? 0,
    delegateMin: v[3] ?? 0,
    delegateMax: v[4] ?? 0,
    delegateCur: v[5] ?? 0,
  };
}

/** A logger that raises the transport's decrypt failures to warnings with memberlist's wording. */
export function transportLogger(base: Logger): Logger {
  const wrap = (l: Logger): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      const error = typeof fields?.error === "string" ? fields.error : "";
      if ((level === "debug" || level === "trace") && /No installed keys could decrypt|decrypt/i.test(error)) {
        l.warn(`failed to receive: ${error}`, fields);
        return;
      }
      if ((level === "debug" || level === "trace") && /garbage|undecodable|bad incoming/i.test(message)) {
        l.warn(message, fields);
        return;
      }
      l[level](message, fields);
    };
    return {
      trace: (m, f) => emit("trace", m, f),
      debug: (m, f) => emit("debug", m, f),
      info: (m, f) => emit("info", m, f),
      warn: (m, f) => emit("warn", m, f),
      error: (m, f) => emit("error", m, f),
      named: (n) => wrap(l.named(n)),
      with: (f) => wrap(l.with(f)),
      isEnabled: (lv) => l.isEnabled(lv),
    };
  };
  return wrap(base);
}
