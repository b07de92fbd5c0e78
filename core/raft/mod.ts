// cairn's Raft. Pure core: RaftCore (raft.ts) with step/ready/advance.
// Runtime: createRaftNode (driver.ts) wires it to a LogStore, StableStore,
// SnapshotStore, RaftTransport (types.ts), a Clock and an Fsm, and exposes
// the Consensus shape the server layer uses. In-memory stores and a
// simulated transport are here for tests and simulations; the file stores
// live in *_file_node.ts. store_contract_node.ts holds shared store tests.
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
