// One gossip pool: a SerfCore run by a GossipDriver over the UDP/TCP
// transport, with its snapshot, keyring file, queries and events.

import type { Clock } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { GossipDriver } from "../gossip/driver.ts";
import type { Unstamped } from "../gossip/driver.ts";
import { consulSerfTimings } from "../gossip/profiles.ts";
import type { GossipProfile } from "../gossip/profiles.ts";
import { SerfCore } from "../gossip/serf.ts";
import type { SerfEvent, SerfInput, SerfTypes } from "../gossip/serf.ts";
import type { NodeTransport } from "../gossip/transport_node.ts";
import { serfWireCodec } from "../gossip/wire/codec.ts";
import { decodeSerfMessage, encodeSerfMessage } from "../gossip/wire/serf.ts";
import { InternalQuery } from "../gossip/wire/messages.ts";
import { Keyring, keyToBase64 } from "../gossip/wire/crypto.ts";
import { Rng } from "../sim/rng.ts";
import { saveKeyringFile } from "./keyring_node.ts";
import { SerfSnapshotWriter } from "./serf_snapshot_node.ts";
import type { GossipPool, PoolCoordinate, PoolMember, PoolMemberEvent, PoolName, PoolStats, PoolUserEvent } from "./types.ts";
import { consulVsn, reconnectTimeoutOverride, resolveJoinAddr, toPoolMember } from "./tags.ts";

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
  /** disable_coordinates: no Vivaldi client, no coordinates in acks. */
  disableCoordinates?: boolean;
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
    // enough for V8 to optimise them on every agent. Without it, 50 agents joining at once
    // (scripts/bench/gossip.ts) used much less CPU and saw each other sooner (docs/performance.md). Received compressed
    // messages (Consul, serf) are still decoded. The WAN pool keeps compression (fewer, farther peers).
    const codec = serfWireCodec({ compress: opts.name === "wan", onWireError: () => void this.#wireErrors++ });
    this.core = new SerfCore({
      name: opts.nodeName,
      addr: opts.transport.localAddr,
      tags: opts.tags,
      vsn: consulVsn,
      profile: opts.profile,
      timings: { ...consulSerfTimings, reconnectTimeoutMs: opts.reconnectTimeoutMs },
      disableCoordinates: opts.disableCoordinates,
      rng: opts.rng,
      logger: opts.logger.named("serf"),
      now: opts.clock.now(),
      wallOffsetMs: opts.clock.wallNow() - opts.clock.now(),
      measure: codec.measure,
      vetoMember: (m) => this.#veto(m),
      restoreClocks: opts.restoreClocks,
      reconnectTimeoutFor: reconnectTimeoutOverride(opts.logger),
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
