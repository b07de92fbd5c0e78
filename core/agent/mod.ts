export { runAgent, startAgent } from "./agent.ts";
export type { AgentIo, RunningAgent } from "./agent.ts";
export { createClientRpc, operatorMethods, readOrCreateNodeId, ServerNode, startServerNode } from "./server_node.ts";
export type { RaftConfigurationReply, RaftServerInfo, ServerNodeOptions } from "./server_node.ts";
export { blockingWaitMs, RpcRouter } from "./rpc_router.ts";
export type { LocalHandler, RemoteCaller, RpcRouterOptions, RpcRouterStats } from "./rpc_router.ts";
export { aliveServers, bootstrapConfiguration, decideBootstrap, parsePeersJson, reconcileAction, serverFromMember } from "./bootstrap.ts";
export type { BootstrapDecision, LanPoolLike, MemberLike, ReconcileAction, ServerMeta } from "./bootstrap.ts";
