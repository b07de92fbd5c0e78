// Consul's defaults (agent/config/default.go), and the `-dev` layer on top.
import type { AgentConfig, ConfigLayer } from "./types.ts";

const HOUR_MS = 3_600_000;

export function defaultConfig(): AgentConfig {
  return {
    nodeName: "",
    nodeId: "",
    datacenter: "dc1",
    dataDir: "",
    dev: false,
    server: false,
    bootstrap: false,
    bootstrapExpect: 0,
    bindAddr: "0.0.0.0",
    clientAddr: "127.0.0.1",
    advertiseAddr: "",
    advertiseAddrWan: "",
    addresses: {},
    ports: { http: 8500, dns: 8600, serfLan: 8301, serfWan: 8302, server: 8300 },
    startJoin: [],
    startJoinWan: [],
    retryJoin: [],
    retryJoinWan: [],
    retryIntervalMs: 30_000,
    retryIntervalWanMs: 30_000,
    retryMax: 0,
    retryMaxWan: 0,
    rejoinAfterLeave: false,
    encrypt: "",
    logLevel: "info",
    logJson: false,
    // Resolved after merging when not set: clients leave on terminate,
    // servers don't; servers skip leave on interrupt, clients don't.
    leaveOnTerminate: false,
    skipLeaveOnInterrupt: false,
    performance: { raftMultiplier: 5 },
    autopilot: { cleanupDeadServers: true, lastContactThresholdMs: 200, maxTrailingLogs: 250, minQuorum: 0, serverStabilizationTimeMs: 10_000 },
    raftSnapshotThreshold: 16_384,
    raftSnapshotIntervalMs: 30_000,
    raftTrailingLogs: 10_240,
    domain: "consul.",
    altDomain: "",
    recursors: [],
    dnsConfig: {
      nodeTtlMs: 0,
      serviceTtlMs: {},
      allowStale: true,
      maxStaleMs: 87_600 * HOUR_MS,
      onlyPassing: false,
      enableTruncate: false,
      udpAnswerLimit: 3,
      aRecordLimit: 0,
      recursorTimeoutMs: 2_000,
      soa: { refresh: 3600, retry: 600, expire: 86400, min: 0 },
    },
    limits: { rpcHoldTimeoutMs: 7_000, kvMaxValueSizeBytes: 512 * 1024, txnMaxReqLenBytes: 512 * 1024 },
    telemetry: { prometheusRetentionTimeMs: 0, disableHostname: false },
    enableScriptChecks: false,
    enableLocalScriptChecks: false,
    reconnectTimeoutMs: 72 * HOUR_MS,
    reconnectTimeoutWanMs: 72 * HOUR_MS,
    nodeMeta: {},
    pidFile: "",
    services: [],
    checks: [],
    configFiles: [],
    warnings: [],
  };
}

/** What `-dev` changes (Consul's DevSource): a one-node in-memory server on loopback. */
export function devLayer(): ConfigLayer {
  return {
    dev: true,
    server: true,
    bootstrap: true,
    bindAddr: "127.0.0.1",
    clientAddr: "127.0.0.1",
    performance: { raftMultiplier: 1 },
    logLevel: "debug",
  };
}
