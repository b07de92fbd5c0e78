// The agent's gossip pools: Consul's LAN pool (every agent) and WAN pool
// (servers, node name `<node>.<dc>`), each a SerfCore run by a GossipDriver
// over the UDP/TCP transport with the memberlist/Serf wire codec. One file
// per job: types.ts (what other layers read), tags.ts (what an agent says
// about itself), pool.ts (one pool), keyring.ts (keys across pools),
// start.ts (building the pools), join.ts (-join, -retry-join and the WAN
// flood join of a datacenter's servers).
export type {
  AgentGossip,
  AgentKeyring,
  GossipDeps,
  GossipPool,
  KeyringPoolResponse,
  PoolCoordinate,
  PoolMember,
  PoolMemberEvent,
  PoolMemberEventType,
  PoolMemberStatus,
  PoolName,
  PoolStats,
  PoolUserEvent,
} from "./types.ts";
export { buildTag, consulProtocol, consulTags, consulVsn, devProfile, pickAdvertiseAddr, resolveJoinAddr, toPoolMember } from "./tags.ts";
export { ForceLeaveError, SerfPool } from "./pool.ts";
export { KeyringInputError, keyringPoolOperation } from "./keyring.ts";
export { startGossip } from "./start.ts";
export { floodTargets, floodWanJoins, retryJoin, startJoin } from "./join.ts";
