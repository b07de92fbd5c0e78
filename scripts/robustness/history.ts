// The history a robustness run records and the linearizability checker reads:
// one entry per client operation, with the client's own view of when it was
// sent and when (if ever) it was answered.

/** One client operation as observed by the client. Times are monotonic ms (performance.now()-based) from one process. */
export interface Operation<I, O> {
  clientId: number;
  input: I;
  /** when the client sent the request */
  call: number;
  /** when the client got the answer; Infinity when the outcome is unknown (timeout, connection lost, 500 "outcome unknown"): the op may or may not have taken effect, at any time after `call` */
  return: number;
  /** undefined when return === Infinity */
  output: O | undefined;
}

export type KvInput =
  | { op: "read"; key: string }
  | { op: "write"; key: string; value: string } // plain PUT; every written value in a history is unique
  | { op: "cas"; key: string; expect: string | null; value: string } // succeeds iff the current value equals `expect` (null = key absent)
  | { op: "delete"; key: string };

export type KvOutput = { value: string | null } /* read */ | { ok: boolean } /* write, cas, delete */;

export type KvOperation = Operation<KvInput, KvOutput>;
