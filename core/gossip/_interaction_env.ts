// Worlds for the gossip interaction scripts in testdata/*.txt (run by
// interaction_test.ts through core/testing/datadriven.ts), as
// etcd-io/raft's `rafttest/interaction_env*.go` is for Raft:
//
// SwimStepWorld: SwimCores stepped by hand. Nothing moves unless a command
// moves it: `tick` advances every node's clock, `deliver` hands over the
// queued messages until none are left, all at that same instant.
//   add-nodes N          nodes n1..nN at 10.0.0.i:7946 (fixed seeds)
//   join A B             nA joins through nB
//   tick MS              advance every live node's clock by MS and tick it
//   deliver [drop=N,…]   deliver queued messages until quiet; drop those to/from listed nodes
//   crash N / revive N   stop / resume delivering to and from nN
//   members N            nN's member list
//
// SerfSimWorld: SerfCores (over their SwimCores) with GossipDrivers on one
// SimClock and two SimNetworks (UDP, TCP), every link 1 ms, all randomness
// from one Rng: the nodes run on their own timers, as agents do. `run`
// advances virtual time and prints what arrived where, the Serf events and
// the gossip logs, each line stamped with the virtual time in seconds.
//   add-nodes N [seed=S]   start nodes up to nN (n1..nN at 10.0.0.i:7946)
//   join A B               nA joins through nB
//   run MS [show=…] [from=…]
//                          advance MS virtual ms; show= keeps only these kinds
//                          (ping indirect-ping ack nack alive suspect dead
//                          join-intent leave-intent user-event push-pull err,
//                          probe = ping…nack, gossip = alive…user-event,
//                          events, logs); from= only what these nodes sent
//   members A              nA's Serf member list with memberlist incarnations
//   queued A               how many memberlist broadcasts nA has queued
//   isolate-udp A / heal   no datagram reaches or leaves nA / undo both commands
//   drop-gossip K,… about=X to=Y
//                          datagram parts of kinds K (alive, join-intent, …)
//                          about nX are lost on their way to nY, marked (lost)
import { CaptureSink, createLogger } from "../log/mod.ts";
import type { LogRecord } from "../log/mod.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { SimNetwork } from "../sim/sim_network.ts";
import type { TestData } from "../testing/datadriven.ts";
import { GossipDriver, identityCodec } from "./driver.ts";
import type { GossipTransport, StreamResult } from "./driver.ts";
import { lanProfile } from "./profiles.ts";
import { SerfCore } from "./serf.ts";
import type { SerfEvent, SerfInput, SerfMsg, SerfTypes } from "./serf.ts";
import { simTransport } from "./sim_transport.ts";
import type { SimEnvelope } from "./sim_transport.ts";
import { SwimCore } from "./swim.ts";
import type { BytesGossipTypes, GossipTypes, SwimEvent, SwimMessage, SwimSend } from "./swim.ts";

/** What a script's world answers: one command in, its output out. */
export interface GossipWorld {
  handle(d: TestData): string;
}

// -----------------------------------------------------------------------------
// Rendering

/** One message as a line; `user` renders the layer above's messages. */
function render<T extends GossipTypes>(m: SwimMessage<T>, user: (u: T["user"]) => string): string {
  switch (m.type) {
    case "ping": return `ping seq=${m.seqNo} node=${m.node}`;
    case "indirectPing": return `indirect-ping seq=${m.seqNo} node=${m.node}${m.nack ? " nack" : ""}`;
    case "ack": return `ack seq=${m.seqNo}`;
    case "nack": return `nack seq=${m.seqNo}`;
    case "alive": return `alive ${m.node} inc=${m.incarnation}`;
    case "suspect": return `suspect ${m.node} inc=${m.incarnation} from=${m.from}`;
    case "dead": return `dead ${m.node} inc=${m.incarnation} from=${m.from}`;
    case "user": return user(m.msg);
    case "err": return `err ${m.error}`;
    case "pushPull": return `push-pull${m.join ? " join" : ""} [${m.nodes.map((n) => `${n.name}:${n.state}:${n.incarnation}`).sort().join(" ")}]`;
    case "compound": return `[${m.parts.map((p) => render(p, user)).join(", ")}]`;
  }
}

function renderSerfMsg(m: SerfMsg): string {
  switch (m.type) {
    case "join": return `join-intent ${m.body.node} lt=${m.body.lTime}`;
    case "leave": return `leave-intent ${m.body.node} lt=${m.body.lTime}${m.body.prune ? " prune" : ""}`;
    case "userEvent": return `user-event ${m.body.name} lt=${m.body.lTime}`;
    case "query": return `query ${m.body.name} lt=${m.body.lTime}`;
    case "queryResponse": return `query-response lt=${m.body.lTime} from=${m.body.from}`;
    case "relay": return `relay to=${m.destName}`;
  }
}

// -----------------------------------------------------------------------------
// SwimStepWorld

interface Pending {
  from: string;
  send: SwimSend<BytesGossipTypes>;
  /** For a stream reply: the requester's request id. */
  replyFor?: number;
}

const renderBytes = (m: SwimMessage<BytesGossipTypes>) => render<BytesGossipTypes>(m, (u) => `user ${u.length} bytes`);

function renderSwimEvent(e: SwimEvent<BytesGossipTypes>): string {
  switch (e.kind) {
    case "join": case "leave": case "update": return `${e.kind} ${e.member.name} ${e.member.state} inc=${e.member.incarnation}`;
    case "joinDone": return `joinDone contacted=${e.contacted}${e.errors.length ? ` errors=${e.errors.join("; ")}` : ""}`;
    default: return e.kind;
  }
}

/** A whole number argument, or a TypeError naming it. */
function count(word: string | undefined): number {
  const n = Number(word);
  if (word === undefined || !Number.isSafeInteger(n) || n < 0) throw new TypeError(`Expected a whole number, got "${word ?? ""}"`);
  return n;
}

/** A numeric node argument names node n<i>. */
const nodeName = (a: string) => (/^\d+$/.test(a) ? `n${a}` : a);

export class SwimStepWorld implements GossipWorld {
  now = 0;
  nodes = new Map<string, SwimCore<BytesGossipTypes>>();
  byAddr = new Map<string, string>();
  crashed = new Set<string>();
  pending: Pending[] = [];
  out: string[] = [];

  handle(d: TestData): string {
    this.out = [];
    const args = d.cmd === "add-nodes" || d.cmd === "tick" ? d.args : d.args.map(nodeName);
    switch (d.cmd) {
      case "add-nodes": {
        const n = Number(args[0]);
        for (let i = this.nodes.size + 1; this.nodes.size < n; i++) {
          const name = `n${i}`;
          const addr = `10.0.0.${i}:7946`;
          this.nodes.set(name, new SwimCore<BytesGossipTypes>({
            name, addr, meta: new Uint8Array(), profile: lanProfile, rng: new Rng(i), now: this.now,
            logger: createLogger({ sink: new CaptureSink() }),
          }));
          this.byAddr.set(addr, name);
          this.#collect(name);
        }
        break;
      }
      case "join":
        this.#core(args[0]!).step({ kind: "join", now: this.now, addrs: [this.#core(args[1]!).addr] });
        this.#collect(args[0]!);
        break;
      case "tick":
        this.now += Number(args[0]);
        for (const [name, core] of this.nodes) {
          if (this.crashed.has(name)) continue;
          core.step({ kind: "tick", now: this.now });
          this.#collect(name);
        }
        break;
      case "deliver": {
        const drop = new Set((d.kv.drop ?? "").split(",").filter(Boolean).map(nodeName));
        for (let round = 0; round < 20 && this.pending.length > 0; round++) {
          const batch = this.pending;
          this.pending = [];
          for (const p of batch) this.#deliverOne(p, drop);
        }
        break;
      }
      case "crash":
        this.crashed.add(args[0]!);
        break;
      case "revive":
        this.crashed.delete(args[0]!);
        break;
      case "members":
        for (const m of this.#core(args[0]!).members().sort((a, b) => a.name.localeCompare(b.name))) {
          this.out.push(`${m.name} ${m.state} inc=${m.incarnation}`);
        }
        break;
      default:
        throw new Error(`Unknown command "${d.cmd}"`);
    }
    return this.out.join("\n");
  }

  #core(name: string): SwimCore<BytesGossipTypes> {
    const core = this.nodes.get(name);
    if (!core) throw new Error(`No node "${name}"`);
    return core;
  }

  #deliverOne(p: Pending, drop: Set<string>): void {
    const to = this.byAddr.get(p.send.to) ?? p.send.to;
    const how = p.send.reliable ? (p.replyFor !== undefined ? " (tcp reply)" : " (tcp)") : "";
    const lost = drop.has(to) || drop.has(p.from) || this.crashed.has(to) || this.crashed.has(p.from);
    this.out.push(`${p.from} -> ${to}${how}: ${renderBytes(p.send.msg)}${lost ? "  DROPPED" : ""}`);
    const core = this.nodes.get(to);
    if (lost || !core) {
      if (p.send.requestId !== undefined) {
        this.#core(p.from).step({ kind: "streamError", now: this.now, requestId: p.send.requestId, error: "connection refused" });
        this.#collect(p.from);
      }
      return;
    }
    const from = this.#core(p.from).addr;
    if (p.replyFor !== undefined) {
      core.step({ kind: "stream", now: this.now, from, msg: p.send.msg, requestId: p.replyFor });
    } else if (p.send.reliable) {
      core.step({ kind: "stream", now: this.now, from, msg: p.send.msg, streamId: 1 });
    } else {
      core.step({ kind: "packet", now: this.now, from, msg: p.send.msg });
    }
    const rd = core.ready();
    for (const s of rd.sends) {
      if (s.replyTo !== undefined) this.pending.push({ from: to, send: { ...s, to: from }, replyFor: p.send.requestId });
      else this.pending.push({ from: to, send: s });
    }
    for (const e of rd.events) this.out.push(`${to} event ${renderSwimEvent(e)}`);
  }

  #collect(name: string): void {
    const rd = this.#core(name).ready();
    for (const s of rd.sends) this.pending.push({ from: name, send: s });
    for (const e of rd.events) this.out.push(`${name} event ${renderSwimEvent(e)}`);
  }
}

// -----------------------------------------------------------------------------
// SerfSimWorld

type SerfWire = SwimMessage<SerfTypes>;

const kindGroups: Record<string, string[]> = {
  probe: ["ping", "indirect-ping", "ack", "nack"],
  gossip: ["alive", "suspect", "dead", "join-intent", "leave-intent", "user-event"],
};

/** The show= name of one (non-compound) message. */
function kindOf(m: SerfWire): string {
  switch (m.type) {
    case "indirectPing": return "indirect-ping";
    case "pushPull": return "push-pull";
    case "user":
      switch (m.msg.type) {
        case "join": return "join-intent";
        case "leave": return "leave-intent";
        case "userEvent": return "user-event";
        default: return "query";
      }
    default: return m.type;
  }
}

/** The member a gossip message is about, if it is one. */
function aboutOf(m: SerfWire): string | undefined {
  switch (m.type) {
    case "alive": case "suspect": case "dead": return m.node;
    case "user": return m.msg.type === "join" || m.msg.type === "leave" ? m.msg.body.node : undefined;
    default: return undefined;
  }
}

const renderSerfWire = (m: SerfWire) => render<SerfTypes>(m, renderSerfMsg);

function renderSerfEvent(e: SerfEvent): string {
  switch (e.kind) {
    case "member": return `member-${e.type} ${e.members.map((m) => m.name).sort().join(" ")}`;
    case "joinDone": return `joinDone contacted=${e.contacted}${e.errors.length ? ` errors=${e.errors.join("; ")}` : ""}`;
    case "user": return `user-event ${e.name} lt=${e.lTime}`;
    case "error": return `error ${e.input}: ${e.message}`;
    default: return e.kind;
  }
}

interface SimNode {
  name: string;
  addr: string;
  serf: SerfCore;
  driver: GossipDriver<SerfTypes, SerfInput, SerfEvent, SerfWire>;
}

/** What a `run` prints: kinds (undefined: all) and senders (undefined: all). */
interface Filter {
  kinds?: Set<string>;
  from?: Set<string>;
}

export class SerfSimWorld implements GossipWorld {
  #clock = new SimClock();
  #rng: Rng | undefined;
  #udp: SimNetwork<SimEnvelope<SerfWire>> | undefined;
  #tcp: SimNetwork<SimEnvelope<SerfWire>> | undefined;
  #nodes = new Map<string, SimNode>();
  #byAddr = new Map<string, string>();
  /** "kind about>to": datagram parts of that kind about node `about` are lost on their way to `to`. */
  #lost = new Set<string>();
  #filter: Filter = {};
  #out: string[] = [];

  handle(d: TestData): string {
    this.#out = [];
    const allowed = { "add-nodes": ["seed"], run: ["show", "from"], "drop-gossip": ["about", "to"] }[d.cmd] ?? [];
    const unknown = Object.keys(d.kv).filter((k) => !allowed.includes(k));
    if (unknown.length > 0) throw new Error(`Unknown option "${unknown[0]}" for "${d.cmd}"`);
    const args = d.args.map(nodeName);
    switch (d.cmd) {
      case "add-nodes":
        this.#addNodes(count(d.args[0]), count(d.kv.seed ?? "1"));
        break;
      case "join":
        this.#node(args[0]!).driver.input({ kind: "join", addrs: [this.#node(args[1]!).addr] });
        break;
      case "run": {
        const list = (s: string | undefined) => (s === undefined ? undefined : s.split(","));
        const kinds = list(d.kv.show)?.flatMap((k) => kindGroups[k] ?? [k]);
        const from = list(d.kv.from)?.map(nodeName);
        this.#filter = { kinds: kinds && new Set(kinds), from: from && new Set(from) };
        try {
          this.#clock.advance(count(d.args[0]));
        } finally {
          this.#filter = {};
        }
        break;
      }
      case "members":
        for (const m of this.#node(args[0]!).serf.members().sort((a, b) => a.name.localeCompare(b.name))) {
          const inc = this.#node(args[0]!).serf.swim.member(m.name)?.incarnation;
          this.#out.push(`${m.name} ${m.status} inc=${inc ?? "-"}`);
        }
        break;
      case "queued":
        this.#out.push(`${args[0]} queued=${this.#node(args[0]!).serf.swim.queuedBroadcasts}`);
        break;
      case "isolate-udp":
        this.#net().udp.isolate(this.#node(args[0]!).addr);
        break;
      case "heal":
        this.#net().udp.heal();
        this.#lost.clear();
        break;
      case "drop-gossip": {
        const about = this.#node(nodeName(d.kv.about ?? "")).name;
        const to = this.#node(nodeName(d.kv.to ?? "")).name;
        for (const kind of (d.args[0] ?? "").split(",").flatMap((k) => kindGroups[k] ?? [k])) this.#lost.add(`${kind} ${about}>${to}`);
        break;
      }
      default:
        throw new Error(`Unknown command "${d.cmd}"`);
    }
    return this.#out.join("\n");
  }

  #net(): { udp: SimNetwork<SimEnvelope<SerfWire>>; tcp: SimNetwork<SimEnvelope<SerfWire>> } {
    if (!this.#udp || !this.#tcp) throw new Error("No nodes yet: add-nodes first");
    return { udp: this.#udp, tcp: this.#tcp };
  }

  #node(name: string): SimNode {
    const n = this.#nodes.get(name);
    if (!n) throw new Error(`No node "${name}"`);
    return n;
  }

  #addNodes(n: number, seed: number): void {
    if (!this.#rng) {
      this.#rng = new Rng(seed);
      this.#udp = new SimNetwork(this.#clock, this.#rng.fork(), { delayMs: [1, 1] });
      this.#tcp = new SimNetwork(this.#clock, this.#rng.fork(), { delayMs: [1, 1] });
    }
    const rng = this.#rng;
    const { udp, tcp } = this.#net();
    for (let i = this.#nodes.size + 1; this.#nodes.size < n; i++) {
      const name = `n${i}`;
      const addr = `10.0.0.${i}:7946`;
      const sink = { write: (r: LogRecord) => this.#log(name, r) };
      const logger = createLogger({ sink, level: "debug", now: () => this.#clock.now() });
      const serf = new SerfCore({ name, addr, profile: lanProfile, rng: rng.fork(), logger, now: this.#clock.now(), wallOffsetMs: 0 });
      this.#nodes.set(name, {
        name,
        addr,
        serf,
        driver: new GossipDriver<SerfTypes, SerfInput, SerfEvent, SerfWire>({
          core: serf,
          clock: this.#clock,
          transport: this.#traced(name, simTransport<SerfWire>(this.#clock, udp, tcp, addr)),
          codec: identityCodec<SerfTypes>(),
          logger,
          onEvent: (e) => this.#print(name, "events", () => `${name} event ${renderSerfEvent(e)}`),
        }),
      });
      this.#byAddr.set(addr, name);
      this.#node(name).driver.start();
    }
  }

  /** The sim transport, printing what arrives (and dropping what drop-gossip loses). */
  #traced(name: string, inner: GossipTransport<SerfWire>): GossipTransport<SerfWire> {
    const nameOf = (addr: string) => this.#byAddr.get(addr) ?? addr;
    return {
      localAddr: inner.localAddr,
      sendPacket: (to, msg) => inner.sendPacket(to, msg),
      sendStream: (to, msg, opts, onResult) => {
        inner.sendStream(to, msg, opts, (r: StreamResult<SerfWire>) => {
          if (!r.ok) this.#print(name, "err", () => `${name} -x ${nameOf(to)} (tcp): ${r.error}`);
          else if (r.reply) this.#trace(nameOf(to), name, " (tcp reply)", r.reply);
          onResult(r);
        });
      },
      listen: (h) => inner.listen({
        onPacket: (from, msg) => {
          const kept = this.#lose(nameOf(from), name, msg);
          if (kept) h.onPacket(from, kept);
        },
        onStream: (from, msg) => {
          this.#trace(nameOf(from), name, " (tcp)", msg);
          return h.onStream(from, msg);
        },
      }),
      close: () => inner.close(),
    };
  }

  /** Print a datagram (lost parts marked) and return what is left of it. */
  #lose(from: string, to: string, msg: SerfWire): SerfWire | undefined {
    const parts = msg.type === "compound" ? msg.parts : [msg];
    const lost = (p: SerfWire) => {
      const about = aboutOf(p);
      return about !== undefined && this.#lost.has(`${kindOf(p)} ${about}>${to}`);
    };
    const kept = parts.filter((p) => !lost(p));
    this.#trace(from, to, "", msg, lost);
    if (kept.length === parts.length) return msg;
    if (kept.length === 0) return undefined;
    return kept.length === 1 ? kept[0] : { type: "compound", parts: kept };
  }

  /** One arrival: only the parts the filter keeps; nothing if none. */
  #trace(from: string, to: string, how: string, msg: SerfWire, lost: (p: SerfWire) => boolean = () => false): void {
    const f = this.#filter;
    if (f.from && !f.from.has(from)) return;
    const parts = (msg.type === "compound" ? msg.parts : [msg]).filter((p) => !f.kinds || f.kinds.has(kindOf(p)));
    if (parts.length === 0) return;
    const text = parts.map((p) => `${renderSerfWire(p)}${lost(p) ? " (lost)" : ""}`);
    this.#emit(`${from} -> ${to}${how}: ${parts.length === 1 ? text[0] : `[${text.join(", ")}]`}`);
  }

  #log(name: string, r: LogRecord): void {
    const fields = Object.entries(r.fields).map(([k, v]) => ` ${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join("");
    this.#print(name, "logs", () => `${name} ${r.level}: ${r.message}${fields}`);
  }

  #print(node: string, kind: string, line: () => string): void {
    const f = this.#filter;
    if ((f.kinds && !f.kinds.has(kind)) || (f.from && !f.from.has(node))) return;
    this.#emit(line());
  }

  #emit(line: string): void {
    this.#out.push(`${(this.#clock.now() / 1000).toFixed(3)}s ${line}`);
  }
}
