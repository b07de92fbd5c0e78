// The seam between the server and its replication: Raft in a cluster,
// DevConsensus in `-dev`. Writes go through apply(); linearizable reads wait
// on readBarrier().

import { FsmError, NotLeaderError } from "../errors.ts";
import type { Fsm } from "./fsm.ts";

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

/**
 * One server, one in-memory log: every command commits at once and goes
 * through the same Fsm.apply path as under Raft. Index 1 is the initial
 * no-op entry (never applied), so commands start at 2 and no index is 0.
 */
export class DevConsensus implements Consensus {
  readonly #fsm: Fsm;
  readonly #addr: string;
  #index = 1;
  #halted: FsmError | undefined;

  constructor(options: { fsm: Fsm; addr?: string }) {
    this.#fsm = options.fsm;
    this.#addr = options.addr ?? "127.0.0.1:8300";
  }

  /** Index of the last log entry. */
  get lastIndex(): number {
    return this.#index;
  }

  apply(command: Uint8Array, options?: { signal?: AbortSignal }): Promise<{ index: number; result: unknown }> {
    if (this.#halted) return Promise.reject(this.#halted);
    if (options?.signal?.aborted) return Promise.reject(options.signal.reason);
    const index = ++this.#index;
    try {
      const result = this.#fsm.apply(index, command);
      return Promise.resolve({ index, result });
    } catch (err) {
      // The FSM could not apply a committed entry: stop taking writes, as a
      // real node halts rather than diverge from its peers.
      this.#halted = err instanceof FsmError ? err : new FsmError(`FSM failed at index ${index}`, { cause: err });
      return Promise.reject(this.#halted);
    }
  }

  isLeader(): boolean {
    return true;
  }

  leaderAddr(): string {
    return this.#addr;
  }

  lastContactMs(): number {
    return 0;
  }

  peers(): string[] {
    return [this.#addr];
  }

  readBarrier(options?: { signal?: AbortSignal }): Promise<void> {
    if (options?.signal?.aborted) return Promise.reject(options.signal.reason);
    return Promise.resolve();
  }

  /** The error that halted this node, if any. */
  get halted(): FsmError | undefined {
    return this.#halted;
  }
}

/** The error a follower gives for a request only the leader may answer. */
export function notLeader(consensus: Consensus): NotLeaderError {
  const leader = consensus.leaderAddr();
  return new NotLeaderError(leader === "" ? undefined : leader);
}
