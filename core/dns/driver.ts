// The async step between a question and its answer: plan (pure), look the
// data up through the DnsBackend, build and fit (pure). Lookup failures
// become SERVFAIL; nothing here throws on a client's question.
import type { AgentConfig } from "../config/types.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { CheckServiceNode, Node } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import {
  buildAnswer,
  fitAnswer,
  planQuestion,
  rcodeAnswer,
  type DnsAnswer,
  type DnsAnswerConfig,
  type DnsData,
  type DnsQuestion,
} from "./answer.ts";

/** The lookups DNS needs; production implements it over the Rpc (`createRpcBackend`). */
export interface DnsBackend {
  /** The node, or null when it is not registered. */
  node(args: { node: string; datacenter: string }): Promise<Node | null>;
  /** Every instance of the service (with the tag, when not ""), checks included, unfiltered; null for an unknown datacenter. */
  serviceInstances(args: { service: string; tag: string; datacenter: string }): Promise<CheckServiceNode[] | null>;
  /** Nodes, and failing those services, registered with this address. */
  reverse(args: { address: string }): Promise<{ nodes: Node[]; services: Array<{ service: string; datacenter: string }> }>;
}

export interface DnsResolveOptions {
  transport: "udp" | "tcp";
  /** The client's EDNS0 UDP size, when it sent an OPT record. */
  ednsSize?: number;
}

export interface DnsResolver {
  readonly config: DnsAnswerConfig;
  /** Answer one question, already fitted to the transport. */
  resolve(question: DnsQuestion, options: DnsResolveOptions): Promise<DnsAnswer>;
}

/** The dns_config view of an agent's configuration. */
export function dnsAnswerConfig(config: AgentConfig): DnsAnswerConfig {
  const d = config.dnsConfig;
  return {
    domain: config.domain.toLowerCase(),
    altDomain: config.altDomain.toLowerCase(),
    datacenter: config.datacenter.toLowerCase(),
    nodeTtlMs: d.nodeTtlMs,
    serviceTtlMs: d.serviceTtlMs,
    onlyPassing: d.onlyPassing,
    enableTruncate: d.enableTruncate,
    udpAnswerLimit: d.udpAnswerLimit,
    aRecordLimit: d.aRecordLimit,
    soa: d.soa,
    hasRecursors: config.recursors.length > 0,
  };
}

export function createDnsResolver(options: {
  backend: DnsBackend;
  config: DnsAnswerConfig;
  rng: Rng;
  /** Wall clock, ms since the epoch (the SOA serial). */
  wallNow: () => number;
  logger?: Logger;
}): DnsResolver {
  const { backend, config, rng, wallNow } = options;
  const logger = options.logger ?? nullLogger();
  return {
    config,
    async resolve(question, resolveOptions) {
      const plan = planQuestion(question, config);
      const data: DnsData = {};
      try {
        const l = plan.lookup;
        if (l?.kind === "node") data.node = await backend.node(l);
        else if (l?.kind === "service") data.instances = await backend.serviceInstances(l);
        else if (l?.kind === "reverse") data.reverse = await backend.reverse(l);
      } catch (err) {
        logger.warn("lookup failed", { name: question.name, type: question.type, error: String(err) });
        return rcodeAnswer("SERVFAIL", true);
      }
      const answer = buildAnswer(question, plan, data, { config, rng, nowMs: wallNow() });
      return fitAnswer(question, answer, { ...resolveOptions, config });
    },
  };
}
