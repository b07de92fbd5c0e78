export type {
  AppendRequest,
  AppendResponse,
  Configuration,
  EntryType,
  Fsm,
  HardState,
  HeartbeatRequest,
  HeartbeatResponse,
  LogEntry,
  LogStore,
  RaftMessage,
  RaftMessageType,
  RaftTransport,
  ServerEntry,
  ServerId,
  SnapshotMeta,
  SnapshotRequest,
  SnapshotResponse,
  SnapshotStore,
  StableStore,
  Suffrage,
  TimeoutNowRequest,
  VoteRequest,
  VoteResponse,
} from "./types.ts";
export {
  decodeConfiguration,
  decodeHardState,
  decodeLogEntry,
  decodeRaftMessage,
  decodeSnapshotMeta,
  encodeConfiguration,
  encodeHardState,
  encodeLogEntry,
  encodeRaftMessage,
  encodeSnapshotMeta,
  validateRaftMessage,
} from "./codec.ts";
export { MemoryLogStore } from "./log_store_memory.ts";
export { MemoryStableStore } from "./stable_store_memory.ts";
export { MemorySnapshotStore } from "./snapshot_store_memory.ts";
export type { MemoryStoreOptions } from "./log_store_memory.ts";
export { RaftCore } from "./raft.ts";
export type {
  ConfChange,
  RaftConfig,
  RaftInput,
  RaftReady,
  RaftRestore,
  RaftStats,
  ReadState,
  Role,
  SoftState,
  StepResult,
} from "./raft.ts";
export { committedIndex, hasQuorum, majority, voteResult } from "./quorum.ts";
export type { VoteResult } from "./quorum.ts";
export { createRaftNode, RaftNode } from "./driver.ts";
export type { Consensus, RaftNodeOptions, RaftNodeStats } from "./driver.ts";
export { SimRaftTransport } from "./transport_sim.ts";
