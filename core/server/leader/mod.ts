// Leader duties: what a server does only while it is the Raft leader.
export { consulServiceId, consulServiceName, consulServiceOf, memberAction } from "./catalog_reconcile.ts";
export type { CatalogNodeView, MemberAction } from "./catalog_reconcile.ts";
export { defaultLeaderTickMs, defaultReconcileIntervalMs, Leader } from "./leader.ts";
export type { LeaderEndpoints, LeaderOptions, RaftPeers } from "./leader.ts";
export { aliveServers, serverFromMember } from "./membership.ts";
export type { LanPoolLike, MemberLike, ServerMeta } from "./membership.ts";
export { reconcileAction } from "./raft_peers.ts";
export type { ReconcileAction } from "./raft_peers.ts";
export { SessionTimers, sessionTtlMultiplier } from "./session_ttl.ts";
