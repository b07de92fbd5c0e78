// Majority math, kept pure and table-tested (etcd-io/raft `quorum/`).
import type { ServerId } from "./types.ts";

/** Votes needed out of `voters`: a strict majority. 0 voters need 0 (nothing can be decided). */
export function majority(voters: number): number {
  return voters <= 0 ? 0 : Math.floor(voters / 2) + 1;
}

/**
 * The highest index stored on a majority of voters, given each voter's match
 * index (missing voters count as 0). 0 when there are no voters.
 */
export function committedIndex(voters: readonly ServerId[], match: (id: ServerId) => number): number {
  if (voters.length === 0) return 0;
  const sorted = voters.map((v) => match(v)).sort((a, b) => b - a);
  return sorted[majority(voters.length) - 1]!;
}

export type VoteResult = "won" | "lost" | "pending";

/** Tally an election: `votes` maps voter → granted; voters not in the map have not answered. */
export function voteResult(voters: readonly ServerId[], votes: ReadonlyMap<ServerId, boolean>): VoteResult {
  if (voters.length === 0) return "lost";
  let granted = 0;
  let rejected = 0;
  for (const v of voters) {
    const g = votes.get(v);
    if (g === true) granted++;
    else if (g === false) rejected++;
  }
  const need = majority(voters.length);
  if (granted >= need) return "won";
  if (voters.length - rejected < need) return "lost";
  return "pending";
}

/** Whether the voters for which `active` holds form a majority. */
export function hasQuorum(voters: readonly ServerId[], active: (id: ServerId) => boolean): boolean {
  if (voters.length === 0) return false;
  return voters.filter((v) => active(v)).length >= majority(voters.length);
}
