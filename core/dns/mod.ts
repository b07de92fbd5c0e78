// DNS interface: Consul's names over the catalog (answer.ts is pure; the
// driver looks data up; serve_node.ts is the UDP/TCP server).
export {
  buildAnswer,
  fitAnswer,
  healthyInstances,
  hostsToResolve,
  isValidName,
  maxTcpMessageSize,
  maxUdpSizeWithoutEdns,
  messageSize,
  planQuestion,
  rcodeAnswer,
  recordSize,
  serversServiceName,
  serviceTtlMs,
  soaRecord,
} from "./answer.ts";
export type {
  AnswerContext,
  DnsAnswer,
  DnsAnswerConfig,
  DnsData,
  DnsLookup,
  DnsPlan,
  DnsQuestion,
  DnsRcode,
  DnsRecord,
  FitOptions,
} from "./answer.ts";
export { createRpcBackend } from "./backend_rpc.ts";
export type { RpcBackendOptions } from "./backend_rpc.ts";
export { createDnsResolver, dnsAnswerConfig } from "./driver.ts";
export type { DnsBackend, DnsLookedUp, DnsResolveOptions, DnsResolver } from "./driver.ts";
export { addressToHex, addressToReverse, canonicalName, hexToAddress, normalizeAddress, parseName } from "./names.ts";
export type { ParsedName } from "./names.ts";
export { createDnsServer, createRecursorLookup, DnsListenError, parseRecursor } from "./serve_node.ts";
export type { DnsCounters, DnsServer, DnsServerOptions } from "./serve_node.ts";
export { startDnsServer } from "./start_node.ts";
export type { StartedDns } from "./start_node.ts";
