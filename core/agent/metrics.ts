// What the agent reports at /v1/agent/metrics, under Consul's names: runtime
// memory and GC, LAN members by role and the memberlist health score, gossip
// member events, and on servers the Raft indexes and the state store sizes.
import { hostname } from "node:os";
import { PerformanceObserver } from "node:perf_hooks";
import type { Clock } from "../clock/clock.ts";
import type { AgentConfig } from "../config/mod.ts";
import { Metrics, type GaugeReading } from "../metrics/metrics.ts";
import type { Fsm } from "../server/fsm.ts";
import type { GossipPool } from "../pool/mod.ts";

export interface AgentMetrics {
  metrics: Metrics;
  stop(): void;
}

export function startAgentMetrics(options: {
  config: AgentConfig;
  clock: Clock;
  lan: GossipPool;
  /** Servers and -dev: the state machine, and the Raft facts of `Stats.raft`. */
  server?: { fsm: Fsm; raftStats: () => Record<string, string> };
}): AgentMetrics {
  const { config, clock, lan } = options;
  const metrics = new Metrics({
    now: () => clock.now(),
    wallNow: () => clock.wallNow(),
    hostname: config.telemetry.disableHostname ? "" : hostname(),
  });

  let gcRuns = 0;
  let gcPauseNs = 0;
  let gc: PerformanceObserver | undefined;
  try {
    gc = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        gcRuns++;
        gcPauseNs += Math.round(e.duration * 1e6);
      }
    });
    gc.observe({ entryTypes: ["gc"] });
  } catch {
    gc = undefined; // a runtime without GC entries: no GC gauges
  }

  metrics.addGauges(() => {
    const mem = process.memoryUsage();
    const out: GaugeReading[] = [["runtime.alloc_bytes", mem.heapUsed], ["runtime.sys_bytes", mem.rss]];
    if (gc) out.push(["runtime.total_gc_runs", gcRuns], ["runtime.total_gc_pause_ns", gcPauseNs]);
    let servers = 0;
    let clients = 0;
    for (const m of lan.members()) {
      if (m.status !== "alive") continue;
      if (m.tags.role === "consul") servers++;
      else clients++;
    }
    out.push(["members.servers", servers], ["members.clients", clients]);
    out.push(["memberlist.health.score", Number(lan.stats().health_score ?? 0), { network: "lan" }]);
    const server = options.server;
    if (server) {
      const raft = server.raftStats();
      out.push(["server.isLeader", raft.state === "Leader" ? 1 : 0]);
      if (raft.applied_index !== undefined) out.push(["raft.applied_index", Number(raft.applied_index)]);
      if (raft.last_log_index !== undefined) out.push(["raft.last_index", Number(raft.last_log_index)]);
      const t = server.fsm.state.tables;
      const names = new Set<string>();
      for (const s of t.services.all()) names.add(s.service);
      out.push(["state.nodes", t.nodes.size], ["state.services", names.size], ["state.service_instances", t.services.size], ["state.kv_entries", t.kvs.size]);
    }
    return out;
  });

  const events: Record<string, string> = { join: "serf.member.join", leave: "serf.member.left", failed: "serf.member.failed", update: "serf.member.update", reap: "serf.member.reap" };
  const unsubscribe = lan.onMemberEvent((e) => {
    const name = events[e.type];
    if (name) metrics.incr(name, e.members.length);
  });
  return {
    metrics,
    stop() {
      unsubscribe();
      gc?.disconnect();
    },
  };
}
