// The async step between a question and its answer: plan (pure), look the
// data up through the DnsBackend (and the hostnames SRV targets name, through
// ourselves or the recursors), build and fit (pure). Lookup failures become
// SERVFAIL; nothing here throws on a client's question.
import type { AgentConfig } from "../config/types.ts";
import type { Logger } from "../log/mod.ts";
import { nullLogger } from "../log/mod.ts";
import type { CheckServiceNode, Node } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import {
  buildAnswer,
  fitAnswer,
  hostsToResolve,
  planQuestion,
  rcodeAnswer,
  type DnsAnswer,
  type DnsAnswerConfig,
  type DnsData,
  type DnsPlan,
  type DnsQuestion,
  type DnsRecord,
} from "./answer.ts";

/** The lookups DNS needs; production implements it over the Rpc (`createRpcBackend`). */
export interface DnsBackend {
  /** The node, or null when it is not registered; `index` is the catalog index of the read (0: unknown). */
  node(args: { node: string; datacenter: string }): Promise<{ node: Node | null; index: number }>;
  /** Every instance of the service (with the tag, when not ""), checks included, unfiltered; null for an unknown datacenter. */
  serviceInstances(args: { service: string; tag: string; datacenter: string }): Promise<{ instances: CheckServiceNode[] | null; index: number }>;
  /** Execute a prepared query by ID or name; `result` is null for an unknown query or datacenter. */
  preparedQuery(args: { query: string; datacenter: string }): Promise<{ result: { service: string; nodes: CheckServiceNode[]; ttl: string } | null }>;
  /** Nodes, and failing those services, registered with this address. */
  reverse(args: { address: string }): Promise<{ nodes: Node[]; services: Array<{ service: string; datacenter: string }> }>;
}

export interface DnsResolveOptions {
  transport: "udp" | "tcp";
  /** The client's EDNS0 UDP size, when it sent an OPT record. */
  ednsSize?: number;
}

/** A question with its looked-up data, ready to be answered. */
export interface DnsLookedUp {
  question: DnsQuestion;
  plan: DnsPlan;
  data: DnsData;
  /** The lookup failed: the answer is SERVFAIL. */
  failed: boolean;
}

export interface DnsResolver {
  readonly config: DnsAnswerConfig;
  /** Step 1: plan and look up (the only async part). */
  lookup(question: DnsQuestion): Promise<DnsLookedUp>;
  /** Step 2: build the records and fit them to the transport (pure, uses the Rng). */
  answer(looked: DnsLookedUp, options: DnsResolveOptions): DnsAnswer;
  /** Both steps. */
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
    enableAdditionalNodeMetaTxt: d.enableAdditionalNodeMetaTxt,
    translateWanAddrs: config.translateWanAddrs,
  };
}

export function createDnsResolver(options: {
  backend: DnsBackend;
  config: DnsAnswerConfig;
  rng: Rng;
  /** Wall clock, ms since the epoch (the SOA serial). */
  wallNow: () => number;
  logger?: Logger;
  /**
   * A records for a name outside our domains, from the recursors (Consul
   * resolveCNAME asks them for A); [] when none answered. Absent: such
   * hostnames are left to the client.
   */
  recurse?: (name: string) => Promise<DnsRecord[]>;
}): DnsResolver {
  const { backend, config, rng, wallNow } = options;
  const logger = options.logger ?? nullLogger();

  /**
   * Records for hostnames an SRV answer points at: an ANY question to
   * ourselves for names in our domains (which resolves no hostnames in turn,
   * so names that point at each other cannot loop), else the recursors.
   */
  async function resolveHosts(names: string[]): Promise<Map<string, DnsRecord[]>> {
    const out = new Map<string, DnsRecord[]>();
    await Promise.all(names.map(async (name) => {
      try {
        const kind = planQuestion({ name, type: "ANY" }, config).parsed.kind;
        if (kind !== "outside" && kind !== "ptr") {
          const inner = await lookup({ name, type: "ANY" });
          if (!inner.failed) out.set(name, answer(inner, { transport: "tcp" }).answers);
        } else if (options.recurse) {
          out.set(name, await options.recurse(name));
        }
      } catch (err) {
        out.set(name, []); // tried: the answer depends on more than the catalog
        logger.debug("hostname not resolved", { name, error: String(err) });
      }
    }));
    return out;
  }

  async function lookup(question: DnsQuestion): Promise<DnsLookedUp> {
    const plan = planQuestion(question, config);
    const data: DnsData = {};
    try {
      const l = plan.lookup;
      if (l?.kind === "node") {
        const r = await backend.node(l);
        data.node = r.node;
        data.index = r.index;
      } else if (l?.kind === "service") {
        const r = await backend.serviceInstances(l);
        data.instances = r.instances;
        data.index = r.index;
      } else if (l?.kind === "query") {
        data.query = (await backend.preparedQuery(l)).result;
      } else if (l?.kind === "reverse") data.reverse = await backend.reverse(l);
      const hosts = hostsToResolve(question, plan, data, config);
      if (hosts.length > 0) data.hosts = await resolveHosts(hosts);
    } catch (err) {
      logger.warn("lookup failed", { name: question.name, type: question.type, error: String(err) });
      return { question, plan, data, failed: true };
    }
    return { question, plan, data, failed: false };
  }

  function answer(looked: DnsLookedUp, resolveOptions: DnsResolveOptions): DnsAnswer {
    if (looked.failed) return rcodeAnswer("SERVFAIL", true);
    const built = buildAnswer(looked.question, looked.plan, looked.data, { config, rng, nowMs: wallNow() });
    return fitAnswer(looked.question, built, { ...resolveOptions, config });
  }

  return {
    config,
    lookup,
    answer,
    async resolve(question, resolveOptions) {
      return answer(await lookup(question), resolveOptions);
    },
  };
}
