// Agent wiring: the DNS server for an agent's configuration, over its Rpc.
import type { Clock } from "../clock/mod.ts";
import type { AgentConfig } from "../config/types.ts";
import type { Logger } from "../log/mod.ts";
import type { Rpc } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import { createRpcBackend } from "./backend_rpc.ts";
import { createDnsResolver, dnsAnswerConfig } from "./driver.ts";
import { createDnsServer, createRecursorLookup, type DnsServer } from "./serve_node.ts";

export interface StartedDns {
  server: DnsServer;
  addr: { host: string; port: number };
}

/**
 * Start DNS on `addresses.dns || clientAddr` : `ports.dns`; undefined when
 * the port is -1. Throws DnsListenError (naming the port) when it cannot bind.
 */
export async function startDnsServer(options: {
  config: AgentConfig;
  rpc: Rpc;
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Lookup results are reused this long (ms); 0 asks the catalog every time. */
  cacheMs?: number;
  /** The token of DNS reads (ACLs). */
  token?: () => string;
}): Promise<StartedDns | undefined> {
  const { config, clock } = options;
  if (config.ports.dns < 0) return undefined;
  const backend = createRpcBackend({
    rpc: options.rpc,
    datacenter: config.datacenter,
    allowStale: config.dnsConfig.allowStale,
    maxStaleMs: config.dnsConfig.maxStaleMs,
    selfServer: config.server
      ? { node: config.nodeName, address: config.advertiseAddr || config.bindAddr, port: config.ports.server }
      : undefined,
    nodeName: config.nodeName,
    cacheMs: options.cacheMs ?? 0,
    now: () => clock.now(),
    token: options.token,
  });
  const resolver = createDnsResolver({
    backend,
    config: dnsAnswerConfig(config),
    rng: options.rng,
    wallNow: () => clock.wallNow(),
    logger: options.logger,
    recurse: config.recursors.length > 0
      ? createRecursorLookup({ recursors: config.recursors, timeoutMs: config.dnsConfig.recursorTimeoutMs, strategy: config.dnsConfig.recursorStrategy, logger: options.logger })
      : undefined,
  });
  const server = createDnsServer({
    resolver,
    logger: options.logger,
    recursors: config.recursors,
    recursorTimeoutMs: config.dnsConfig.recursorTimeoutMs,
    recursorStrategy: config.dnsConfig.recursorStrategy,
    disableCompression: config.dnsConfig.disableCompression,
  });
  const addr = await server.listen({ host: config.addresses.dns || config.clientAddr, port: config.ports.dns });
  options.logger.info("DNS server listening", { addr: `${addr.host}:${addr.port}`, domain: config.domain });
  return { server, addr };
}
