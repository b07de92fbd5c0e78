// The seam between the server and its replication: the Raft node
// (core/raft/driver.ts), in a cluster and in `-dev` alike. Writes go through
// apply(); linearizable reads wait on readBarrier().

import { NotLeaderError } from "../errors.ts";

export interface Consensus {
  /** Replicate a command, apply it to the FSM, and answer with its index and the FSM's result. */
  apply(command: Uint8Array, options?: { signal?: AbortSignal }): Promise<{ index: number; result: unknown }>;
  isLeader(): boolean;
  /** Leader's server RPC address; "" when unknown. */
  leaderAddr(): string;
  /** Ms since the last contact with the leader; 0 on the leader. */
  lastContactMs(): number;
  peers(): string[];
  /** Linearizable-read barrier (ReadIndex); resolves when local state is at least as new as the leader's commit. */
  readBarrier(options?: { signal?: AbortSignal }): Promise<void>;
}

/** The error a follower gives for a request only the leader may answer. */
export function notLeader(consensus: Consensus): NotLeaderError {
  const leader = consensus.leaderAddr();
  return new NotLeaderError(leader === "" ? undefined : leader);
}
