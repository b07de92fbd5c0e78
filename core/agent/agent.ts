// The agent: configuration → components → start → wait for a signal → stop.
// A server runs Raft with file stores and the server RPC; `-dev` runs the
// same Raft with one in-memory voter; a client forwards to the servers.
import { systemClock, type Clock } from "../clock/mod.ts";
import { validateConfig, type AgentConfig } from "../config/mod.ts";
import { errorMessage } from "../errors.ts";
import { effectiveTls } from "../config/tls.ts";
import { tlsMaterial, tlsServerOptions } from "../tls_context_node.ts";
import type { AgentCheckTls } from "../checks/http.ts";
import { RpcTls } from "./rpc_tls.ts";
import { createRoutes, createHttpServer, seaUiFiles, type HttpServer, memberStatus, memberStatusCode, poolStatsStrings, type AgentInfo } from "../http/mod.ts";
import { createLogger, FanoutSink, RecentSink, type Logger } from "../log/mod.ts";
import { StreamSink } from "../log/stream_sink_node.ts";
import { LogFileSink } from "../log/file_sink_node.ts";
import { rmSync, writeFileSync } from "node:fs";
import { readConfigSources } from "../config/load_node.ts";
import { parseConfigText } from "../config/load.ts";
import { FileDefinitionStore, LocalAgent, MemoryDefinitionStore } from "../local/mod.ts";
import { Rng } from "../sim/rng.ts";
import { startDnsServer } from "../dns/mod.ts";
import { buildDate, revision, version } from "../version.ts";
import type { Rpc } from "../rpc/methods.ts";
import { CoordinateSync } from "../local/coordinate_sync.ts";
import { createClientRpc, eventFireMethod, rateLimitsConfig, readOrCreateNodeId, startDevNode, startServerNode, type DevNode } from "./server_node.ts";
import { RateLimits } from "../rpc/rate_limit.ts";
import { floodWanJoins, retryJoin, startGossip, type AgentGossip } from "../pool/mod.ts";
import { Closers } from "./closers.ts";
import { randomSeed, randomUUID } from "../random_node.ts";
import { UserEventStore } from "../pool/user_events.ts";
import { Leader } from "../server/leader/leader.ts";
import { startAgentMetrics } from "./metrics.ts";
import { consulStats, runtimeStats } from "./stats.ts";
import { applyWatches, createAgentWatches, type WatchManager } from "../watch/agent_watches.ts";
import { createAgentDebug } from "./debug_node.ts";
import { createAuditSink } from "./audit_node.ts";
import { AgentTokenStore, aclRouteAuthorizer, initializeAclsSoon, withAgentToken } from "./acl_node.ts";
import { keyToBase64 } from "../gossip/wire/crypto.ts";

export interface AgentIo {
  stdout(s: string): void;
  stderr(s: string): void;
}

export interface RunningAgent {
  readonly config: AgentConfig;
  readonly logger: Logger;
  /** Bound HTTP address (port 0 resolves to the real one). */
  readonly httpAddr: { host: string; port: number } | undefined;
  /** Bound DNS address, UDP and TCP (undefined when ports.dns is -1). */
  readonly dnsAddr: { host: string; port: number } | undefined;
  /** Local services and checks (registration, runners, anti-entropy). */
  readonly local: LocalAgent;
  /** Re-read the config and apply its service and check definitions (`cairn reload`, SIGHUP). */
  reload(): Promise<void>;
  /** LAN (and for servers WAN) gossip pools. */
  readonly gossip: AgentGossip;
  /** Settles when the agent must shut down on its own: retry_join gave up (code 1), or a leave through the API (code 0). */
  readonly shutdownRequested: Promise<{ code: number; reason: string }>;
  stop(): Promise<void>;
}

/** Start every component of an agent; throws (with a clear message) if one cannot start. */
export async function startAgent(
  config: AgentConfig,
  options: {
    io: AgentIo;
    clock?: Clock;
    logSink?: FanoutSink;
    reloadConfig?: () => AgentConfig;
    /** Called at each write to a server's snapshot store (the process's V8 settings, cli/agent_v8.ts). */
    onSnapshotWrite?: () => void;
  },
): Promise<RunningAgent> {
  const clock = options.clock ?? systemClock;
  const sink = options.logSink ?? new FanoutSink();
  const consoleSink = options.logSink ? undefined : new StreamSink({ json: config.logJson, write: options.io.stdout });
  if (consoleSink) sink.add(consoleSink, config.logLevel);
  // The last records at the agent's level, replayed to a `monitor` that connects later.
  const recent = new RecentSink();
  sink.add(recent, config.logLevel);
  // log_file (Consul's logging/logfile.go): the same lines, in a file rotated by size and age.
  let fileSink: LogFileSink | undefined;
  if (config.logFile) {
    try {
      fileSink = new LogFileSink({
        path: config.logFile,
        json: config.logJson,
        rotateBytes: config.logRotateBytes,
        rotateDurationMs: config.logRotateDurationMs,
        maxFiles: config.logRotateMaxFiles,
        now: () => clock.wallNow(),
      });
    } catch (err) {
      throw new Error(`Failed to setup logging: ${errorMessage(err)}`);
    }
    sink.add(fileSink, config.logLevel);
  }
  const logger = createLogger({ sink, level: sink.threshold, now: () => clock.wallNow() });
  // Once at startup, as Consul logs its config builder's warnings: keys that have no effect in cairn, skipped files.
  for (const w of config.warnings) logger.named("agent").warn(w.message);

  const nodeId = config.nodeId || (config.dev ? randomUUID() : await readOrCreateNodeId(config.dataDir));
  const seed = randomSeed();
  const closers = new Closers(logger.named("agent"));
  if (fileSink) {
    const f = fileSink;
    closers.add("log file", () => {
      sink.delete(f);
      f.close();
    });
  }
  let httpGraceMs = 0;
  try {
    return await startComponents();
  } catch (err) {
    // Nothing may keep the process alive after a failed start: gossip sockets included.
    await closers.closeAll().catch(() => {});
    throw err;
  }

  async function startComponents(): Promise<RunningAgent> {
    // pid_file: written at start, removed at stop (Consul's storePid/deletePid).
    if (config.pidFile) {
      const pidFile = config.pidFile;
      try {
        writeFileSync(pidFile, String(process.pid), { mode: 0o666 });
      } catch (err) {
        throw new Error(`Could not open pid file "${pidFile}": ${errorMessage(err)}`);
      }
      closers.add("pid file", () => rmSync(pidFile, { force: true }));
    }
    // Gossip first: servers discover each other through the LAN pool, clients find servers there.
    const gossip = await startGossip(config, { logger: logger.named("agent"), clock, nodeId });
    closers.add("gossip", () => gossip.stop());
    // Server mode: Raft + file stores + server RPC (core/agent/server_node.ts); -dev: the same Raft, one in-memory voter.
    let serverNode: Awaited<ReturnType<typeof startServerNode>> | undefined;
    let devServer: DevNode | undefined;
    // tls.internal_rpc: certificates are read (and refused with the file named) before any listener opens.
    const rpcTls = config.dev ? undefined : new RpcTls(config);
    // limits.rpc_rate on what this agent sends, limits.request_limits on what a server handles; reloadable.
    const limits = new RateLimits(clock, rateLimitsConfig(config), logger.named("agent.rpc"));
    if (config.dev) {
      const dev = await startDevNode({ config, nodeId, clock, rng: new Rng(seed), logger: logger.named("server"), coordinates: () => gossip.lan.coordinates(), limits });
      closers.add("dev server", () => dev.stop());
      devServer = dev;
    } else if (config.server) {
      const server = await startServerNode({ config, nodeId, clock, rng: new Rng(seed ^ 0x1b873593), logger: logger.named("server"), rpcTls, limits, onSnapshotWrite: options.onSnapshotWrite });
      closers.add("server", () => server.stop());
      server.attachLan(gossip.lan);
      if (gossip.wan) server.attachWan(gossip.wan);
      serverNode = server;
    }
    const clientRpc = !config.dev && !config.server
      ? createClientRpc({ config, clock, rng: new Rng(seed ^ 0x85ebca6b), logger: logger.named("client"), lan: () => gossip.lan, rpcTls, limits })
      : undefined;
    if (clientRpc) closers.add("client rpc", () => clientRpc.close());
    const rpc: Rpc = serverNode ? serverNode.router : clientRpc ? clientRpc.router : devServer!.router;
    let requestShutdown: (r: { code: number; reason: string }) => void = () => {};
    const shutdownRequested = new Promise<{ code: number; reason: string }>((resolve) => (requestShutdown = resolve));
    // A halted Raft applies nothing more while the process would keep answering: exit instead, as Consul's
    // would, so a supervisor restarts it once the cause is fixed (a restart cuts a torn log tail).
    serverNode?.haltListeners.add((err) => requestShutdown({ code: 1, reason: `Raft stopped on a storage or state machine failure: ${errorMessage(err)}` }));

    // acl {}: the agent's tokens, and the edge authorizer asking the servers (cached for token_ttl).
    const aclTokens = new AgentTokenStore(config, logger.named("agent.acl"));
    // Replication in a secondary datacenter uses the replication token as the agent holds it now.
    const serverAcl = (serverNode ?? devServer)?.server.acl;
    if (serverAcl) serverAcl.config.replicationToken = () => aclTokens.get("replication");
    const aclAuthorizer = config.acl?.enabled ? aclRouteAuthorizer(config, { rpc, clock, tokens: aclTokens }) : undefined;
    const auditSink = createAuditSink(config, clock);
    if (auditSink) closers.add("audit log", () => auditSink.close());
    const advertise = config.advertiseAddr || config.bindAddr;
    const nodeInfo = { node: config.nodeName, id: nodeId, address: advertise, taggedAddresses: nodeTaggedAddresses(advertise, config.advertiseAddrWan || advertise), meta: config.nodeMeta };
    // The agent's own writes (anti-entropy, its coordinate) carry acl.tokens.agent.
    const agentRpc = config.acl?.enabled ? withAgentToken(rpc, () => aclTokens.get("agent")) : rpc;
    const local = new LocalAgent({
      node: nodeInfo,
      clock,
      rng: new Rng(seed ^ 0x5bd1e995),
      logger: logger.named("agent"),
      rpc: agentRpc,
      // Services and checks sync with their own token, else a config file's or the default token; the node with the agent token.
      ...(config.acl?.enabled
        ? { tokens: { agent: () => aclTokens.get("agent"), user: () => aclTokens.get("default"), configFile: () => aclTokens.get("config_file_service_registration") } }
        : {}),
      store: config.dev || config.dataDir === "" ? new MemoryDefinitionStore() : new FileDefinitionStore(config.dataDir),
      ...(config.enableAgentTlsForChecks ? { checkTls: agentCheckTls(config) } : {}),
      enableScriptChecks: config.enableScriptChecks,
      enableLocalScriptChecks: config.enableLocalScriptChecks,
      checkUpdateIntervalMs: config.checkUpdateIntervalMs,
      discardCheckOutput: config.discardCheckOutput,
      checkOutputMaxSize: config.checkOutputMaxSize,
      // The full-sync interval grows with the LAN pool (consul ae scaleFactor).
      clusterSize: () => gossip.lan.members().length,
      // Consul's ae_interval is internal; tests shorten it with CAIRN_AE_INTERVAL_MS.
      aeIntervalMs: Number(process.env.CAIRN_AE_INTERVAL_MS) > 0 ? Number(process.env.CAIRN_AE_INTERVAL_MS) : undefined,
    });
    local.start({ services: config.services, checks: config.checks }, { sync: false });
    closers.add("local agent", () => local.stop());
    // A server joining the LAN pool triggers a staggered full sync (consul: ServerUp → SyncFull).
    closers.add("server-up sync", gossip.lan.onMemberEvent((e) => {
      if (e.type === "join" && e.members.some((m) => m.tags.role === "consul" && m.name !== config.nodeName)) local.antiEntropy?.syncFullSoon();
    }));
    // Without a CLI-provided loader, reload re-reads the files the agent started with.
    const reloadConfig = options.reloadConfig ?? (() => {
      const sources = readConfigSources(config.configFiles.map((path) => ({ kind: "file" as const, path })));
      const layers = sources.map((src) => parseConfigText(src.text, { file: src.name, format: src.format }));
      return { ...config, services: layers.flatMap((l) => l.services ?? []), checks: layers.flatMap((l) => l.checks ?? []), watches: layers.flatMap((l) => l.watches ?? []) };
    });
    let watches: WatchManager | undefined;
    const httpsServers: HttpServer[] = [];
    const reload = async (): Promise<void> => {
      const next = reloadConfig();
      // Consul refuses a reload whose config does not validate, and changes nothing.
      const problems = validateConfig(next);
      if (problems.length > 0) throw new Error(problems.map((e) => e.message).join("; "));
      // Certificates reload (consul tlsutil Configurator.Update): built first, so files that do not load change nothing.
      const httpsOptions = httpsServers.length > 0 ? tlsServerOptions(effectiveTls(next.tls, "https"), "https") : undefined;
      rpcTls?.reload(next);
      // Consul reloads rpc_rate, rpc_max_burst and request_limits.
      limits.update(rateLimitsConfig(next));
      if (httpsOptions) for (const server of httpsServers) server.setSecureContext?.(httpsOptions);
      await applyWatches(watches, next.watches);
      // Consul reloads log_level too.
      if (consoleSink) sink.add(consoleSink, next.logLevel);
      if (fileSink) sink.add(fileSink, next.logLevel);
      sink.add(recent, next.logLevel);
      local.reload({ services: next.services, checks: next.checks });
      // node_meta reloads too (Consul's loadMetadata): the catalog's node entry is synced again.
      if (JSON.stringify(next.nodeMeta) !== JSON.stringify(nodeInfo.meta)) {
        nodeInfo.meta = next.nodeMeta;
        local.state.setNodeInfo(nodeInfo);
      }
      // raft_snapshot_threshold, raft_snapshot_interval, raft_trailing_logs (hashicorp/raft ReloadConfig).
      (serverNode?.raft ?? devServer?.raft)?.reloadSnapshotConfig({
        snapshotThreshold: next.raftSnapshotThreshold,
        snapshotIntervalMs: next.raftSnapshotIntervalMs,
        trailingLogs: next.raftTrailingLogs,
      });
      await local.syncChanges();
    };

    const agentInfo = describeAgent({ config, nodeId, gossip, local, raftSide: serverNode ?? devServer, nodeMeta: () => nodeInfo.meta });
    const router = serverNode?.router ?? clientRpc?.router ?? devServer!.router;
    const events = new UserEventStore({
      pool: gossip.lan,
      nodeName: config.nodeName,
      localServices: () => local.state.services(),
      clock,
      logger: logger.named("agent.event"),
      // ?dc=other: Consul's Internal.EventFire, answered by a server of that datacenter.
      remote: (datacenter, name, payload) => router.callRaw(eventFireMethod, { datacenter, name, payload }),
    });
    closers.add("user events", () => events.stop());
    const telemetry = startAgentMetrics({ config, clock, lan: gossip.lan, server: serverNode ?? devServer });
    closers.add("telemetry", () => telemetry.stop());
    limits.countTo((name, labels) => telemetry.metrics.incr(name, 1, labels));

    let httpAddr: { host: string; port: number } | undefined;
    let httpsAddr: { host: string; port: number } | undefined;
    if (config.ports.http >= 0 || config.ports.https >= 0) {
      const router = createRoutes({
        rpc,
        agent: agentInfo,
        local,
        gossip,
        events,
        // A client has no Raft of its own: it asks a server, as Consul's does.
        // Operator calls go through the router, so one naming another datacenter (?dc) goes there.
        operator: serverNode?.router ?? devServer?.router ?? clientRpc!.router,
        monitor: { sink, recent },
        metrics: telemetry.metrics,
        prometheus: config.telemetry.prometheusRetentionTimeMs > 0,
        clock,
        reload,
        onLeave: () => requestShutdown({ code: 0, reason: "left the cluster" }),
        kvMaxValueBytes: config.limits.kvMaxValueSizeBytes,
        txnMaxRequestBytes: config.limits.txnMaxReqLenBytes,
        translateWanAddrs: config.translateWanAddrs,
        disableCoordinates: config.disableCoordinates,
        queryTimes: { defaultMs: config.defaultQueryTimeMs, maxMs: config.maxQueryTimeMs },
        discoveryMaxStaleMs: config.discoveryMaxStaleMs,
        authorizer: aclAuthorizer,
        audit: auditSink,
        acl: { enabled: config.acl?.enabled === true, defaultPolicy: config.acl?.defaultPolicy ?? "allow", tokens: aclTokens, defaultToken: () => aclTokens.get("default") },
        // Nothing of the UI is read until someone asks for it.
        ui: config.uiConfig.enabled ? { contentPath: config.uiConfig.contentPath, files: seaUiFiles() } : undefined,
        logger: logger.named("agent.http"),
        debug: createAgentDebug({
          enableDebug: () => config.enableDebug,
          dataDir: config.dataDir,
          secrets: () => agentSecrets(config, gossip),
        }),
      });
      // client_addr (or addresses.http) may be a space-separated list (`-client "127.0.0.1 ::1"`): one listener each, one port.
      for (const host of config.ports.http >= 0 ? listenHosts(config.addresses.http || config.clientAddr) : []) {
        const http = createHttpServer({ router, logger: logger.named("agent.http"), maxConnsPerClient: config.limits.httpMaxConnsPerClient });
        const addr = await http.listen({ host, port: httpAddr?.port ?? config.ports.http });
        httpAddr ??= addr;
        closers.add("http", () => http.close({ graceMs: httpGraceMs }));
      }
      if (config.ports.https >= 0) {
        const tls = { ...tlsServerOptions(effectiveTls(config.tls, "https"), "https"), handshakeTimeout: config.limits.httpsHandshakeTimeoutMs };
        for (const host of listenHosts(config.addresses.https || config.clientAddr)) {
          const https = createHttpServer({ router, logger: logger.named("agent.https"), maxConnsPerClient: config.limits.httpMaxConnsPerClient, tls });
          const addr = await https.listen({ host, port: httpsAddr?.port ?? config.ports.https });
          httpsAddr ??= addr;
          httpsServers.push(https);
          closers.add("https", () => https.close({ graceMs: httpGraceMs }));
        }
      }
    }

    let dnsAddr: { host: string; port: number } | undefined;
    for (const host of listenHosts(config.addresses.dns || config.clientAddr)) {
      const dnsConfig = { ...config, addresses: { ...config.addresses, dns: host }, ports: { ...config.ports, dns: dnsAddr?.port ?? config.ports.dns } };
      const dns = await startDnsServer({ config: dnsConfig, rpc, clock, rng: new Rng(seed ^ 0x2545f491), logger: logger.named("agent.dns"), cacheMs: 0, token: () => aclTokens.get("dns") });
      if (!dns) break;
      dnsAddr ??= dns.addr;
      closers.add("dns", () => dns.server.close());
    }

    printBanner(options.io, config, { nodeId, httpPort: httpAddr?.port ?? -1, httpsPort: httpsAddr?.port ?? -1 });
    logger.named("agent").info("started", { node: config.nodeName, datacenter: config.datacenter, dev: config.dev });
    local.startSync();
    // Our LAN coordinate goes to the servers' catalog (/v1/coordinate/nodes), as Consul's sendCoordinate
    // (the servers check node:write on this node against the agent token).
    const coordinateSync = new CoordinateSync({
      nodeName: config.nodeName,
      datacenter: config.datacenter,
      rpc: agentRpc,
      clock,
      rng: new Rng(seed ^ 0x27d4eb2f),
      logger: logger.named("agent"),
      coordinate: () => gossip.lan.coordinate(),
      poolSize: () => gossip.lan.members().length,
      intervalMinMs: config.coordinate.syncIntervalMinMs,
      rateTarget: config.coordinate.syncRateTarget,
    });
    // disable_coordinates: none to send (Consul starts no sendCoordinate).
    if (!config.disableCoordinates) {
      coordinateSync.start();
      closers.add("coordinate sync", () => coordinateSync.stop());
    }
    // Watches ask this agent's own HTTP API (consul reloadWatches), so they start once it listens.
    watches = createAgentWatches(httpAddr, { clock, logger: logger.named("agent.watch") });
    if (watches) closers.add("watches", () => watches!.stop());
    await applyWatches(watches, config.watches);
    // Leader duties (servers and -dev): catalog and Raft peers from gossip, session TTLs, tombstone GC.
    const raftSide = serverNode ?? devServer;
    if (raftSide) {
      const leader = new Leader({
        // The leader's own catalog writes (serfHealth, reaping) are not a client's: no ACL check.
        server: { handle: (method, args, options) => raftSide.server.handle(method, args, { ...options, internal: true }) },
        fsm: raftSide.fsm,
        consensus: raftSide.consensus,
        lan: gossip.lan,
        clock,
        logger: logger.named("leader"),
        nodeName: config.nodeName,
        datacenter: config.datacenter,
        sessionTimers: raftSide.server.sessionTimers,
        raft: () => serverNode?.raft,
        autopilot: serverNode?.autopilot ?? devServer?.autopilot,
        selfId: nodeId,
        onLeadershipGained: () => {
          local.antiEntropy?.syncFullSoon();
          initializeAclsSoon(raftSide.server, clock, logger.named("leader"));
        },
      });
      serverNode?.leadershipListeners.add(() => leader.leadershipChanged());
      // A secondary datacenter's leader replicates ACLs from the primary while it leads.
      const replication = raftSide.server.aclReplication;
      if (replication) {
        serverNode?.leadershipListeners.add((leading) => (leading ? replication.start() : replication.stop()));
        if (raftSide.consensus.isLeader()) replication.start();
        closers.add("acl replication", () => replication.stop());
      }
      leader.start();
      closers.add("leader duties", () => leader.stop());
    }

    // -retry-join keeps trying in the background; -join and start_join are its aliases (Consul 1.15+), merged in buildConfig.
    const joinLog = logger.named("agent");
    const retrySpecs = [
      { pool: gossip.lan, addrs: config.retryJoin, intervalMs: config.retryIntervalMs, maxAttempts: config.retryMax },
      ...(gossip.wan ? [{ pool: gossip.wan, addrs: config.retryJoinWan, intervalMs: config.retryIntervalWanMs, maxAttempts: config.retryMaxWan }] : []),
    ];
    // A server brings the other servers of its datacenter into the WAN pool (Consul's flood join).
    if (gossip.wan) {
      const flood = floodWanJoins(gossip.lan, gossip.wan, { datacenter: config.datacenter, nodeName: config.nodeName, clock, logger: joinLog });
      closers.add("wan flood join", () => flood.cancel());
    }
    for (const r of retrySpecs) {
      if (r.addrs.length === 0) continue;
      const job = retryJoin(r.pool, { addrs: r.addrs, intervalMs: r.intervalMs, maxAttempts: r.maxAttempts, clock, logger: joinLog });
      closers.add("retry join", () => job.cancel());
      job.done.catch((err: unknown) => requestShutdown({ code: 1, reason: errorMessage(err) }));
    }

    return {
      config,
      logger,
      httpAddr,
      dnsAddr,
      local,
      reload,
      gossip,
      shutdownRequested,
      async stop() {
        logger.named("agent").info("shutting down");
        httpGraceMs = 1_000;
        await closers.closeAll();
      },
    };
  }
}

/** The addresses in a client_addr-style value: Consul takes a space-separated list. */
export function listenHosts(value: string): string[] {
  const hosts = value.split(/\s+/).filter((h) => h !== "");
  return hosts.length ? hosts : [value];
}

/** What `/v1/agent/self` and friends say about this agent. */
function describeAgent(o: {
  config: AgentConfig;
  nodeId: string;
  gossip: AgentGossip;
  local: LocalAgent;
  raftSide: { raftStats(): Record<string, string> } | undefined;
  /** node_meta as last (re)loaded. */
  nodeMeta: () => Record<string, string>;
}): AgentInfo {
  const { config, gossip, local } = o;
  return {
    datacenter: config.datacenter,
    primaryDatacenter: config.primaryDatacenter || config.datacenter,
    nodeName: config.nodeName,
    nodeId: o.nodeId,
    server: config.server,
    version,
    revision,
    buildDate,
    advertiseAddr: config.advertiseAddr || config.bindAddr,
    serfLanPort: config.ports.serfLan,
    get meta() {
      return o.nodeMeta();
    },
    coordinate: () => gossip.lan.coordinate(),
    member: () => {
      const m = gossip.lan.localMember();
      return { name: m.name, addr: m.addr, port: m.port, tags: { ...m.tags }, status: memberStatusCode[m.status] ?? memberStatus.alive };
    },
    stats: () => {
      const raft = o.raftSide?.raftStats() ?? {};
      return {
        agent: local.stats(),
        consul: consulStats({
          server: config.server,
          bootstrap: config.bootstrap,
          raft,
          knownServers: () => gossip.lan.members().filter((m) => m.tags.role === "consul" && m.status === "alive").length,
          knownDatacenters: () => new Set((gossip.wan ?? gossip.lan).members().map((m) => m.tags.dc)).size,
        }),
        serf_lan: poolStatsStrings(gossip.lan),
        ...(gossip.wan ? { serf_wan: poolStatsStrings(gossip.wan) } : {}),
        ...(config.server ? { raft } : {}),
        runtime: runtimeStats(),
        build: { version, revision, prerelease: "" },
      };
    },
    debugConfig: () => ({
      DevMode: config.dev,
      DataDir: config.dataDir,
      ClientAddrs: listenHosts(config.clientAddr),
      HTTPPort: config.ports.http,
      HTTPSPort: config.ports.https,
      DNSPort: config.ports.dns,
      SerfPortLAN: config.ports.serfLan,
      SerfPortWAN: config.ports.serfWan,
      ServerPort: config.ports.server,
      // Read by cairn debug, as Consul's debug command reads them, to know whether it may take profiles.
      EnableDebug: config.enableDebug,
      ACLsEnabled: false,
      // Consul's sanitized runtime config shows secrets as "hidden".
      EncryptKey: config.encrypt ? "hidden" : "",
    }),
  };
}

/** What the agent must never hand out (heap snapshots are redacted of these): the gossip keys, as base64. */
/** enable_agent_tls_for_checks: the agent's certificate, key and CAs (tls.internal_rpc over tls.defaults), read now. */
function agentCheckTls(config: AgentConfig): AgentCheckTls {
  const { ca, cert, key } = tlsMaterial(effectiveTls(config.tls, "internalRpc"), "internal_rpc").options;
  return { ...(ca ? { ca: ca as Buffer[] } : {}), ...(cert ? { cert: cert as Buffer } : {}), ...(key ? { key: key as Buffer } : {}) };
}

function agentSecrets(config: AgentConfig, gossip: AgentGossip): string[] {
  const out = config.encrypt ? [config.encrypt] : [];
  for (const pool of [gossip.lan, gossip.wan]) {
    const ring = (pool as { keyring?: { keys: readonly Uint8Array[] } } | undefined)?.keyring;
    for (const k of ring?.keys ?? []) out.push(keyToBase64(k));
  }
  return out;
}

/** The node's tagged addresses as Consul registers them: lan/wan plus lan_ipv4/wan_ipv4 (or _ipv6). */
function nodeTaggedAddresses(lan: string, wan: string): Record<string, string> {
  const family = (a: string) => (/^\d+\.\d+\.\d+\.\d+$/.test(a) ? "ipv4" : a.includes(":") ? "ipv6" : undefined);
  const out: Record<string, string> = { lan, wan };
  if (family(lan)) out[`lan_${family(lan)}`] = lan;
  if (family(wan)) out[`wan_${family(wan)}`] = wan;
  return out;
}

function printBanner(io: AgentIo, config: AgentConfig, facts: { nodeId: string; httpPort: number; httpsPort: number }): void {
  const rows: Array<[string, string]> = [
    ["Version", `'${version}'`],
    ["Node ID", `'${facts.nodeId}'`],
    ["Node name", `'${config.nodeName}'`],
    ["Datacenter", `'${config.datacenter}'`],
    ["Server", `${config.server} (Bootstrap: ${config.bootstrap})`],
    ["Client Addr", `[${listenHosts(config.clientAddr).join(" ")}] (HTTP: ${facts.httpPort}, HTTPS: ${facts.httpsPort}, DNS: ${config.ports.dns})`],
    ["Cluster Addr", `${config.advertiseAddr || config.bindAddr} (LAN: ${config.ports.serfLan}, WAN: ${config.ports.serfWan})`],
    ["Gossip Encryption", String(config.encrypt !== "")],
  ];
  const lines = [
    "==> Starting cairn agent...",
    ...rows.map(([k, v]) => `${k.padStart(18)}: ${v}`),
    "",
    "==> Log data will now stream in as it occurs:",
    "",
  ];
  io.stdout(lines.join("\n") + "\n");
}

/**
 * Run an agent until SIGINT or SIGTERM: the `cairn agent` command. Returns
 * the process exit code (1 when it cannot start, with the reason on stderr).
 */
export async function runAgent(
  config: AgentConfig,
  io: AgentIo,
  options: { reloadConfig?: () => AgentConfig; onStarted?: (agent: RunningAgent) => void; onSnapshotWrite?: () => void } = {},
): Promise<number> {
  let agent: RunningAgent;
  try {
    agent = await startAgent(config, { io, reloadConfig: options.reloadConfig, onSnapshotWrite: options.onSnapshotWrite });
  } catch (err) {
    io.stderr(`==> ${errorMessage(err)}\n`);
    return 1;
  }
  options.onStarted?.(agent);
  // SIGHUP reloads service and check definitions (Consul: "Caught signal: hangup").
  const onHangup = (): void => {
    io.stdout("==> Caught signal: hangup\n==> Reloading configuration...\n");
    agent.reload().catch((err: unknown) => io.stderr(`==> Failed to reload configs: ${errorMessage(err)}\n`));
  };
  process.on("SIGHUP", onHangup);
  let onSignal: (s: NodeJS.Signals) => void = () => {};
  const signal = await Promise.race([
    new Promise<NodeJS.Signals>((resolve) => {
      onSignal = (s: NodeJS.Signals) => resolve(s);
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
    }),
    agent.shutdownRequested,
  ]);
  process.off("SIGHUP", onHangup);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  if (typeof signal === "object") {
    // retry_join gave up (exit 1), or the agent left through the API (exit 0).
    if (signal.code !== 0) io.stderr(`==> ${signal.reason}\n`);
    try {
      await agent.stop();
    } catch (err) {
      io.stderr(`==> Error during shutdown: ${errorMessage(err)}\n`);
      return 1;
    }
    return signal.code;
  }
  io.stdout(`==> Caught signal: ${signal === "SIGINT" ? "interrupt" : "terminated"}\n`);
  // Consul: leave_on_terminate (default: clients yes, servers no), skip_leave_on_interrupt (default: servers yes).
  const leave = signal === "SIGTERM" ? config.leaveOnTerminate : !config.skipLeaveOnInterrupt;
  if (leave) {
    io.stdout("==> Gracefully leaving the cluster...\n");
    try {
      await agent.gossip.leave();
    } catch (err) {
      io.stderr(`==> Error leaving: ${errorMessage(err)}\n`);
    }
  }
  io.stdout("==> Gracefully shutting down agent...\n");
  try {
    await agent.stop();
  } catch (err) {
    io.stderr(`==> Error during shutdown: ${errorMessage(err)}\n`);
    return 1;
  }
  return 0;
}
