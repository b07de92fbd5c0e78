// Timing profiles for memberlist (DefaultLANConfig / DefaultWANConfig /
// DefaultLocalConfig of memberlist 0.2.2) and Serf's defaults. All durations
// are milliseconds. `serf agent -profile=lan|wan|local` picks one of these;
// Consul uses LAN for the LAN pool and WAN for the WAN pool.

export interface GossipProfile {
  readonly name: "lan" | "wan" | "local";
  readonly tcpTimeoutMs: number;
  readonly indirectChecks: number;
  readonly retransmitMult: number;
  readonly suspicionMult: number;
  readonly suspicionMaxTimeoutMult: number;
  readonly pushPullIntervalMs: number;
  readonly probeTimeoutMs: number;
  readonly probeIntervalMs: number;
  readonly disableTcpPings: boolean;
  readonly awarenessMaxMultiplier: number;
  readonly gossipNodes: number;
  readonly gossipIntervalMs: number;
  readonly gossipToTheDeadMs: number;
  readonly udpBufferSize: number;
  /** 0 = a dead node's name can never be claimed by another address. Consul: 30 s. */
  readonly deadNodeReclaimMs: number;
  readonly metaMaxSize: number;
}

export const lanProfile: GossipProfile = Object.freeze({
  name: "lan",
  tcpTimeoutMs: 10_000,
  indirectChecks: 3,
  retransmitMult: 4,
  suspicionMult: 4,
  suspicionMaxTimeoutMult: 6,
  pushPullIntervalMs: 30_000,
  probeTimeoutMs: 500,
  probeIntervalMs: 1_000,
  disableTcpPings: false,
  awarenessMaxMultiplier: 8,
  gossipNodes: 3,
  gossipIntervalMs: 200,
  gossipToTheDeadMs: 30_000,
  udpBufferSize: 1400,
  deadNodeReclaimMs: 0,
  metaMaxSize: 512,
});

export const wanProfile: GossipProfile = Object.freeze({
  ...lanProfile,
  name: "wan",
  tcpTimeoutMs: 30_000,
  suspicionMult: 6,
  pushPullIntervalMs: 60_000,
  probeTimeoutMs: 3_000,
  probeIntervalMs: 5_000,
  gossipNodes: 4,
  gossipIntervalMs: 500,
  gossipToTheDeadMs: 60_000,
});

export const localProfile: GossipProfile = Object.freeze({
  ...lanProfile,
  name: "local",
  tcpTimeoutMs: 1_000,
  indirectChecks: 1,
  retransmitMult: 2,
  suspicionMult: 3,
  pushPullIntervalMs: 15_000,
  probeTimeoutMs: 200,
  probeIntervalMs: 1_000,
  gossipIntervalMs: 100,
  gossipToTheDeadMs: 15_000,
});

/** The profile for `-profile=name`, or undefined for an unknown name. */
export function gossipProfile(name: string): GossipProfile | undefined {
  switch (name) {
    case "lan": return lanProfile;
    case "wan": return wanProfile;
    case "local": return localProfile;
    default: return undefined;
  }
}

/** memberlist `Vsn` advertised by a serf 0.9.4 agent and by Consul (Serf protocol 4). */
export const serfAgentVsn: readonly number[] = Object.freeze([1, 5, 2, 2, 5, 5]);
export const consulVsn: readonly number[] = Object.freeze([1, 5, 2, 2, 5, 4]);

/** Serf library defaults (docs/gossip-wire.md §8.10); `consulSerfTimings` has Consul's overrides. */
export interface SerfTimings {
  readonly broadcastTimeoutMs: number;
  readonly leavePropagateDelayMs: number;
  readonly coalesceMs: number;
  readonly quiescentMs: number;
  readonly userCoalesceMs: number;
  readonly userQuiescentMs: number;
  readonly reapIntervalMs: number;
  readonly reconnectIntervalMs: number;
  readonly reconnectTimeoutMs: number;
  readonly tombstoneTimeoutMs: number;
  readonly queueCheckIntervalMs: number;
  readonly maxQueueDepth: number;
  readonly minQueueDepth: number;
  readonly recentIntentTimeoutMs: number;
  readonly eventBuffer: number;
  readonly queryBuffer: number;
  readonly queryTimeoutMult: number;
  readonly queryResponseSizeLimit: number;
  readonly querySizeLimit: number;
  readonly userEventSizeLimit: number;
  /**
   * cairn's anti-entropy repair (not in Serf): a join intent heard by gossip
   * for a member memberlist still does not know after this long means we
   * missed its alive broadcast; 0 turns the repair off.
   */
  readonly repairGraceMs: number;
  /**
   * At most one repair push/pull per this interval (scaled with the cluster size like push/pull).
   * A joiner pulls from the join target once more this long (scaled) after the join: the target
   * has heard every join around ours by then. Off with repairGraceMs 0.
   */
  readonly repairIntervalMs: number;
}

const hourMs = 3_600_000;

export const serfTimings: SerfTimings = Object.freeze({
  broadcastTimeoutMs: 5_000,
  leavePropagateDelayMs: 1_000,
  coalesceMs: 0,
  quiescentMs: 0,
  userCoalesceMs: 0,
  userQuiescentMs: 0,
  reapIntervalMs: 15_000,
  reconnectIntervalMs: 30_000,
  reconnectTimeoutMs: 24 * hourMs,
  tombstoneTimeoutMs: 24 * hourMs,
  queueCheckIntervalMs: 30_000,
  maxQueueDepth: 4096,
  minQueueDepth: 0,
  recentIntentTimeoutMs: 5 * 60_000,
  eventBuffer: 512,
  queryBuffer: 512,
  queryTimeoutMult: 16,
  queryResponseSizeLimit: 1024,
  querySizeLimit: 1024,
  userEventSizeLimit: 512,
  // Two gossip intervals: a broadcast that reached most members by then but not us was missed.
  repairGraceMs: 400,
  // Scaled like push/pull: 0.4 s at 50 members, 1.8 s at 5000. A 50-member join storm costs
  // about one repair push/pull per member (sim_test.ts), a missed alive in a quiet cluster two.
  repairIntervalMs: 200,
});

/** The `serf agent` differences: coalescing of member and user events on. */
export const serfAgentTimings: SerfTimings = Object.freeze({
  ...serfTimings,
  coalesceMs: 3_000,
  quiescentMs: 1_000,
  userCoalesceMs: 3_000,
  userQuiescentMs: 1_000,
});

/** Consul's overrides (reconnect 72 h, leave propagate 3 s, queue depths). */
export const consulSerfTimings: SerfTimings = Object.freeze({
  ...serfTimings,
  leavePropagateDelayMs: 3_000,
  reconnectTimeoutMs: 72 * hourMs,
  minQueueDepth: 4096,
});
