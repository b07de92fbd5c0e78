// Starting the pools: bind the transports, restore snapshots and the
// keyring, build the LAN pool (every agent) and the WAN pool (servers).

import { BlockList, isIP } from "node:net";
import { join as joinPath } from "node:path";
import type { AgentConfig } from "../config/types.ts";
import { ConfigError, errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { lanProfile, wanProfile } from "../gossip/profiles.ts";
import { createNodeTransport } from "../gossip/transport_node.ts";
import type { NodeTransport } from "../gossip/transport_node.ts";
import { joinHostPort } from "../gossip/wire/addr.ts";
import { Keyring } from "../gossip/wire/crypto.ts";
import { Rng } from "../sim/rng.ts";
import { loadKeyring } from "./keyring_node.ts";
import { readSerfSnapshot } from "./serf_snapshot_node.ts";
import { randomSeed } from "../random_node.ts";
import type { AgentGossip, GossipDeps, PoolName } from "./types.ts";
import { consulTags, devProfile, pickAdvertiseAddr, transportLogger } from "./tags.ts";
import { SerfPool } from "./pool.ts";
import { agentKeyring } from "./keyring.ts";

// ---------------------------------------------------------------------------
// Start

async function bindTransport(options: {
  bindAddr: string;
  port: number;
  advertiseAddr: string;
  keyring: Keyring | undefined;
  logger: Logger;
  fallbackToAnyPort: boolean;
  pool: PoolName;
  verifyIncoming: boolean;
  verifyOutgoing: boolean;
  allowIp: ((ip: string) => boolean) | undefined;
}): Promise<NodeTransport> {
  const make = (port: number) =>
    createNodeTransport({
      bindAddr: options.bindAddr,
      bindPort: port,
      advertiseAddr: options.advertiseAddr,
      logger: transportLogger(options.logger.named("memberlist")),
      keyring: options.keyring,
      verifyIncoming: options.verifyIncoming,
      verifyOutgoing: options.verifyOutgoing,
      allowIp: options.allowIp,
      // The driver decodes every datagram anyway and reports garbage back: decode once.
      dropUndecodablePackets: false,
    });
  try {
    return await make(options.port);
  } catch (err) {
    if (!options.fallbackToAnyPort || options.port === 0) {
      throw new Error(`Failed to start ${options.pool.toUpperCase()} Serf: cannot bind ${joinHostPort(options.bindAddr, options.port)}: ${errorMessage(err)}`);
    }
    // -dev on a busy port (several dev agents on one host, as in tests): take any free port.
    options.logger.warn(`${options.pool.toUpperCase()} gossip port ${options.port} is busy; -dev uses a free port instead`, { error: errorMessage(err) });
    return await make(0);
  }
}

/**
 * memberlist's CIDRsAllowed as a predicate over the sender's IP; undefined
 * (everyone) for an empty list. Throws on a malformed CIDR.
 */
export function allowedCidrs(cidrs: readonly string[]): ((ip: string) => boolean) | undefined {
  if (cidrs.length === 0) return undefined;
  const list = new BlockList();
  for (const cidr of cidrs) {
    // As Go's net.ParseCIDR: the prefix length is required.
    const slash = cidr.lastIndexOf("/");
    const addr = cidr.slice(0, Math.max(0, slash));
    const family = isIP(addr);
    const prefixText = cidr.slice(slash + 1);
    const prefix = Number(prefixText);
    if (slash < 0 || family === 0 || !/^\d+$/.test(prefixText) || prefix > (family === 6 ? 128 : 32)) {
      throw new ConfigError(`Invalid CIDR range "${cidr}": expected an address and prefix such as 10.0.0.0/8`);
    }
    list.addSubnet(addr, prefix, family === 6 ? "ipv6" : "ipv4");
  }
  return (ip) => {
    const plain = ip.startsWith("::ffff:") && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
    const family = isIP(plain);
    return family !== 0 && list.check(plain, family === 6 ? "ipv6" : "ipv4");
  };
}

/**
 * Start the agent's gossip pools from config: LAN on bindAddr:ports.serfLan,
 * WAN on ports.serfWan for servers; Consul's tags; keyring from `encrypt` or
 * `<dataDir>/serf/local.keyring`; rejoin from `<dataDir>/serf/local.snapshot`.
 * Does NOT run start_join/retry_join (see `runStartJoins`/`retryJoin`).
 * Throws with a clear message if a port cannot be bound.
 */
export async function startGossip(config: AgentConfig, deps: GossipDeps): Promise<AgentGossip> {
  const logger = deps.logger;
  const persist = !config.dev && config.dataDir !== "";
  const serfDir = persist ? joinPath(config.dataDir, "serf") : "";
  const rng = new Rng(randomSeed());
  const advertise = config.advertiseAddr || pickAdvertiseAddr(config.bindAddr);
  const pools: SerfPool[] = [];

  const startPool = async (name: PoolName): Promise<SerfPool> => {
    const log = logger.named(name === "lan" ? "serf.lan" : "serf.wan");
    // disable_keyring_file: the keyring lives in memory only; `encrypt` supplies it on every start.
    const keyringFile = persist && !config.disableKeyringFile ? joinPath(serfDir, name === "lan" ? "local.keyring" : "remote.keyring") : undefined;
    const snapshotFile = persist ? joinPath(serfDir, name === "lan" ? "local.snapshot" : "remote.snapshot") : undefined;
    const keyring = loadKeyring({ file: keyringFile, encrypt: config.encrypt, logger: log, pool: name.toUpperCase() });
    const transport = await bindTransport({
      // serf_lan / serf_wan override bind_addr for their pool (the advertised address still follows bind_addr, as in Consul).
      bindAddr: (name === "lan" ? config.serfLanBindAddr : config.serfWanBindAddr) || config.bindAddr,
      port: name === "lan" ? config.ports.serfLan : config.ports.serfWan,
      advertiseAddr: name === "lan" ? advertise : config.advertiseAddrWan || advertise,
      keyring,
      logger: log,
      fallbackToAnyPort: config.dev,
      pool: name,
      // encrypt_verify_incoming / _outgoing: relaxed while gossip encryption is rolled onto a live pool.
      verifyIncoming: config.encryptVerifyIncoming,
      verifyOutgoing: config.encryptVerifyOutgoing,
      // serf_lan_allowed_cidrs / serf_wan_allowed_cidrs: gossip from other networks is dropped.
      allowIp: allowedCidrs(name === "lan" ? config.serfLanAllowedCidrs : config.serfWanAllowedCidrs),
    });
    const snap = snapshotFile ? readSerfSnapshot(snapshotFile, log) : undefined;
    const base = name === "lan" ? { ...lanProfile, deadNodeReclaimMs: 30_000 } : wanProfile;
    const pool = new SerfPool({
      name,
      nodeName: name === "lan" ? config.nodeName : `${config.nodeName}.${config.datacenter}`,
      datacenter: config.datacenter,
      profile: config.dev ? devProfile(base) : base,
      reconnectTimeoutMs: name === "lan" ? config.reconnectTimeoutMs : config.reconnectTimeoutWanMs,
      disableCoordinates: config.disableCoordinates,
      transport,
      keyring,
      keyringFile,
      snapshotFile,
      tags: { ...consulTags(config, { nodeId: deps.nodeId, pool: name }), ...deps.tags },
      nodeId: deps.nodeId,
      clock: deps.clock,
      logger: log,
      rng: rng.fork(),
      restoreClocks: snap ? { lTime: snap.clock, eventLTime: snap.eventClock, queryLTime: snap.queryClock } : undefined,
    });
    pool.start();
    if (snap) pool.restore(snap, config.rejoinAfterLeave);
    return pool;
  };

  try {
    pools.push(await startPool("lan"));
    if (config.server) pools.push(await startPool("wan"));
  } catch (err) {
    for (const p of pools) await p.stop();
    throw err;
  }
  const lan = pools[0]!;
  const wan = pools[1];
  return {
    lan,
    wan,
    keyring: agentKeyring(() => pools),
    async leave() {
      if (wan) await wan.leave();
      await lan.leave();
    },
    async stop() {
      for (const p of pools) await p.stop();
    },
  };
}
