// Autopilot on the leader (consul agent/consul/autopilot.go over
// hashicorp/raft-autopilot): gathers what the leader sees of each server —
// its Raft progress and last contact (core/raft/driver.ts) and its gossip
// status — into the pure decisions of autopilot_decide.ts. One instance per
// server, shared by the leader duty (which applies the actions) and the
// `/v1/operator/autopilot/*` endpoints (which report the same health).
import type { Clock } from "../../clock/clock.ts";
import type { Configuration } from "../../raft/types.ts";
import { autopilotConfigGet } from "../../state/autopilot.ts";
import type { AutopilotConfig, AutopilotSettings } from "../../state/autopilot.ts";
import type { StateStore } from "../../state/store.ts";
import { autopilotAction, HealthTracker } from "./autopilot_decide.ts";
import type { AutopilotAction, AutopilotServerView, HealthReport } from "./autopilot_decide.ts";
import { serverFromMember } from "./membership.ts";
import type { LanPoolLike } from "./membership.ts";

/** What autopilot reads of the Raft node (core/raft/driver.ts RaftNode fits). */
export interface AutopilotRaft {
  readonly id: string;
  configuration(): Configuration;
  isLeader(): boolean;
  readonly core: {
    readonly term: number;
    readonly lastIndex: number;
    progressOf(id: string): { match: number } | undefined;
    termAt(index: number): number | undefined;
  };
  peerLastContactMs(id: string): number | undefined;
}

export interface AutopilotOptions {
  raft: () => AutopilotRaft | undefined;
  lan: () => LanPoolLike | undefined;
  /** The replicated state (the FSM's current store). */
  state: () => StateStore;
  /** `autopilot {}` of this agent: stored by a leader when the cluster has no configuration yet. */
  initial: AutopilotSettings;
  clock: Clock;
  nodeName: string;
  /** This server's `build` tag value. */
  version?: string;
}

export class Autopilot {
  readonly #o: AutopilotOptions;
  readonly #tracker = new HealthTracker();
  #wasLeader = false;

  constructor(o: AutopilotOptions) {
    this.#o = o;
  }

  get initial(): AutopilotSettings {
    return this.#o.initial;
  }

  /** The stored configuration, undefined until a leader stored one. */
  stored(): AutopilotConfig | undefined {
    return autopilotConfigGet(this.#o.state());
  }

  /** What autopilot runs with: the stored configuration, else this agent's. */
  settings(): AutopilotSettings {
    return this.stored() ?? this.#o.initial;
  }

  /** Every server's health as this leader sees it; undefined when not the leader. */
  health(): HealthReport | undefined {
    const raft = this.#o.raft();
    const leader = raft?.isLeader() ?? false;
    if (leader !== this.#wasLeader) {
      this.#tracker.reset();
      this.#wasLeader = leader;
    }
    if (!raft || !leader) return undefined;
    const gossip = new Map<string, { name: string; status: string; version: string }>();
    for (const m of this.#o.lan()?.members() ?? []) {
      const s = serverFromMember(m);
      if (s && s.id !== "") gossip.set(s.id, { name: s.name, status: s.status, version: (m.tags?.build ?? "").split(":")[0]! });
    }
    const core = raft.core;
    const servers = raft.configuration().servers.map((s): AutopilotServerView => {
      const self = s.id === raft.id;
      const g = gossip.get(s.id);
      const lastIndex = self ? core.lastIndex : core.progressOf(s.id)?.match ?? 0;
      return {
        id: s.id,
        name: g?.name ?? (self ? this.#o.nodeName : ""),
        address: s.address,
        version: g?.version ?? (self ? this.#o.version ?? "" : ""),
        voter: s.suffrage === "voter",
        leader: self,
        serfStatus: g?.status ?? (self ? "alive" : "none"),
        lastContactMs: raft.peerLastContactMs(s.id),
        lastTerm: lastIndex > 0 ? core.termAt(lastIndex) ?? core.term : 0,
        lastIndex,
      };
    });
    return this.#tracker.observe({ leaderTerm: core.term, leaderLastIndex: core.lastIndex, servers }, this.settings(), this.#o.clock.now());
  }

  /** The next promotion or removal, if any (only on the leader). */
  nextAction(): AutopilotAction | undefined {
    const report = this.health();
    return report ? autopilotAction(report, this.settings(), this.#o.clock.now()) : undefined;
  }
}
