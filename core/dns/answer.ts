// Question → answer for Consul's DNS names (agent/dns.go). Pure: the data a
// question needs is looked up first (`planQuestion` says what), then
// `buildAnswer` makes the records and `fitAnswer` trims them to the
// transport's size. Randomness comes from the injected Rng, time as input.
import type { CheckServiceNode, Node } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import type { SoaConfig } from "../config/types.ts";
import { parseDuration } from "../config/duration.ts";
import { addressToHex, canonicalName, normalizeAddress, parseIpv4, parseName, type ParsedName } from "./names.ts";

export type DnsRcode = "NOERROR" | "FORMERR" | "SERVFAIL" | "NXDOMAIN" | "NOTIMP" | "REFUSED";

interface RecordBase {
  name: string;
  ttl: number;
  class: "IN";
}

/** Records in dns-packet's shapes, so the server encodes them as they are. */
export type DnsRecord =
  | (RecordBase & { type: "A" | "AAAA" | "CNAME" | "NS" | "PTR"; data: string })
  | (RecordBase & { type: "SRV"; data: { priority: number; weight: number; port: number; target: string } })
  | (RecordBase & { type: "TXT"; data: string[] })
  | (RecordBase & {
    type: "SOA";
    data: { mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number };
  });

export interface DnsQuestion {
  name: string;
  /** Record type name as dns-packet gives it ("A", "SRV", "UNKNOWN_65280", …). */
  type: string;
}

export interface DnsAnswer {
  rcode: DnsRcode;
  /** AA: the name is in one of our domains. */
  authoritative: boolean;
  /** TC: records were trimmed to fit and the client should retry over TCP. */
  truncated: boolean;
  answers: DnsRecord[];
  authorities: DnsRecord[];
  additionals: DnsRecord[];
  /**
   * SRV answers: how many of `additionals`, in order, belong to each answer
   * (same length as `answers`). The additional section then holds one group
   * per SRV record, duplicates included, and `fitAnswer` keeps exactly the
   * groups of the answers it keeps. Absent: additionals are matched by name.
   */
  additionalsPerAnswer?: number[];
  /** The name is outside our domains and recursors are configured: forward the query. */
  forward: boolean;
  /**
   * Catalog index the answer was built from (> 0): the same question at the
   * same index has the same records, so the server may reuse the encoding.
   */
  index?: number;
}

/** The dns_config subset answers depend on (AgentConfig → `dnsAnswerConfig`). */
export interface DnsAnswerConfig {
  /** Canonical, with trailing dot: "consul.". */
  domain: string;
  /** "" when none. */
  altDomain: string;
  datacenter: string;
  nodeTtlMs: number;
  /** Service name, `prefix*` or `*` → TTL; exact beats the longest prefix. */
  serviceTtlMs: Record<string, number>;
  onlyPassing: boolean;
  enableTruncate: boolean;
  udpAnswerLimit: number;
  aRecordLimit: number;
  soa: SoaConfig;
  hasRecursors: boolean;
  /** Node meta TXT records in the additional section (Consul enable_additional_node_meta_txt); absent: true. */
  enableAdditionalNodeMetaTxt?: boolean;
  /** Consul translate_wan_addrs: answers for another datacenter use the `wan` tagged addresses. */
  translateWanAddrs?: boolean;
}

/** What to look up before answering. */
export type DnsLookup =
  | { kind: "node"; node: string; datacenter: string }
  | { kind: "service"; service: string; tag: string; datacenter: string }
  | { kind: "query"; query: string; datacenter: string }
  | { kind: "reverse"; address: string };

export interface DnsPlan {
  parsed: ParsedName;
  lookup?: DnsLookup;
}

/** Results of the plan's lookup (only the one the plan asked for is read). */
export interface DnsData {
  /** null: no such node. */
  node?: Node | null;
  /** Every instance, unfiltered (health filtering happens here); null: unknown datacenter. */
  instances?: CheckServiceNode[] | null;
  /**
   * A prepared query's execution: its instances already filtered and ordered
   * by the server, the queried service and the query's DNS TTL ("" for none);
   * null: no such query (or an unknown datacenter).
   */
  query?: { service: string; nodes: CheckServiceNode[]; ttl: string } | null;
  /** Nodes and services whose address is the reverse-looked-up one. */
  reverse?: { nodes: Node[]; services: Array<{ service: string; datacenter: string }> };
  /** Index of the node or instances read (0: unknown). */
  index?: number;
  /**
   * Records that resolve the hostnames `hostsToResolve` named (lower-case,
   * with the trailing dot → CNAME/A/AAAA records): answered in our domains,
   * or by the recursors (Consul resolveCNAME). A name missing: unresolved.
   */
  hosts?: Map<string, DnsRecord[]>;
}

export interface AnswerContext {
  config: DnsAnswerConfig;
  rng: Rng;
  /** Wall clock in ms (the SOA serial is its seconds). */
  nowMs: number;
}

/** Name of the service that lists the servers (`consul.service.consul`). */
export const serversServiceName = "consul";

export function planQuestion(question: DnsQuestion, config: DnsAnswerConfig): DnsPlan {
  const parsed = parseName(question.name, {
    domains: config.altDomain ? [config.domain, config.altDomain] : [config.domain],
    datacenter: config.datacenter,
  });
  switch (parsed.kind) {
    case "node":
      return { parsed, lookup: { kind: "node", node: parsed.node, datacenter: parsed.datacenter } };
    case "service":
      return { parsed, lookup: { kind: "service", service: parsed.service, tag: parsed.tag, datacenter: parsed.datacenter } };
    case "query":
      return { parsed, lookup: { kind: "query", query: parsed.query, datacenter: parsed.datacenter } };
    case "apex": {
      const t = question.type;
      if (t === "SOA" || t === "NS" || t === "ANY") {
        return { parsed, lookup: { kind: "service", service: serversServiceName, tag: "", datacenter: config.datacenter } };
      }
      return { parsed };
    }
    case "ptr":
      return { parsed, lookup: { kind: "reverse", address: parsed.address } };
    default:
      return { parsed };
  }
}

function empty(rcode: DnsRcode, authoritative: boolean): DnsAnswer {
  return { rcode, authoritative, truncated: false, answers: [], authorities: [], additionals: [], forward: false };
}

/** An answer with only an rcode (SERVFAIL on a failed lookup, FORMERR, …). */
export function rcodeAnswer(rcode: DnsRcode, authoritative = false): DnsAnswer {
  return empty(rcode, authoritative);
}

/** Build the full (untrimmed) answer from the plan and the looked-up data. */
export function buildAnswer(question: DnsQuestion, plan: DnsPlan, data: DnsData, ctx: AnswerContext): DnsAnswer {
  const answer = buildRecords(question, plan, data, ctx);
  // Not for queries: their order comes from the server's shuffle or RTT sort
  // on every execution; nor when hostnames were resolved (not in the index).
  const reusable = plan.lookup?.kind === "node" || plan.lookup?.kind === "service";
  if (data.index && data.index > 0 && reusable && !(data.hosts && data.hosts.size > 0)) answer.index = data.index;
  return answer;
}

/** Most hostnames one answer resolves (each is a lookup, maybe at a recursor). */
export const maxHostsToResolve = 8;

/**
 * Hostnames an SRV answer will point at (instances whose service address,
 * or node address when they have none, is a name): the driver resolves them
 * so their records can go in the additional section, as Consul's
 * makeRecordFromFQDN does. Lower-case with the trailing dot; at most
 * `maxHostsToResolve`.
 */
export function hostsToResolve(question: DnsQuestion, plan: DnsPlan, data: DnsData, config: DnsAnswerConfig): string[] {
  if (question.type !== "SRV") return [];
  const kind = plan.lookup?.kind;
  const instances = kind === "service"
    ? healthyInstances(data.instances ?? [], config.onlyPassing)
    : kind === "query"
    ? data.query?.nodes ?? []
    : [];
  const out = new Set<string>();
  for (const inst of instances) {
    const host = hostTarget(inst, question.name);
    if (host !== undefined) out.add(host);
    if (out.size >= maxHostsToResolve) break;
  }
  return [...out];
}

/** The hostname an instance's SRV record points at, when it points at one (see srvTarget). */
function hostTarget(inst: CheckServiceNode, question: string): string | undefined {
  const svcAddr = inst.service.address;
  if (svcAddr && normalizeAddress(svcAddr) !== undefined) return undefined;
  const nodeIp = normalizeAddress(inst.node.address);
  const useNode = !svcAddr || (nodeIp !== undefined && canonicalName(svcAddr) === canonicalName(question));
  if (useNode && nodeIp !== undefined) return undefined;
  const host = svcAddr || inst.node.address;
  return host && isValidName(host) ? canonicalName(host) : undefined;
}

function buildRecords(question: DnsQuestion, plan: DnsPlan, data: DnsData, ctx: AnswerContext): DnsAnswer {
  const { parsed } = plan;
  const cfg = ctx.config;
  const qtype = question.type;
  switch (parsed.kind) {
    case "outside": {
      const a = empty(cfg.hasRecursors ? "NOERROR" : "REFUSED", false);
      a.forward = cfg.hasRecursors;
      return a;
    }
    case "nxdomain":
      return withSoa(empty("NXDOMAIN", true), parsed.domain, ctx);
    case "apex":
      return apexAnswer(question, parsed.domain, data.instances ?? [], ctx);
    case "node":
      return nodeAnswer(question, parsed, data.node ?? null, ctx);
    case "service":
      return serviceAnswer(question, parsed, data.instances ?? null, ctx, data.hosts);
    case "query":
      return queryAnswer(question, parsed, data.query ?? null, ctx, data.hosts);
    case "addr": {
      const a = empty("NOERROR", true);
      const wanted = parsed.family === 4 ? "A" : "AAAA";
      if (qtype === wanted || qtype === "ANY") {
        a.answers.push({ name: question.name, type: wanted, class: "IN", ttl: seconds(cfg.nodeTtlMs), data: parsed.address });
      }
      return a.answers.length > 0 ? a : withSoa(a, parsed.domain, ctx);
    }
    case "ptr": {
      const found = data.reverse ?? { nodes: [], services: [] };
      const a = empty("NOERROR", false);
      if (qtype === "PTR" || qtype === "ANY") {
        const seen = new Set<string>();
        const add = (target: string) => {
          if (seen.has(target) || !isValidName(target)) return;
          seen.add(target);
          a.answers.push({ name: question.name, type: "PTR", class: "IN", ttl: seconds(cfg.nodeTtlMs), data: target });
        };
        for (const n of found.nodes) add(nodeTarget(n.node, n.datacenter || cfg.datacenter, cfg.domain));
        if (a.answers.length === 0) {
          for (const s of found.services) add(`${s.service.toLowerCase()}.service.${cfg.domain}`);
        }
      }
      if (a.answers.length > 0) {
        a.authoritative = true;
        return a;
      }
      if (cfg.hasRecursors) {
        a.forward = true;
        return a;
      }
      a.rcode = "NXDOMAIN";
      return a;
    }
  }
}

/** A TTL in whole seconds, within the 31 bits RFC 2181 allows. */
function seconds(ms: number): number {
  const s = Math.floor(ms / 1000);
  return Number.isFinite(s) ? Math.min(Math.max(0, s), 0x7fffffff) : 0;
}

export function soaRecord(domain: string, ctx: AnswerContext): DnsRecord {
  const soa = ctx.config.soa;
  return {
    name: domain,
    type: "SOA",
    class: "IN",
    ttl: soa.min,
    data: {
      mname: `ns.${domain}`,
      rname: `hostmaster.${domain}`,
      serial: Math.floor(ctx.nowMs / 1000) >>> 0,
      refresh: soa.refresh,
      retry: soa.retry,
      expire: soa.expire,
      minimum: soa.min,
    },
  };
}

function withSoa(a: DnsAnswer, domain: string, ctx: AnswerContext): DnsAnswer {
  a.authorities.push(soaRecord(domain, ctx));
  return a;
}

function nodeTarget(node: string, datacenter: string, domain: string): string {
  return `${node.toLowerCase()}.node.${datacenter.toLowerCase()}.${domain}`;
}

/** Labels of 1–63 bytes, at most 253 in all; what dns-packet can encode without corruption. */
export function isValidName(name: string): boolean {
  const n = name.endsWith(".") ? name.slice(0, -1) : name;
  if (n.length === 0) return true;
  if (utf8Length(n) > 253) return false;
  for (const label of n.split(".")) {
    const len = utf8Length(label);
    if (len === 0 || len > 63) return false;
  }
  return true;
}

/** A, AAAA or CNAME records for an address, as the question type allows. */
function addressRecords(address: string, qtype: string, name: string, ttl: number): DnsRecord[] {
  const ip = normalizeAddress(address);
  if (ip !== undefined) {
    const type = parseIpv4(ip) ? "A" : "AAAA";
    if (qtype === type || qtype === "ANY") return [{ name, type, class: "IN", ttl, data: ip }];
    return [];
  }
  if (!address || !isValidName(address)) return [];
  if (qtype === "A" || qtype === "AAAA" || qtype === "ANY" || qtype === "CNAME") {
    return [{ name, type: "CNAME", class: "IN", ttl, data: canonicalName(address) }];
  }
  return [];
}

/** Node meta as TXT records: `key=value`, or just the value for `rfc1035-` keys (Consul generateMeta). */
function metaRecords(meta: Record<string, string>, name: string, ttl: number): DnsRecord[] {
  const out: DnsRecord[] = [];
  for (const key of Object.keys(meta).sort()) {
    const text = key.startsWith("rfc1035-") ? meta[key]! : `${key}=${meta[key]!}`;
    out.push({ name, type: "TXT", class: "IN", ttl, data: txtChunks(text) });
  }
  return out;
}

/** Split text into character-strings of at most 255 bytes. */
function txtChunks(text: string): string[] {
  if (text.length <= 85 || utf8Length(text) <= 255) return [text];
  const out: string[] = [];
  let cur = "", curLen = 0;
  for (const ch of text) {
    const l = utf8Length(ch);
    if (curLen + l > 255) {
      out.push(cur);
      cur = "";
      curLen = 0;
    }
    cur += ch;
    curLen += l;
  }
  out.push(cur);
  return out;
}

function nodeAnswer(question: DnsQuestion, parsed: { domain: string; datacenter: string }, node: Node | null, ctx: AnswerContext): DnsAnswer {
  if (!node) return withSoa(empty("NXDOMAIN", true), parsed.domain, ctx);
  const ttl = seconds(ctx.config.nodeTtlMs);
  const a = empty("NOERROR", true);
  a.answers.push(...addressRecords(translatedNodeAddress(node, node.datacenter || parsed.datacenter, ctx.config), question.type, question.name, ttl));
  const meta = metaRecords(node.meta ?? {}, question.name, ttl);
  if (question.type === "TXT" || question.type === "ANY") a.answers.push(...meta);
  else if (a.answers.length > 0 && ctx.config.enableAdditionalNodeMetaTxt !== false) a.additionals.push(...meta);
  return a.answers.length > 0 ? a : withSoa(a, parsed.domain, ctx);
}

/** Consul CheckServiceNodes.Filter: any critical check drops an instance; only_passing also drops warning. */
export function healthyInstances(instances: readonly CheckServiceNode[], onlyPassing: boolean): CheckServiceNode[] {
  return instances.filter((inst) =>
    (inst.checks ?? []).every((c) => c.status !== "critical" && (!onlyPassing || c.status !== "warning"))
  );
}

/** dns_config.service_ttl: exact name, else the longest matching `prefix*` (`*` matches all), else 0. */
export function serviceTtlMs(service: string, table: Record<string, number>): number {
  const exact = table[service];
  if (exact !== undefined) return exact;
  let best = -1, ttl = 0;
  for (const [pattern, ms] of Object.entries(table)) {
    if (!pattern.endsWith("*")) continue;
    const prefix = pattern.slice(0, -1);
    if (service.startsWith(prefix) && prefix.length > best) {
      best = prefix.length;
      ttl = ms;
    }
  }
  return ttl;
}

function serviceAnswer(
  question: DnsQuestion,
  parsed: { domain: string; service: string; datacenter: string },
  instances: CheckServiceNode[] | null,
  ctx: AnswerContext,
  hosts?: Map<string, DnsRecord[]>,
): DnsAnswer {
  const cfg = ctx.config;
  const healthy = instances ? healthyInstances(instances, cfg.onlyPassing) : [];
  if (healthy.length === 0) return withSoa(empty("NXDOMAIN", true), parsed.domain, ctx);
  ctx.rng.shuffle(healthy);
  const ttl = seconds(serviceTtlMs(parsed.service, cfg.serviceTtlMs));
  return instanceRecords(question, parsed, healthy, ttl, ctx, hosts);
}

/**
 * `<query>.query.<domain>` (Consul preparedQueryLookup): the server filtered
 * and ordered the instances (shuffled or by RTT), so they are used as they
 * come. TTL: the query's DNS.TTL, else the service_ttl for its service.
 */
function queryAnswer(
  question: DnsQuestion,
  parsed: { domain: string; datacenter: string },
  result: { service: string; nodes: CheckServiceNode[]; ttl: string } | null,
  ctx: AnswerContext,
  hosts?: Map<string, DnsRecord[]>,
): DnsAnswer {
  if (!result || result.nodes.length === 0) return withSoa(empty("NXDOMAIN", true), parsed.domain, ctx);
  const queryTtlMs = result.ttl !== "" ? parseDuration(result.ttl) : undefined;
  const ttl = seconds(queryTtlMs ?? serviceTtlMs(result.service, ctx.config.serviceTtlMs));
  return instanceRecords(question, parsed, [...result.nodes], ttl, ctx, hosts);
}

/** A node's address as answered: its `wan` tagged address for another datacenter under translate_wan_addrs. */
function translatedNodeAddress(node: Node, datacenter: string, cfg: DnsAnswerConfig): string {
  if (!cfg.translateWanAddrs || datacenter.toLowerCase() === cfg.datacenter.toLowerCase()) return node.address;
  return node.taggedAddresses?.wan || node.address;
}

/**
 * An instance as answered (consul TranslateServiceAddress): for another
 * datacenter under translate_wan_addrs, the service's `wan` tagged address
 * replaces its address, and the node's `wan` address the node's.
 */
function translatedInstance(inst: CheckServiceNode, datacenter: string, cfg: DnsAnswerConfig): CheckServiceNode {
  const dc = inst.node.datacenter || datacenter;
  if (!cfg.translateWanAddrs || dc.toLowerCase() === cfg.datacenter.toLowerCase()) return inst;
  const nodeAddr = translatedNodeAddress(inst.node, dc, cfg);
  const svcWan = inst.service.taggedAddresses?.wan?.address;
  return {
    ...inst,
    node: nodeAddr === inst.node.address ? inst.node : { ...inst.node, address: nodeAddr },
    service: svcWan ? { ...inst.service, address: svcWan } : inst.service,
  };
}

/** SRV or address records for instances in the given order (service and query lookups). */
function instanceRecords(
  question: DnsQuestion,
  parsed: { domain: string; datacenter: string },
  instances: CheckServiceNode[],
  ttl: number,
  ctx: AnswerContext,
  hosts?: Map<string, DnsRecord[]>,
): DnsAnswer {
  const cfg = ctx.config;
  const healthy = cfg.translateWanAddrs ? instances.map((inst) => translatedInstance(inst, parsed.datacenter, cfg)) : instances;
  const a = empty("NOERROR", true);
  const qtype = question.type;
  if (qtype === "SRV") {
    // One SRV record per node, address and port (Consul
    // addServiceSRVRecordsToMessage), each followed in the additional section
    // by its own address records and the node's meta: no sharing between SRV
    // records with one target. HAProxy (and other resolvers) tie each
    // additional record to one SRV record, so instances on one host need one
    // A record each.
    const handled = new Set<string>();
    const perAnswer: number[] = [];
    for (const inst of healthy) {
      const tuple = `${inst.node.node}\u0000${inst.service.address}\u0000${inst.service.port}`;
      if (handled.has(tuple)) continue;
      handled.add(tuple);
      const dc = (inst.node.datacenter || parsed.datacenter).toLowerCase();
      const nodeName = nodeTarget(inst.node.node, dc, parsed.domain);
      const srv = srvTarget(inst, { question: question.name, nodeName, dc, domain: parsed.domain, ttl, hosts });
      if (!srv || !isValidName(srv.target)) continue;
      const warning = (inst.checks ?? []).some((c) => c.status === "warning");
      const w = inst.service.weights;
      const weight = w ? (warning ? w.warning : w.passing) : 1;
      a.answers.push({
        name: question.name,
        type: "SRV",
        class: "IN",
        ttl,
        data: { priority: 1, weight: clampU16(weight), port: clampU16(inst.service.port), target: srv.target },
      });
      const withMeta = cfg.enableAdditionalNodeMetaTxt !== false && isValidName(nodeName);
      const extras = [...srv.extras, ...(withMeta ? metaRecords(inst.node.meta ?? {}, nodeName, ttl) : [])];
      a.additionals.push(...extras);
      perAnswer.push(extras.length);
    }
    a.additionalsPerAnswer = perAnswer;
  } else if (qtype === "A" || qtype === "AAAA" || qtype === "ANY" || qtype === "CNAME") {
    const seen = new Set<string>();
    for (const inst of healthy) {
      const addr = inst.service.address || inst.node.address;
      if (seen.has(addr)) continue;
      seen.add(addr);
      a.answers.push(...addressRecords(addr, qtype, question.name, ttl));
      if (cfg.aRecordLimit > 0 && a.answers.length >= cfg.aRecordLimit) {
        a.answers.length = cfg.aRecordLimit;
        break;
      }
    }
  }
  return a.answers.length > 0 ? a : withSoa(a, parsed.domain, ctx);
}

/**
 * An instance's SRV target and the records that resolve it (Consul
 * makeNodeServiceRecords): a service address that is an IP → its
 * `<hex>.addr.<dc>.<domain>` name, even when it equals the node's address;
 * no service address → `<node>.node.<dc>.<domain>` for a node IP; a hostname
 * (service or node address) → the hostname itself, with the records that
 * resolved it (`DnsData.hosts`). A service address naming the question
 * itself falls back to the node. Every record carries the service TTL.
 */
function srvTarget(
  inst: CheckServiceNode,
  at: { question: string; nodeName: string; dc: string; domain: string; ttl: number; hosts?: Map<string, DnsRecord[]> },
): { target: string; extras: DnsRecord[] } | undefined {
  const svcAddr = inst.service.address;
  const svcIp = svcAddr ? normalizeAddress(svcAddr) : undefined;
  if (svcIp !== undefined) {
    const target = `${addressToHex(svcIp)}.addr.${at.dc}.${at.domain}`;
    return { target, extras: addressRecords(svcIp, "ANY", target, at.ttl) };
  }
  const host = hostTarget(inst, at.question);
  if (host !== undefined) {
    const resolved = (at.hosts?.get(host) ?? []).filter((r) => r.type === "A" || r.type === "AAAA" || r.type === "CNAME");
    return { target: host, extras: resolved.map((r) => ({ ...r, ttl: at.ttl })) };
  }
  const nodeIp = normalizeAddress(inst.node.address);
  if (nodeIp === undefined) return undefined;
  return { target: at.nodeName, extras: addressRecords(nodeIp, "ANY", at.nodeName, at.ttl) };
}

function clampU16(n: number): number {
  return Number.isInteger(n) && n >= 0 ? Math.min(n, 65535) : 0;
}

function apexAnswer(question: DnsQuestion, domain: string, servers: CheckServiceNode[], ctx: AnswerContext): DnsAnswer {
  const cfg = ctx.config;
  const a = empty("NOERROR", true);
  const ttl = seconds(cfg.nodeTtlMs);
  const ns: DnsRecord[] = [];
  const glue: DnsRecord[] = [];
  const seen = new Set<string>();
  for (const s of healthyInstances(servers, false)) {
    const target = nodeTarget(s.node.node, s.node.datacenter || cfg.datacenter, domain);
    if (seen.has(target) || !isValidName(target)) continue;
    seen.add(target);
    ns.push({ name: domain, type: "NS", class: "IN", ttl, data: target });
    glue.push(...addressRecords(s.node.address, "ANY", target, ttl));
    if (ns.length >= 3) break; // Consul lists at most three name servers
  }
  switch (question.type) {
    case "SOA":
      a.answers.push(soaRecord(domain, ctx));
      a.authorities.push(...ns);
      a.additionals.push(...glue);
      return a;
    case "NS":
      a.answers.push(...ns);
      a.additionals.push(...glue);
      return a.answers.length > 0 ? a : withSoa(a, domain, ctx);
    case "ANY":
      a.answers.push(soaRecord(domain, ctx), ...ns);
      a.additionals.push(...glue);
      return a;
    default:
      return withSoa(a, domain, ctx);
  }
}

// ---- sizes and trimming ----

export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Encoded length of a name (dns-packet does not compress names). */
export function nameSize(name: string): number {
  let n = name;
  if (n.startsWith(".")) n = n.slice(1);
  if (n.endsWith(".")) n = n.slice(0, -1);
  return n.length === 0 ? 1 : utf8Length(n) + 2;
}

export function recordSize(r: DnsRecord): number {
  let rdata: number;
  switch (r.type) {
    case "A":
      rdata = 4;
      break;
    case "AAAA":
      rdata = 16;
      break;
    case "CNAME":
    case "NS":
    case "PTR":
      rdata = nameSize(r.data);
      break;
    case "SRV":
      rdata = 6 + nameSize(r.data.target);
      break;
    case "TXT":
      rdata = r.data.reduce((s, t) => s + 1 + utf8Length(t), 0);
      break;
    case "SOA":
      rdata = nameSize(r.data.mname) + nameSize(r.data.rname) + 20;
      break;
  }
  return nameSize(r.name) + 10 + rdata;
}

/** Size of the encoded message: header, one question, the records and an OPT record (11 bytes) when present. */
export function messageSize(question: DnsQuestion, a: DnsAnswer, hasOpt: boolean): number {
  let n = 12 + nameSize(question.name) + 4 + (hasOpt ? 11 : 0);
  for (const r of a.answers) n += recordSize(r);
  for (const r of a.authorities) n += recordSize(r);
  for (const r of a.additionals) n += recordSize(r);
  return n;
}

export interface FitOptions {
  transport: "udp" | "tcp";
  /** The client's EDNS0 UDP payload size, when it sent an OPT record. */
  ednsSize?: number;
  config: Pick<DnsAnswerConfig, "udpAnswerLimit" | "enableTruncate">;
}

export const maxUdpSizeWithoutEdns = 512;
export const maxTcpMessageSize = 65535;

/**
 * Trim an answer to its transport (Consul trimUDPResponse): without EDNS0
 * a UDP answer keeps at most `udpAnswerLimit` records and 512 bytes; with
 * EDNS0 the client's size; TCP only the 64 KiB frame. Additional records
 * follow the answers they support: per answer when the answer says which
 * are whose (SRV), else by name. TC is set when records were cut and
 * `enableTruncate` is on (always when even one record did not fit).
 */
export function fitAnswer(question: DnsQuestion, answer: DnsAnswer, options: FitOptions): DnsAnswer {
  const hasOpt = options.ednsSize !== undefined;
  const maxSize = options.transport === "tcp"
    ? maxTcpMessageSize
    : Math.min(maxTcpMessageSize, Math.max(maxUdpSizeWithoutEdns, options.ednsSize ?? 0));
  const original = answer.answers.length;
  const perAnswer = answer.additionalsPerAnswer?.length === original ? answer.additionalsPerAnswer : undefined;
  /** The first `n` answers with the additional records they need. */
  const keep = (n: number): { answers: DnsRecord[]; additionals: DnsRecord[]; additionalsPerAnswer?: number[] } => {
    const kept = answer.answers.slice(0, n);
    if (!perAnswer) return { answers: kept, additionals: syncExtra(kept, answer.additionals) };
    const counts = perAnswer.slice(0, n);
    return { answers: kept, additionals: answer.additionals.slice(0, counts.reduce((s, c) => s + c, 0)), additionalsPerAnswer: counts };
  };
  let kept: ReturnType<typeof keep> = { answers: answer.answers, additionals: answer.additionals, additionalsPerAnswer: perAnswer };
  let authorities = answer.authorities;
  const limit = options.config.udpAnswerLimit;
  if (options.transport === "udp" && !hasOpt && limit > 0 && original > limit) kept = keep(limit);
  let size = messageSize(question, { ...answer, ...kept, authorities }, hasOpt);
  if (size > maxSize && kept.answers.length > 1) {
    authorities = [];
    kept = keep(kept.answers.length);
    // Sizes are additive: the fixed part, then each answer with the
    // additional records it brings (its own group, or those for a name it
    // is the first to point at).
    const { answers, additionals } = kept;
    const pointsAt = !perAnswer && answers.some((r) => r.type === "SRV" || r.type === "NS");
    const extraByName = new Map<string, number>();
    let unreferenced = 0;
    if (!perAnswer) {
      for (const r of additionals) {
        const key = r.name.toLowerCase();
        if (pointsAt) extraByName.set(key, (extraByName.get(key) ?? 0) + recordSize(r));
        else unreferenced += recordSize(r);
      }
    }
    let total = messageSize(question, { ...answer, answers: [], authorities, additionals: [] }, hasOpt) + unreferenced;
    const counted = new Set<string>();
    let at = 0;
    let n = 0;
    for (; n < answers.length; n++) {
      const r = answers[n]!;
      let add = recordSize(r);
      let ref: string | undefined;
      if (perAnswer) {
        for (let i = 0; i < perAnswer[n]!; i++) add += recordSize(additionals[at + i]!);
      } else {
        ref = r.type === "SRV" ? r.data.target.toLowerCase() : r.type === "NS" ? r.data.toLowerCase() : undefined;
        if (ref !== undefined && !counted.has(ref)) add += extraByName.get(ref) ?? 0;
      }
      if (n >= 1 && total + add > maxSize) break;
      total += add;
      if (perAnswer) at += perAnswer[n]!;
      if (ref !== undefined) counted.add(ref);
    }
    kept = keep(n);
    size = messageSize(question, { ...answer, ...kept, authorities }, hasOpt);
  }
  let tooBig = false;
  if (size > maxSize) {
    kept = { answers: kept.answers, additionals: [], additionalsPerAnswer: kept.additionalsPerAnswer?.map(() => 0) };
    authorities = [];
    size = messageSize(question, { ...answer, ...kept, authorities }, hasOpt);
    if (size > maxSize) {
      kept = { answers: [], additionals: [], additionalsPerAnswer: kept.additionalsPerAnswer ? [] : undefined };
      tooBig = true;
    }
  }
  const trimmed = kept.answers.length < original;
  const truncated = answer.truncated || tooBig || (trimmed && (options.config.enableTruncate || options.transport === "tcp"));
  const out: DnsAnswer = { ...answer, answers: kept.answers, authorities, additionals: kept.additionals, truncated };
  if (kept.additionalsPerAnswer) out.additionalsPerAnswer = kept.additionalsPerAnswer;
  else delete out.additionalsPerAnswer;
  return out;
}

/** Names that answers point at (SRV targets, NS hosts), lower-case. */
function referencedNames(answers: readonly DnsRecord[]): Set<string> {
  const out = new Set<string>();
  for (const r of answers) {
    if (r.type === "SRV") out.add(r.data.target.toLowerCase());
    else if (r.type === "NS") out.add(r.data.toLowerCase());
  }
  return out;
}

/** Keep only additional records for names the answers still point at (when they point at any). */
function syncExtra(answers: readonly DnsRecord[], additionals: DnsRecord[]): DnsRecord[] {
  if (additionals.length === 0) return additionals;
  const pointsAt = answers.some((r) => r.type === "SRV" || r.type === "NS");
  if (!pointsAt) return answers.length === 0 ? [] : additionals;
  const refs = referencedNames(answers);
  return additionals.filter((r) => refs.has(r.name.toLowerCase()));
}
