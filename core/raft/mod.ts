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
