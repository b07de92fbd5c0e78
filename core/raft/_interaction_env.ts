// Interaction-test world for RaftCore (etcd-io/raft `rafttest/interaction_env*.go`):
// nodes with synchronous in-memory storage, explicit message delivery, and a
// text rendering of every Ready so scripts in testdata/ pin exact behaviour.
import { CaptureSink, createLogger, formatText } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import type { ConfChange, RaftConfig, RaftReady } from "./raft.ts";
import { RaftCore } from "./raft.ts";
import type { Configuration, HardState, LogEntry, RaftMessage, SnapshotMeta } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

interface EnvNode {
  id: string;
  core: RaftCore;
  // "durable" storage
  hard?: HardState;
  entries: LogEntry[];
  snapshot?: { meta: SnapshotMeta; data: Uint8Array };
  // state machine: the applied normal entries' data
  applied: string[];
  inbox: RaftMessage[];
  isolated: boolean;
  /** A Ready whose early messages went out but which is not yet persisted (send-before-persist). */
  pending?: RaftReady;
  /** A leader's Readies advanced before their entries were durable, oldest first (write-in-background). */
  background: RaftReady[];
  sink: CaptureSink;
}

export class InteractionEnv {
  nodes = new Map<string, EnvNode>();
  #opts: Partial<RaftConfig> = {};
  #bootstrap: Configuration = { servers: [] };

  handle(cmd: string, args: Record<string, string>, pos: string[]): string {
    switch (cmd) {
      case "add-nodes":
        return this.#addNodes(Number(pos[0]), args);
      case "campaign":
        return this.#step(pos[0]!, { kind: "campaign" });
      case "propose":
        return this.#step(pos[0]!, { kind: "propose", data: enc.encode(pos[1] ?? "") });
      case "read-index":
        return this.#step(pos[0]!, { kind: "readIndex", ctx: Number(pos[1]) });
      case "transfer-leader":
        return this.#step(pos[0]!, { kind: "transferLeader", to: pos[1] });
      case "add-voter":
      case "add-nonvoter": {
        const change: ConfChange = cmd === "add-voter"
          ? { op: "addVoter", id: pos[1]!, address: `addr${pos[1]}` }
          : { op: "addNonvoter", id: pos[1]!, address: `addr${pos[1]}` };
        return this.#step(pos[0]!, { kind: "confChange", change });
      }
      case "remove-server":
        return this.#step(pos[0]!, { kind: "confChange", change: { op: "removeServer", id: pos[1]! } });
      case "tick":
        return this.#tick(pos[0]!, Number(pos[1] ?? "1"));
      case "tick-all":
        for (let i = 0; i < Number(pos[0] ?? "1"); i++) for (const id of this.nodes.keys()) this.#tick(id, 1);
        return this.#logs();
      case "send-before-persist":
        return pos.map((id) => this.#sendBeforePersist(id)).join("\n");
      case "persist":
        return pos.map((id) => this.#finishPending(id)).join("\n");
      case "write-in-background":
        return pos.map((id) => this.#writeInBackground(id)).join("\n");
      case "finish-background":
        return pos.map((id) => this.#finishBackground(id)).join("\n");
      case "process-ready":
        return pos.map((id) => this.#processReady(id)).join("\n");
      case "deliver-msgs":
        return pos.map((id) => this.#deliver(id, args.drop ? args.drop.split(",") : [])).join("\n");
      case "stabilize":
        return this.#stabilize(pos.length > 0 ? pos : [...this.nodes.keys()]);
      case "isolate":
        this.#node(pos[0]!).isolated = true;
        return "ok";
      case "heal":
        for (const n of this.nodes.values()) n.isolated = false;
        return "ok";
      case "snapshot":
        return this.#snapshot(pos[0]!);
      case "restart":
        return this.#restart(pos[0]!);
      case "status":
        return pos.map((id) => this.#status(id)).join("\n");
      case "raft-log":
        return this.#node(pos[0]!).core.entriesFrom(0, Infinity).map(renderEntry).join("\n") || "(empty)";
      case "applied":
        return pos.map((id) => `${id}: [${this.#node(id).applied.join(" ")}]`).join("\n");
      case "notify-commit":
        return this.#step(pos[0]!, { kind: "notifyCommit" });
      case "needs-commit-notify":
        return pos.map((id) => `${id}: needsCommitNotify=${this.#node(id).core.needsCommitNotify()}`).join("\n");
      case "lease":
        return pos.map((id) => `${id}: lease=${this.#node(id).core.hasLease()}`).join("\n");
      default:
        throw new Error(`Unknown command "${cmd}"`);
    }
  }

  #node(id: string): EnvNode {
    const n = this.nodes.get(id);
    if (!n) throw new Error(`Unknown node "${id}"`);
    return n;
  }

  #addNodes(count: number, args: Record<string, string>): string {
    this.#opts = {
      electionTicks: Number(args.election ?? 10),
      heartbeatTicks: Number(args.heartbeat ?? 1),
      preVote: args.prevote !== "false",
      checkQuorum: args.checkquorum !== "false",
      maxInflight: Number(args.inflight ?? 4),
      maxEntriesPerMsg: Number(args.maxentries ?? 16),
      snapshotChunkBytes: Number(args.chunk ?? 16),
      trailingLogs: Number(args.trailing ?? 0),
      lazyCommit: args.lazycommit === "true",
    };
    const voters = args.voters ? Number(args.voters) : count;
    const start = this.nodes.size + 1;
    if (this.nodes.size === 0) {
      const servers = [];
      for (let i = 1; i <= voters; i++) servers.push({ id: String(i), address: `addr${i}`, suffrage: "voter" as const });
      this.#bootstrap = { servers };
    }
    const out: string[] = [];
    for (let i = start; i < start + count; i++) {
      const id = String(i);
      const joining = this.nodes.size >= voters;
      const node: EnvNode = { id, core: undefined as unknown as RaftCore, entries: [], applied: [], inbox: [], isolated: false, sink: new CaptureSink(), background: [] };
      node.core = this.#makeCore(node, joining ? { servers: [] } : this.#bootstrap);
      this.nodes.set(id, node);
      out.push(`${id}: ${renderSoft(node.core)}`);
    }
    return out.join("\n");
  }

  #makeCore(node: EnvNode, bootstrap: Configuration): RaftCore {
    const logger = createLogger({ sink: node.sink, level: "info", name: node.id, now: () => 0 });
    return new RaftCore(
      { id: node.id, ...this.#opts, logger },
      { hardState: node.hard, snapshot: node.snapshot, entries: node.entries, bootstrap },
      new Rng(Number(node.id)),
    );
  }

  #step(id: string, input: Parameters<RaftCore["step"]>[0]): string {
    const r = this.#node(id).core.step(input);
    const res = r.ok ? (r.index !== undefined ? `ok index=${r.index}` : "ok") : `rejected: ${r.reason}`;
    const logs = this.#logs();
    return logs ? `${res}\n${logs}` : res;
  }

  #tick(id: string, n: number): string {
    for (let i = 0; i < n; i++) this.#node(id).core.step({ kind: "tick" });
    return this.#logs();
  }

  #logs(): string {
    const lines: string[] = [];
    for (const n of this.nodes.values()) {
      for (const r of n.sink.records) lines.push(formatText(r).replace(/^\S+ /, ""));
      n.sink.clear();
    }
    return lines.join("\n");
  }

  #processReady(id: string): string {
    const n = this.#node(id);
    const prior = n.pending ? `${this.#finishPending(id)}\n` : "";
    if (!n.core.hasReady()) return `${prior}${id}: (no ready)`;
    const rd = n.core.ready();
    this.#persist(n, rd);
    this.#send(n, rd.messages);
    for (const e of rd.committed) if (e.type === "normal") n.applied.push(dec.decode(e.data));
    n.core.advance(rd);
    const logs = this.#logs();
    return prior + renderReady(id, rd) + (logs ? `\n${logs}` : "");
  }

  /** Take a Ready and send only what may go out before it is durable (a driver's step 0); `persist` finishes it. */
  #sendBeforePersist(id: string): string {
    const n = this.#node(id);
    if (n.pending) return `${id}: a Ready is already waiting to be persisted`;
    if (!n.core.hasReady()) return `${id}: (no ready)`;
    const rd = n.core.ready();
    n.pending = rd;
    const early = rd.messages.slice(0, rd.sendBeforePersist);
    this.#send(n, early);
    const lines = [`Ready ${id}: ${rd.softState.role} term=${rd.softState.term} (not yet persisted)`];
    if (rd.entries.length) lines.push(`Entries:`, ...rd.entries.map((e) => `  ${renderEntry(e)}`));
    lines.push(`Sent before persisting:`, ...(early.length ? early.map((m) => `  ${renderMsg(m)}`) : ["  (none)"]));
    const late = rd.messages.slice(rd.sendBeforePersist);
    if (late.length) lines.push(`Held until persisted:`, ...late.map((m) => `  ${renderMsg(m)}`));
    return lines.join("\n");
  }

  /**
   * A driver with asyncLeaderAppend: take a leader's Ready, send and apply
   * it and advance at once, while its entries are still being written;
   * `finish-background` completes the oldest such write.
   */
  #writeInBackground(id: string): string {
    const n = this.#node(id);
    if (n.pending) return `${id}: a Ready is already waiting to be persisted`;
    if (!n.core.hasReady()) return `${id}: (no ready)`;
    const rd = n.core.ready();
    if (rd.softState.role !== "leader" || rd.snapshot || rd.hardState || rd.sendBeforePersist !== rd.messages.length) {
      this.#persist(n, rd);
      this.#send(n, rd.messages);
      for (const e of rd.committed) if (e.type === "normal") n.applied.push(dec.decode(e.data));
      n.core.advance(rd);
      return `${renderReady(id, rd)}\n(not eligible: persisted before going on)`;
    }
    this.#send(n, rd.messages);
    for (const e of rd.committed) if (e.type === "normal") n.applied.push(dec.decode(e.data));
    n.core.advance(rd, { entriesDurable: false });
    if (rd.entries.length > 0) n.background.push(rd);
    const logs = this.#logs();
    return `${renderReady(id, rd)}\n(entries writing in the background)` + (logs ? `\n${logs}` : "");
  }

  #finishBackground(id: string): string {
    const n = this.#node(id);
    const rd = n.background.shift();
    if (!rd) return `${id}: no background write`;
    this.#persist(n, rd);
    n.core.step({ kind: "persisted", entries: rd.entries });
    const logs = this.#logs();
    return `${id}: background write durable up to ${rd.entries[rd.entries.length - 1]!.index}` + (logs ? `\n${logs}` : "");
  }

  #finishPending(id: string): string {
    const n = this.#node(id);
    const rd = n.pending;
    if (!rd) return `${id}: nothing to persist`;
    n.pending = undefined;
    this.#persist(n, rd);
    this.#send(n, rd.messages.slice(rd.sendBeforePersist));
    for (const e of rd.committed) if (e.type === "normal") n.applied.push(dec.decode(e.data));
    n.core.advance(rd);
    const logs = this.#logs();
    return `${id}: persisted${rd.entries.length ? ` up to ${rd.entries[rd.entries.length - 1]!.index}` : ""}` + (logs ? `\n${logs}` : "");
  }

  #send(n: EnvNode, msgs: RaftMessage[]): void {
    for (const m of msgs) {
      const to = this.nodes.get(m.to);
      if (to && !n.isolated && !to.isolated) to.inbox.push(m);
    }
  }

  #persist(n: EnvNode, rd: RaftReady): void {
    if (rd.snapshot) {
      n.snapshot = rd.snapshot as { meta: SnapshotMeta; data: Uint8Array };
      n.entries = [];
      n.applied = JSON.parse(dec.decode(rd.snapshot.data!)) as string[];
    }
    if (rd.hardState) n.hard = rd.hardState;
    if (rd.entries.length > 0) {
      const first = rd.entries[0]!.index;
      n.entries = n.entries.filter((e) => e.index < first).concat(rd.entries);
    }
    n.hard = { ...(n.hard ?? { term: 0, vote: "" }), commit: n.core.commitIndex } as HardState;
  }

  #deliver(id: string, drop: string[]): string {
    const n = this.#node(id);
    const msgs = n.inbox;
    n.inbox = [];
    const out: string[] = [];
    for (const m of msgs) {
      if (drop.includes(m.from)) {
        out.push(`dropped: ${renderMsg(m)}`);
        continue;
      }
      out.push(renderMsg(m));
      n.core.step({ kind: "message", msg: m });
    }
    const logs = this.#logs();
    if (logs) out.push(logs);
    return out.join("\n") || `${id}: (no messages)`;
  }

  #stabilize(ids: string[]): string {
    const out: string[] = [];
    for (let round = 0; round < 100; round++) {
      let busy = false;
      for (const id of ids) {
        if (this.#node(id).core.hasReady() || this.#node(id).pending) {
          busy = true;
          out.push(`> ${id} handling Ready`);
          out.push(indent(this.#processReady(id)));
        }
      }
      for (const id of ids) {
        if (this.#node(id).inbox.length > 0) {
          busy = true;
          out.push(`> ${id} receiving messages`);
          out.push(indent(this.#deliver(id, [])));
        }
      }
      if (!busy) break;
    }
    return out.join("\n");
  }

  #snapshot(id: string): string {
    const n = this.#node(id);
    const index = n.core.appliedIndex;
    const term = n.core.termAt(index) ?? 0;
    const data = enc.encode(JSON.stringify(n.applied));
    const meta: SnapshotMeta = { index, term, configuration: n.core.configurationAt(index), sizeBytes: data.length };
    const r = n.core.step({ kind: "snapshotDone", meta, data });
    if (r.ok) {
      n.snapshot = { meta, data };
      n.entries = n.entries.filter((e) => e.index > n.core.compactedIndex);
    }
    return r.ok ? `snapshot index=${index} term=${term} size=${data.length} compacted=${n.core.compactedIndex}` : `rejected: ${r.reason}`;
  }

  #restart(id: string): string {
    const n = this.#node(id);
    n.inbox = [];
    // A crash: whatever was not persisted (a pending Ready, background writes) is lost.
    n.pending = undefined;
    n.background = [];
    n.applied = n.snapshot ? (JSON.parse(dec.decode(n.snapshot.data)) as string[]) : [];
    n.core = this.#makeCore(n, this.#bootstrap);
    return `${id}: ${renderSoft(n.core)}`;
  }

  #status(id: string): string {
    const c = this.#node(id).core;
    const lines = [`${id}: ${renderSoft(c)} commit=${c.commitIndex} applied=${c.appliedIndex} last=${c.lastIndex}`];
    if (c.isLeader()) {
      for (const s of c.configuration().servers) {
        const p = c.progressOf(s.id);
        if (p) lines.push(`  ${s.id}: ${p.state} match=${p.match} next=${p.next}`);
      }
    }
    return lines.join("\n");
  }
}

function indent(s: string): string {
  return s.split("\n").map((l) => `  ${l}`).join("\n");
}

function renderSoft(c: RaftCore): string {
  return `${c.role} term=${c.term}${c.leader ? ` leader=${c.leader}` : ""}`;
}

function renderData(e: LogEntry): string {
  if (e.type === "noop") return "noop";
  if (e.type === "config") return "config";
  return JSON.stringify(dec.decode(e.data));
}

function renderEntry(e: LogEntry): string {
  return `${e.term}/${e.index} ${renderData(e)}`;
}

export function renderMsg(m: RaftMessage): string {
  const h = `${m.from}->${m.to} ${m.type} term=${m.term}`;
  switch (m.type) {
    case "vote":
      return `${h}${m.pre ? " pre" : ""}${m.transfer ? " transfer" : ""} last=${m.lastTerm}/${m.lastIndex}`;
    case "voteResp":
      return `${h}${m.pre ? " pre" : ""} ${m.granted ? "granted" : "rejected"}`;
    case "append":
      return `${h} prev=${m.prevTerm}/${m.prevIndex} commit=${m.commit}${m.entries.length ? ` entries=[${m.entries.map(renderEntry).join(", ")}]` : ""}`;
    case "appendResp":
      return m.reject
        ? `${h} reject index=${m.index} hint=${m.hintTerm}/${m.rejectHint}`
        : `${h} index=${m.index}`;
    case "heartbeat":
      return `${h} commit=${m.commit} ctx=${m.ctx}`;
    case "heartbeatResp":
      return `${h} ctx=${m.ctx}`;
    case "snapshot":
      return `${h} snap=${m.meta.term}/${m.meta.index} offset=${m.offset} len=${m.chunk.length}${m.done ? " done" : ""}`;
    case "snapshotResp":
      return `${h} snap=${m.index} offset=${m.offset}${m.reject ? " reject" : ""}`;
    case "timeoutNow":
      return h;
    case "prefetch":
      return `${h} id=${m.id} offset=${m.offset} len=${m.chunk.length}${m.total !== undefined ? ` total=${m.total}` : ""}`;
    case "prefetchResp":
      return `${h} id=${m.id} offset=${m.offset}`;
  }
}

function renderReady(id: string, rd: RaftReady): string {
  const lines = [`Ready ${id}: ${rd.softState.role} term=${rd.softState.term}${rd.softState.leader ? ` leader=${rd.softState.leader}` : ""}`];
  if (rd.hardState) lines.push(`HardState term=${rd.hardState.term} vote=${rd.hardState.vote || "-"} commit=${rd.hardState.commit}`);
  if (rd.snapshot) lines.push(`Snapshot ${rd.snapshot.meta.term}/${rd.snapshot.meta.index} size=${rd.snapshot.meta.sizeBytes}`);
  if (rd.entries.length) lines.push(`Entries:`, ...rd.entries.map((e) => `  ${renderEntry(e)}`));
  if (rd.committed.length) lines.push(`Committed:`, ...rd.committed.map((e) => `  ${renderEntry(e)}`));
  if (rd.messages.length) lines.push(`Messages:`, ...rd.messages.map((m) => `  ${renderMsg(m)}`));
  if (rd.readStates.length) lines.push(`ReadStates:`, ...rd.readStates.map((r) => `  ctx=${r.ctx} index=${r.index}${r.ok ? "" : " failed"}`));
  return lines.join("\n");
}
