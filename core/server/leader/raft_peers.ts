// The Raft configuration follows gossip (consul leader.go
// `reconcileMember`): the leader adds alive servers of its datacenter and
// removes servers that left. The decision is pure; the leader applies it.
import type { Configuration } from "../../raft/types.ts";
import { serverFromMember } from "./membership.ts";
import type { MemberLike } from "./membership.ts";

export type ReconcileAction = { op: "addVoter" | "addNonvoter"; id: string; address: string; name: string } | { op: "removeServer"; id: string; name: string };

/**
 * What a leader changes in the Raft configuration to follow gossip (consul
 * leader.go `reconcileMember`): alive servers of its datacenter that are not
 * voters are added; servers that left are removed. Failed servers stay (an
 * operator removes them, or they come back). One action per call: Raft takes
 * one membership change at a time. With `nonvoters` (autopilot runs) a new
 * server joins as a non-voter and stays one until autopilot promotes it.
 */
export function reconcileAction(
  members: readonly MemberLike[],
  configuration: Configuration,
  options: { datacenter: string; selfId: string; nonvoters?: boolean },
): ReconcileAction | undefined {
  const inConfig = new Map(configuration.servers.map((s) => [s.id, s]));
  for (const m of members) {
    const s = serverFromMember(m);
    if (!s || s.datacenter !== options.datacenter || s.id === "" || s.id === options.selfId) continue;
    const entry = inConfig.get(s.id);
    if (s.status === "left" && entry) return { op: "removeServer", id: s.id, name: s.name };
    if (s.status === "alive" && (!entry || (entry.suffrage !== "voter" && !options.nonvoters) || entry.address !== s.address)) {
      if (entry && entry.address !== s.address) return { op: "removeServer", id: s.id, name: s.name };
      // A server that came back with a new ID on the same address (its data dir
      // was wiped): drop the stale entry first, as Consul's joinConsulServer does.
      const stale = configuration.servers.find((x) => x.address === s.address && x.id !== s.id);
      if (stale && stale.id !== options.selfId) return { op: "removeServer", id: stale.id, name: s.name };
      return { op: options.nonvoters ? "addNonvoter" : "addVoter", id: s.id, address: s.address, name: s.name };
    }
  }
  return undefined;
}
