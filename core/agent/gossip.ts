// The agent's gossip pools: Consul's LAN pool (every agent) and WAN pool
// (servers, node name `<node>.<dc>`), each a SerfCore run by a GossipDriver
// over the UDP/TCP transport with the memberlist/Serf wire codec. Other
// layers use only the interfaces below: Raft integration reads server
// members (`tags.role === "consul"`) and membership events for discovery;
// HTTP reads members, coordinates, events and the keyring.

import { lookup } from "../lazy_builtins_node.ts";
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { join as joinPath } from "node:path";
import type { Clock } from "../clock/clock.ts";
import type { AgentConfig } from "../config/types.ts";
import { BadRequestError, errorMessage } from "../errors.ts";
import type { Logger, LogFields, LogLevel } from "../log/mod.ts";
import { GossipDriver } from "../gossip/driver.ts";
import type { Unstamped } from "../gossip/driver.ts";
import { consulSerfTimings, lanProfile, wanProfile } from "../gossip/profiles.ts";
import type { GossipProfile } from "../gossip/profiles.ts";
import { SerfCore } from "../gossip/serf.ts";
import type { SerfEvent, SerfInput, SerfMember, SerfTypes } from "../gossip/serf.ts";
import { createNodeTransport } from "../gossip/transport_node.ts";
import type { NodeTransport } from "../gossip/transport_node.ts";
import { serfWireCodec } from "../gossip/wire/codec.ts";
import { joinHostPort, splitHostPort } from "../gossip/wire/addr.ts";
import { decodeSerfMessage, encodeSerfMessage } from "../gossip/wire/serf.ts";
import { InternalQuery } from "../gossip/wire/messages.ts";
import { Keyring, keyFromBase64, keyToBase64 } from "../gossip/wire/crypto.ts";
import { Rng } from "../sim/rng.ts";
import { revision, version } from "../version.ts";
import { loadKeyring, saveKeyringFile } from "./keyring_node.ts";
import { readSerfSnapshot, SerfSnapshotWriter } from "./serf_snapshot_node.ts";
import { randomSeed } from "./random_node.ts";

export type PoolName = "lan" | "wan";
export type PoolMemberStatus = "alive" | "leaving" | "left" | "failed";

export interface PoolMember {
  /** Node name (WAN pool: `<node>.<dc>`). */
  readonly name: string;
  /** Gossip IP address. */
  readonly addr: string;
  /** Gossip port. */
  readonly port: number;
  /** Consul's Serf tags: role, dc, id, port, vsn, build, segment, expect, bootstrap, … */
  readonly tags: Readonly<Record<string, string>>;
  readonly status: PoolMemberStatus;
  readonly protocolMin: number;
  readonly protocolMax: number;
  readonly protocolCur: number;
  readonly delegateMin: number;
  readonly delegateMax: number;
  readonly delegateCur: number;
}

export type PoolMemberEventType = "join" | "leave" | "failed" | "update" | "reap";

export interface PoolMemberEvent {
  readonly type: PoolMemberEventType;
  readonly members: PoolMember[];
}

/** A user event delivered by gossip (or fired locally). */
export interface PoolUserEvent {
  readonly lTime: number;
  readonly name: string;
  readonly payload: Uint8Array;
  readonly coalesce: boolean;
}

/** A Vivaldi network coordinate (Serf's `coordinate.Coordinate`). */
export interface PoolCoordinate {
  readonly vec: readonly number[];
  readonly error: number;
  readonly adjustment: number;
  readonly height: number;
}

/** Counters of one pool's transport (garbage, decrypt failures, …) plus member counts. */
export type PoolStats = Record<string, number | string>;

export interface GossipPool {
  readonly name: PoolName;
  members(): PoolMember[];
  localMember(): PoolMember;
  /** Subscribe to member events; returns the unsubscribe function. */
  onMemberEvent(fn: (e: PoolMemberEvent) => void): () => void;
  /** Subscribe to user events; returns the unsubscribe function. */
  onUserEvent(fn: (e: PoolUserEvent) => void): () => void;
  /** Join through the given "host[:port]" addresses; resolves when every attempt has finished. */
  join(addrs: string[]): Promise<{ joined: number; errors: string[] }>;
  /** Gracefully leave the pool (broadcast intent, wait for propagation). */
  leave(): Promise<void>;
  /** Mark a failed member left (`prune`: erase it at once). Rejects if the node is unknown. */
  forceLeave(node: string, options?: { prune?: boolean }): Promise<void>;
  setTags(tags: Record<string, string>): void;
  userEvent(name: string, payload: Uint8Array, coalesce: boolean): void;
  /** This node's Vivaldi coordinate (undefined when coordinates are disabled). */
  coordinate(): PoolCoordinate | undefined;
  /** Last known coordinate of every member that has one (includes this node). */
  coordinates(): Array<{ node: string; coord: PoolCoordinate }>;
  stats(): PoolStats;
  /** Stop without leaving (a crash, or after `leave()`). */
  stop(): Promise<void>;
}

/** One pool's answer to a keyring operation (Consul's `KeyringResponse`). */
export interface KeyringPoolResponse {
  readonly wan: boolean;
  readonly datacenter: string;
  readonly segment: string;
  /** base64 key → number of nodes that have it installed (list only). */
  readonly keys: Record<string, number>;
  /** base64 key → number of nodes using it as primary (list only). */
  readonly primaryKeys: Record<string, number>;
  readonly numNodes: number;
  /** node name → error message from that node. */
  readonly messages: Record<string, string>;
  /** Set when some nodes failed; the message Consul's CLI prints. */
  readonly error?: string;
}

export interface AgentKeyring {
  /** False when gossip encryption is not configured (operations then fail). */
  readonly enabled: boolean;
  list(options?: { localOnly?: boolean }): Promise<KeyringPoolResponse[]>;
  install(key: string): Promise<KeyringPoolResponse[]>;
  use(key: string): Promise<KeyringPoolResponse[]>;
  remove(key: string): Promise<KeyringPoolResponse[]>;
}

export interface AgentGossip {
  readonly lan: GossipPool;
  /** Servers only. */
  readonly wan?: GossipPool;
  readonly keyring: AgentKeyring;
  /** Leave every pool (WAN first), then stop. */
  leave(): Promise<void>;
  /** Stop every pool without leaving. */
  stop(): Promise<void>;
}

export interface GossipDeps {
  logger: Logger;
  clock: Clock;
  /** The node's UUID (the `id` tag). */
  nodeId: string;
  /** Extra tags merged over the ones derived from config. */
  tags?: Record<string, string>;
}


// ---------------------------------------------------------------------------
// Consul's tags, versions and timings

/** memberlist/Serf versions Consul advertises: protocol 1..5 (cur 2), delegate 2..5 (cur 4). */
export const consulVsn: readonly number[] = [1, 5, 2, 2, 5, 4];
/** Consul's own protocol version tags (vsn / vsn_min / vsn_max) and Raft protocol. */
export const consulProtocol = { cur: 2, min: 2, max: 3, raft: 3 } as const;

/** Consul's `build` tag: `<version>:<short revision>`. */
export function buildTag(): string {
  return `${version}:${revision.slice(0, 8)}`;
}

/** The Serf tags Consul sets (agent/consul/server_serf.go, client_serf.go). */
export function consulTags(config: AgentConfig, options: { nodeId: string; pool: PoolName }): Record<string, string> {
  const tags: Record<string, string> = {
    role: config.server ? "consul" : "node",
    dc: config.datacenter,
  };
  if (options.pool === "lan") tags.segment = "";
  tags.id = options.nodeId;
  tags.vsn = String(consulProtocol.cur);
  tags.vsn_min = String(consulProtocol.min);
  tags.vsn_max = String(consulProtocol.max);
  tags.build = buildTag();
  if (config.server) {
    tags.raft_vsn = String(consulProtocol.raft);
    tags.port = String(config.ports.server);
    if (config.bootstrap) tags.bootstrap = "1";
    if (config.bootstrapExpect > 0) tags.expect = String(config.bootstrapExpect);
    if (options.pool === "lan") tags.wan_join_port = String(config.ports.serfWan);
    tags.ft_fs = "1";
    tags.ft_si = "1";
  }
  return tags;
}

/** Consul's -dev gossip: probe/gossip every 100 ms, suspicion multiplier 3. */
export function devProfile(base: GossipProfile): GossipProfile {
  return Object.freeze({ ...base, probeIntervalMs: 100, probeTimeoutMs: 100, gossipIntervalMs: 100, suspicionMult: 3 });
}

/** The address to advertise when none is configured: the bind address, or a private IPv4 for a wildcard bind. */
export function pickAdvertiseAddr(bindAddr: string): string {
  if (bindAddr !== "0.0.0.0" && bindAddr !== "::" && bindAddr !== "") return bindAddr;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  }
  return "127.0.0.1";
}

/** "host", "host:port", "[v6]:port" → resolved "ip:port" (default port when absent). */
export async function resolveJoinAddr(addr: string, defaultPort: number): Promise<string> {
  const text = addr.trim();
  if (text === "") throw new Error("empty join address");
  if (text.includes("provider=")) throw new Error(`Cloud auto-join ("${text}") is not supported`);
  let host = text;
  let port = defaultPort;
  // "host:port" is split before any isIP(): isIP tries its large IPv6 pattern on anything that is not
  // dotted IPv4, and compiling that pattern was a visible part of every agent's first join.
  // A bare IPv6 literal has several colons and no brackets: it is a host without a port.
  const hp = splitHostPort(text);
  if (hp && (text.startsWith("[") || !hp.host.includes(":"))) {
    host = hp.host;
    port = hp.port;
  } else if (text.startsWith("[") && text.endsWith("]")) {
    host = text.slice(1, -1);
  }
  if (isIP(host) === 0) {
    try {
      host = (await lookup(host)).address;
    } catch (err) {
      throw new Error(`Failed to resolve ${host}: ${errorMessage(err)}`);
    }
  }
  return joinHostPort(host, port);
}

export function toPoolMember(m: SerfMember): PoolMember {
  const hp = splitHostPort(m.addr);
  const v = m.vsn;
  return {
    name: m.name,
    addr: hp?.host ?? m.addr,
    port: hp?.port ?? 0,
    tags: m.tags,
    status: m.status,
    protocolMin: v[0] ?? 0,
    protocolMax: v[1] ?? 0,
    protocolCur: v[2] ?? 0,
    delegateMin: v[3] ?? 0,
    delegateMax: v[4] ?? 0,
    delegateCur: v[5] ?? 0,
  };
}

/** A logger that raises the transport's decrypt failures to warnings with memberlist's wording. */
function transportLogger(base: Logger): Logger {
  const wrap = (l: Logger): Logger => {
    const emit = (level: LogLevel, message: string, fields?: LogFields): void => {
      const error = typeof fields?.error === "string" ? fields.error : "";
      if ((level === "debug" || level === "trace") && /No installed keys could decrypt|decrypt/i.test(error)) {
        l.warn(`failed to receive: ${error}`, fields);
        return;
      }
      if ((level === "debug" || level === "trace") && /garbage|undecodable|bad incoming/i.test(message)) {
        l.warn(message, fields);
        return;
      }
      l[level](message, fields);
    };
    return {
      trace: (m, f) => emit("trace", m, f),
      debug: (m, f) => emit("debug", m, f),
      info: (m, f) => emit("info", m, f),
      warn: (m, f) => emit("warn", m, f),
      error: (m, f) => emit("error", m, f),
      named: (n) => wrap(l.named(n)),
      with: (f) => wrap(l.with(f)),
      isEnabled: (lv) => l.isEnabled(lv),
    };
  };
  return wrap(base);
}

// ---------------------------------------------------------------------------
// One pool

interface PendingQuery {
  token: number;
  lTime?: number;
  id?: number;
  responses: Map<string, Uint8Array | null>;
  expect: number;
  resolve: (r: Map<string, Uint8Array | null>) => void;
  reject: (err: Error) => void;
}

interface PoolOptions {
  name: PoolName;
  nodeName: string;
  datacenter: string;
  profile: GossipProfile;
  reconnectTimeoutMs: number;
  transport: NodeTransport;
  keyring: Keyring | undefined;
  keyringFile: string | undefined;
  snapshotFile: string | undefined;
  tags: Record<string, string>;
  nodeId: string;
  clock: Clock;
  logger: Logger;
  rng: Rng;
  /** Lamport clocks from the member snapshot (a restart must not replay old events). */
  restoreClocks?: { lTime: number; eventLTime: number; queryLTime: number };
}

export class SerfPool implements GossipPool {
  readonly name: PoolName;
  readonly core: SerfCore;
  readonly transport: NodeTransport;
  readonly keyring: Keyring | undefined;
  readonly datacenter: string;
  #opts: PoolOptions;
  #driver: GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>;
  #log: Logger;
  #memberSubs = new Set<(e: PoolMemberEvent) => void>();
  #userSubs = new Set<(e: PoolUserEvent) => void>();
  #joinQueue: Promise<unknown> = Promise.resolve();
  #joinWaiters: Array<(r: { contacted: number; errors: string[] }) => void> = [];
  #leaveWaiters: Array<() => void> = [];
  #queries = new Map<number, PendingQuery>();
  #querySeq = 0;
  #syncErrors: string[] | undefined;
  #snapshot: SerfSnapshotWriter | undefined;
  #left = false;
  #stopped = false;
  #conflicts = 0;
  #vetoed = 0;
  #wireErrors = 0;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.name = opts.name;
    this.transport = opts.transport;
    this.keyring = opts.keyring;
    this.datacenter = opts.datacenter;
    this.#log = opts.logger;
    // Parts of packets/streams the codec had to drop (truncated, malformed) are counted for Stats.serf_lan.
    // The LAN pool sends its packets and streams uncompressed (memberlist's EnableCompression off):
    // compression only saves bytes (packets are filled to the UDP buffer size before compressing), and
    // LZW was the largest CPU cost of a join storm: byte loops over every packet and push/pull, hot
    // enough for V8 to optimise them on every agent. Measured with 50 agents joining at once
    // (scripts/bench/gossip.ts): 4.9 -> 2.8 CPU-s, all-see-all 2.7 -> 1.9 s. Received compressed
    // messages (Consul, serf) are still decoded. The WAN pool keeps compression (fewer, farther peers).
    const codec = serfWireCodec({ compress: opts.name === "wan", onWireError: () => void this.#wireErrors++ });
    this.core = new SerfCore({
      name: opts.nodeName,
      addr: opts.transport.localAddr,
      tags: opts.tags,
      vsn: consulVsn,
      profile: opts.profile,
      timings: { ...consulSerfTimings, reconnectTimeoutMs: opts.reconnectTimeoutMs },
      rng: opts.rng,
      logger: opts.logger.named("serf"),
      now: opts.clock.now(),
      wallOffsetMs: opts.clock.wallNow() - opts.clock.now(),
      measure: codec.measure,
      vetoMember: (m) => this.#veto(m),
      restoreClocks: opts.restoreClocks,
    });
    this.#driver = new GossipDriver<SerfTypes, SerfInput, SerfEvent, Uint8Array>({
      core: this.core,
      clock: opts.clock,
      transport: opts.transport,
      codec,
      logger: opts.logger.named("memberlist"),
      onEvent: (e) => this.#onEvent(e),
    });
    if (opts.snapshotFile) {
      this.#snapshot = new SerfSnapshotWriter({
        file: opts.snapshotFile,
        clock: opts.clock,
        logger: opts.logger,
        state: () => ({
          alive: new Map(this.core.members().filter((m) => m.status === "alive" && m.name !== this.core.name).map((m) => [m.name, m.addr])),
          clock: this.core.clock.time,
          eventClock: this.core.eventClock.time,
          queryClock: this.core.queryClock.time,
        }),
      });
    }
  }

  /** Consul's merge/alive delegates: wrong datacenter, or a node ID another member already has. */
  #veto(m: { name: string; addr: string; tags: Readonly<Record<string, string>> }): string | undefined {
    const role = m.tags.role;
    let reason: string | undefined;
    if ((role === "node" || role === "consul") && m.tags.dc !== undefined && this.name === "lan" && m.tags.dc !== this.datacenter) {
      reason = `Member '${m.name}' part of wrong datacenter '${m.tags.dc}'`;
    }
    const id = m.tags.id;
    if (!reason && id && this.name === "lan") {
      if (id === this.#opts.nodeId && m.name !== this.core?.name) {
        reason = `Member '${m.name}' has conflicting node ID '${id}' with this agent's ID`;
      } else if (this.core && this.core.memberTags(m.name)?.id !== id) {
        // Only a new member, or one whose ID changed, needs the scan (most alive messages are refreshes).
        const other = this.core.findMember((name, tags, status) => name !== m.name && tags.id === id && status === "alive");
        if (other) reason = `Member '${m.name}' has conflicting node ID '${id}' with member '${other}'`;
      }
    }
    if (reason) {
      this.#vetoed++;
      this.#log.warn(`refusing member: ${reason}`, { node: m.name, addr: m.addr });
    }
    return reason;
  }

  start(): void {
    this.#driver.start();
  }

  #onEvent(e: SerfEvent): void {
    switch (e.kind) {
      case "member": {
        const members = e.members.map(toPoolMember);
        const label = { join: "EventMemberJoin", leave: "EventMemberLeave", failed: "EventMemberFailed", update: "EventMemberUpdate", reap: "EventMemberReap" }[e.type];
        for (const m of members) this.#log.info(`serf: ${label}: ${m.name} ${m.addr}`);
        this.#snapshot?.changed();
        for (const fn of this.#memberSubs) {
          try {
            fn({ type: e.type, members });
          } catch (err) {
            this.#log.error("member event subscriber threw", { error: errorMessage(err) });
          }
        }
        return;
      }
      case "user": {
        this.#log.debug(`serf: EventUser: ${e.name}`, { lTime: e.lTime });
        for (const fn of this.#userSubs) {
          try {
            fn({ lTime: e.lTime, name: e.name, payload: e.payload, coalesce: e.coalesce });
          } catch (err) {
            this.#log.error("user event subscriber threw", { error: errorMessage(err) });
          }
        }
        return;
      }
      case "query":
        if (e.internal) this.#answerInternalQuery(e);
        return;
      case "queryStarted": {
        const q = e.token !== undefined ? this.#queries.get(e.token) : undefined;
        if (q) {
          q.lTime = e.lTime;
          q.id = e.id;
        }
        return;
      }
      case "queryResponse":
      case "queryDone": {
        for (const q of this.#queries.values()) {
          if (q.lTime !== e.lTime || q.id !== e.id) continue;
          if (e.kind === "queryResponse") q.responses.set(e.from, e.payload);
          if (e.kind === "queryDone" || q.responses.size >= q.expect) {
            this.#queries.delete(q.token);
            q.resolve(q.responses);
          }
        }
        return;
      }
      case "queryAck":
        return;
      case "joinDone": {
        const w = this.#joinWaiters.shift();
        w?.({ contacted: e.contacted, errors: e.errors });
        return;
      }
      case "leaveDone":
        for (const w of this.#leaveWaiters.splice(0)) w();
        return;
      case "conflict":
        this.#conflicts++;
        this.#log.error(`memberlist: Conflicting address for ${e.name}. Mine: ${e.existingAddr} Theirs: ${e.otherAddr}`);
        return;
      case "error":
        if (this.#syncErrors) this.#syncErrors.push(e.message);
        else this.#log.warn(`serf: ${e.input} failed: ${e.message}`);
        return;
    }
  }

  /** Feed an input; errors the core reports while handling it are thrown. */
  #inputChecked(input: Unstamped<SerfInput>): void {
    if (this.#stopped) throw new Error(`The ${this.name.toUpperCase()} gossip pool is stopped`);
    this.#syncErrors = [];
    try {
      this.#driver.input(input);
    } finally {
      const errs = this.#syncErrors;
      this.#syncErrors = undefined;
      if (errs.length > 0) throw new Error(errs.join("; "));
    }
  }

  members(): PoolMember[] {
    return this.core.members().map(toPoolMember);
  }

  localMember(): PoolMember {
    const m = this.core.member(this.core.name);
    if (m) return toPoolMember(m);
    return toPoolMember({ name: this.core.name, addr: this.transport.localAddr, tags: this.core.tags, status: "alive", statusLTime: 0, vsn: consulVsn });
  }

  onMemberEvent(fn: (e: PoolMemberEvent) => void): () => void {
    this.#memberSubs.add(fn);
    return () => this.#memberSubs.delete(fn);
  }

  onUserEvent(fn: (e: PoolUserEvent) => void): () => void {
    this.#userSubs.add(fn);
    return () => this.#userSubs.delete(fn);
  }

  join(addrs: string[], options: { ignoreOld?: boolean } = {}): Promise<{ joined: number; errors: string[] }> {
    const run = async (): Promise<{ joined: number; errors: string[] }> => {
      const errors: string[] = [];
      const resolved: string[] = [];
      const defaultPort = this.transport.port;
      for (const a of addrs) {
        try {
          resolved.push(await resolveJoinAddr(a, defaultPort));
        } catch (err) {
          errors.push(`Failed to resolve ${a}: ${errorMessage(err)}`);
        }
      }
      if (resolved.length === 0) return { joined: 0, errors };
      if (this.#stopped) return { joined: 0, errors: [...errors, "The gossip pool is stopped"] };
      const done = new Promise<{ contacted: number; errors: string[] }>((resolve) => this.#joinWaiters.push(resolve));
      this.#log.info(`(${this.name.toUpperCase()}) joining`, { addresses: resolved.join(",") });
      this.#driver.input({ kind: "join", addrs: resolved, ignoreOld: options.ignoreOld });
      const r = await done;
      const errs = [...errors, ...r.errors.map((e) => this.#explainJoinError(e))];
      if (r.contacted > 0) this.#log.info(`(${this.name.toUpperCase()}) joined`, { number_of_nodes: r.contacted });
      else this.#log.warn(`(${this.name.toUpperCase()}) couldn't join`, { errors: errs.join("; ") });
      return { joined: r.contacted, errors: errs };
    };
    const p = this.#joinQueue.then(run, run);
    this.#joinQueue = p.catch(() => undefined);
    return p;
  }

  /** Join errors say when encryption is the likely cause, as the reason is only logged remotely. */
  #explainJoinError(error: string): string {
    if (/decrypt|No installed keys/i.test(error)) return error;
    if (/closed without a reply|EOF|ECONNRESET|reset|plaintext|plain/i.test(error)) {
      return this.keyring
        ? `${error} (the remote end dropped our encrypted message: its gossip encryption key differs or it has none; No installed keys could decrypt the message)`
        : `${error} (the remote end dropped our message: it may require gossip encryption)`;
    }
    return error;
  }

  async leave(): Promise<void> {
    if (this.#left || this.#stopped) return;
    this.#left = true;
    this.#log.info(`serf: (${this.name.toUpperCase()}) leaving`);
    const done = new Promise<void>((resolve) => this.#leaveWaiters.push(resolve));
    this.#driver.input({ kind: "leave" });
    const t = consulSerfTimings;
    let timer: { cancel(): void } | undefined;
    await Promise.race([
      done,
      new Promise<void>((resolve) => {
        timer = this.#opts.clock.setTimer(t.broadcastTimeoutMs * 2 + t.leavePropagateDelayMs + 1_000, resolve);
      }),
    ]);
    timer?.cancel();
    this.#snapshot?.leave();
  }

  async forceLeave(node: string, options: { prune?: boolean } = {}): Promise<void> {
    if (!this.core.member(node)) throw new ForceLeaveError(`No node found with name '${node}'`);
    this.#log.info("Force leaving node", { node, prune: !!options.prune });
    this.#inputChecked({ kind: "forceLeave", node, prune: options.prune });
  }

  setTags(tags: Record<string, string>): void {
    this.#inputChecked({ kind: "setTags", tags: { ...tags } });
  }

  userEvent(name: string, payload: Uint8Array, coalesce: boolean): void {
    this.#inputChecked({ kind: "userEvent", name, payload, coalesce });
  }

  /** Run a query and collect responses until all `expect` nodes answered or the timeout. */
  query(name: string, payload: Uint8Array | null, options: { expect: number; timeoutMs?: number }): Promise<Map<string, Uint8Array | null>> {
    return new Promise((resolve, reject) => {
      const token = ++this.#querySeq;
      this.#queries.set(token, { token, responses: new Map(), expect: options.expect, resolve, reject });
      try {
        this.#inputChecked({ kind: "query", name, payload, token, timeoutMs: options.timeoutMs });
      } catch (err) {
        this.#queries.delete(token);
        reject(err);
      }
    });
  }

  #answerInternalQuery(e: Extract<SerfEvent, { kind: "query" }>): void {
    const respond = (payload: Uint8Array | null): void => this.#driver.input({ kind: "respond", lTime: e.lTime, id: e.id, payload });
    switch (e.name) {
      case InternalQuery.ping:
        return; // the ack is the answer
      case InternalQuery.installKey:
      case InternalQuery.useKey:
      case InternalQuery.removeKey:
      case InternalQuery.listKeys:
        respond(encodeSerfMessage({ type: "keyResponse", body: this.#keyResponse(e.name, e.payload) }));
        return;
      case InternalQuery.conflict:
        return; // Consul disables name conflict resolution
      default:
        this.#log.debug("ignoring internal query", { name: e.name });
    }
  }

  #keyResponse(name: string, payload: Uint8Array | null): { result: boolean; message: string; keys: string[] | null; primaryKey: string } {
    const fail = (message: string) => ({ result: false, message, keys: null, primaryKey: "" });
    const ring = this.keyring;
    if (!ring) {
      return fail(name === InternalQuery.listKeys ? "Keyring is empty (encryption not enabled)" : "No keyring to modify (encryption not enabled)");
    }
    if (name === InternalQuery.listKeys) {
      return { result: true, message: "", keys: ring.keys.map(keyToBase64), primaryKey: keyToBase64(ring.primaryKey) };
    }
    const d = payload ? decodeSerfMessage(payload) : undefined;
    if (!d || !d.ok || d.value.type !== "keyRequest") {
      this.#log.warn("bad key request", { query: name });
      return fail("Failed to decode key request");
    }
    const key = d.value.body.key;
    try {
      if (name === InternalQuery.installKey) {
        ring.addKey(key);
        this.#log.info("serf: Received install-key query");
      } else if (name === InternalQuery.useKey) {
        const r = ring.useKey(key);
        if (!r.ok) return fail(r.error.message);
        this.#log.info("serf: Received use-key query");
      } else {
        const r = ring.removeKey(key);
        if (!r.ok) return fail(r.error.message);
        this.#log.info("serf: Received remove-key query");
      }
    } catch (err) {
      return fail(errorMessage(err));
    }
    if (this.#opts.keyringFile) {
      try {
        saveKeyringFile(this.#opts.keyringFile, ring);
      } catch (err) {
        return fail(`Failed to write keyring file: ${errorMessage(err)}`);
      }
    }
    return { result: true, message: "", keys: null, primaryKey: "" };
  }

  coordinate(): PoolCoordinate | undefined {
    return this.core.coordinate();
  }

  coordinates(): Array<{ node: string; coord: PoolCoordinate }> {
    const out: Array<{ node: string; coord: PoolCoordinate }> = [];
    for (const m of this.core.members()) {
      if (m.status !== "alive") continue;
      const c = m.name === this.core.name ? this.core.coordinate() : this.core.coordinateOf(m.name);
      if (c) out.push({ node: m.name, coord: c });
    }
    return out;
  }

  stats(): PoolStats {
    const counts = { alive: 0, leaving: 0, left: 0, failed: 0 };
    for (const m of this.core.members()) counts[m.status]++;
    return {
      members: counts.alive + counts.leaving + counts.left + counts.failed,
      failed: counts.failed,
      left: counts.left,
      member_time: this.core.clock.time,
      event_time: this.core.eventClock.time,
      query_time: this.core.queryClock.time,
      health_score: this.core.swim.awarenessScore,
      encrypted: this.keyring ? "true" : "false",
      members_refused: this.#vetoed,
      name_conflicts: this.#conflicts,
      wire_errors: this.#wireErrors,
      ...this.transport.stats,
    };
  }

  /** Rejoin its members in the background. */
  restore(snap: { alive: Map<string, string>; clock: number; eventClock: number; queryClock: number; left: boolean }, rejoinAfterLeave: boolean): void {
    if (snap.left && !rejoinAfterLeave) {
      this.#log.info("serf: Ignoring previous node list: the node left gracefully (rejoin_after_leave is off)");
      return;
    }
    const addrs = [...snap.alive].filter(([name]) => name !== this.core.name).map(([, addr]) => addr);
    if (addrs.length === 0) return;
    this.#log.info(`serf: Attempting re-join to previously known nodes`, { nodes: addrs.length });
    void this.join(addrs, { ignoreOld: true }).then((r) => {
      if (r.joined === 0) this.#log.warn("serf: Failed to re-join any previously known node");
    });
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (!this.#left) this.#snapshot?.flush();
    this.#snapshot?.stop();
    this.#driver.stop();
    for (const w of this.#joinWaiters.splice(0)) w({ contacted: 0, errors: ["The gossip pool stopped"] });
    for (const w of this.#leaveWaiters.splice(0)) w();
    for (const q of this.#queries.values()) q.resolve(q.responses);
    this.#queries.clear();
  }
}

/** force-leave of an unknown node. */
export class ForceLeaveError extends Error {}

// ---------------------------------------------------------------------------
// Keyring operations across pools (serf key_manager.go, Consul KeyringOperation)

type KeyOp = "list" | "install" | "use" | "remove";

const keyQueryName: Record<KeyOp, string> = {
  list: InternalQuery.listKeys,
  install: InternalQuery.installKey,
  use: InternalQuery.useKey,
  remove: InternalQuery.removeKey,
};

/** One pool's keyring operation: ask every member, count keys and failures. */
export async function keyringPoolOperation(pool: SerfPool, op: KeyOp, key?: string): Promise<KeyringPoolResponse> {
  const base = { wan: pool.name === "wan", datacenter: pool.datacenter, segment: "" };
  let raw: Uint8Array = new Uint8Array(0);
  if (op !== "list") {
    const k = keyFromBase64(key ?? "");
    if (!k) throw new KeyringInputError(`Invalid key: expected base64 of 16, 24 or 32 bytes`);
    raw = k;
  }
  const numNodes = pool.members().filter((m) => m.status === "alive").length;
  const payload = encodeSerfMessage({ type: "keyRequest", body: { key: raw } });
  const responses = await pool.query(keyQueryName[op], payload, { expect: numNodes });
  const keys: Record<string, number> = {};
  const primaryKeys: Record<string, number> = {};
  const messages: Record<string, string> = {};
  let numErr = 0;
  for (const [from, bytes] of responses) {
    const d = bytes ? decodeSerfMessage(bytes) : undefined;
    if (!d || !d.ok || d.value.type !== "keyResponse") {
      messages[from] = "Failed to decode key response";
      numErr++;
      continue;
    }
    const r = d.value.body;
    if (!r.result) {
      messages[from] = r.message;
      numErr++;
    } else if (r.message) {
      messages[from] = r.message;
    }
    if (op === "list") {
      for (const k of r.keys ?? []) keys[k] = (keys[k] ?? 0) + 1;
      if (r.primaryKey) primaryKeys[r.primaryKey] = (primaryKeys[r.primaryKey] ?? 0) + 1;
    }
  }
  const numResp = responses.size;
  let error: string | undefined;
  if (numResp !== numNodes) error = `${numResp - numErr}/${numNodes} nodes reported success`;
  else if (numErr > 0) error = `${numErr}/${numNodes} nodes reported failure`;
  return { ...base, keys, primaryKeys, numNodes, messages, ...(error ? { error } : {}) };
}

/** A bad key given to a keyring operation: the HTTP API answers 400 with its text. */
export class KeyringInputError extends BadRequestError {}

function agentKeyring(pools: () => SerfPool[]): AgentKeyring {
  const run = async (op: KeyOp, key?: string, localOnly = false): Promise<KeyringPoolResponse[]> => {
    // Consul answers WAN first, then LAN.
    const list = pools().slice().sort((a, b) => (a.name === "wan" ? -1 : b.name === "wan" ? 1 : 0)).filter((p) => !localOnly || p.name === "lan");
    const out: KeyringPoolResponse[] = [];
    for (const p of list) out.push(await keyringPoolOperation(p, op, key));
    return out;
  };
  return {
    get enabled() {
      return pools().some((p) => p.keyring !== undefined);
    },
    list: (options) => run("list", undefined, options?.localOnly),
    install: (key) => run("install", key),
    use: (key) => run("use", key),
    remove: (key) => run("remove", key),
  };
}

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
}): Promise<NodeTransport> {
  const make = (port: number) =>
    createNodeTransport({
      bindAddr: options.bindAddr,
      bindPort: port,
      advertiseAddr: options.advertiseAddr,
      logger: transportLogger(options.logger.named("memberlist")),
      keyring: options.keyring,
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
    const keyringFile = persist ? joinPath(serfDir, name === "lan" ? "local.keyring" : "remote.keyring") : undefined;
    const snapshotFile = persist ? joinPath(serfDir, name === "lan" ? "local.snapshot" : "remote.snapshot") : undefined;
    const keyring = loadKeyring({ file: keyringFile, encrypt: config.encrypt, logger: log, pool: name.toUpperCase() });
    const transport = await bindTransport({
      bindAddr: config.bindAddr,
      port: name === "lan" ? config.ports.serfLan : config.ports.serfWan,
      advertiseAddr: name === "lan" ? advertise : config.advertiseAddrWan || advertise,
      keyring,
      logger: log,
      fallbackToAnyPort: config.dev,
      pool: name,
    });
    const snap = snapshotFile ? readSerfSnapshot(snapshotFile, log) : undefined;
    const base = name === "lan" ? { ...lanProfile, deadNodeReclaimMs: 30_000 } : wanProfile;
    const pool = new SerfPool({
      name,
      nodeName: name === "lan" ? config.nodeName : `${config.nodeName}.${config.datacenter}`,
      datacenter: config.datacenter,
      profile: config.dev ? devProfile(base) : base,
      reconnectTimeoutMs: name === "lan" ? config.reconnectTimeoutMs : config.reconnectTimeoutWanMs,
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

// ---------------------------------------------------------------------------
// start_join / retry_join

/** Consul's -join: every address at once; an error when none could be contacted. */
export async function startJoin(pool: GossipPool, addrs: readonly string[], logger: Logger): Promise<void> {
  if (addrs.length === 0) return;
  const r = await pool.join([...addrs]);
  if (r.joined === 0) throw new Error(`Failed to join ${pool.name.toUpperCase()} cluster: ${r.errors.join("; ") || "no node could be contacted"}`);
  logger.info(`Join ${pool.name.toUpperCase()} completed. Synced with ${r.joined} initial agents`);
}

/**
 * Consul's -retry-join: try every interval until one join works; after
 * `maxAttempts` (0 = forever) failed attempts reject. `cancel()` stops it.
 */
export function retryJoin(
  pool: GossipPool,
  options: { addrs: readonly string[]; intervalMs: number; maxAttempts: number; clock: Clock; logger: Logger },
): { done: Promise<void>; cancel(): void } {
  let cancelled = false;
  let timer: { cancel(): void } | undefined;
  let wake: (() => void) | undefined;
  const cluster = pool.name.toUpperCase();
  const done = (async () => {
    for (let attempt = 1; !cancelled; attempt++) {
      options.logger.info("Joining cluster...", { cluster });
      const r = await pool.join([...options.addrs]);
      if (cancelled) return;
      if (r.joined > 0) {
        options.logger.info("Join cluster completed. Synced with initial agents", { cluster, num_agents: r.joined });
        return;
      }
      const error = r.errors.join("; ") || "no node could be contacted";
      if (options.maxAttempts > 0 && attempt >= options.maxAttempts) {
        options.logger.error("Join cluster failed, max attempts reached", { cluster, attempts: attempt, error });
        throw new Error(`agent: Join ${cluster} cluster failed after ${attempt} attempts: ${error}`);
      }
      options.logger.warn("Join cluster failed, will retry", { cluster, retry_interval: `${options.intervalMs}ms`, attempt, error });
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = options.clock.setTimer(options.intervalMs, resolve);
      });
    }
  })();
  return {
    done,
    cancel() {
      cancelled = true;
      timer?.cancel();
      wake?.();
    },
  };
}
