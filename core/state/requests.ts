// The request table: exactly-once writes (Raft dissertation §6.3, "client
// sessions"). Every write that enters through an agent's RPC router carries
// a request id `[issuer, seq]`: the issuer is minted once per router (its
// epoch, then random digits), seq counts up. The FSM looks the id up before
// applying a command and answers a repeat with the first result, so a write
// that was re-sent after a leader change or a lost connection is applied
// once and its client gets the true first answer.
//
// The table is bounded, so records are dropped, and a dropped record must
// never let a repeat through. Each issuer keeps a floor: the highest seq
// dropped from it; an id at or below the floor that is not in the table is
// refused (RequestExpiredError), never applied. Issuers are dropped too
// (only once they hold no records and have been idle); the table then keeps
// the highest dropped issuer epoch, and an unknown issuer at or below it is
// refused: its router mints a new issuer above that epoch.
//
// Everything here is decided from the log alone: time is the largest
// leader-stamped wall clock seen in commands (`atMs`), so every server drops
// the same records at the same entry. Pure: no clock, no I/O.

import { CairnError, CorruptionError, RequestExpiredError } from "../errors.ts";

/** `[issuer, seq]` as it travels in RPC args and in the log. */
export type RequestId = readonly [issuer: string, seq: number];

export interface RequestTableLimits {
  /** Records kept at most (the oldest go first). Default 100,000. */
  maxEntries: number;
  /** A record is dropped this long (log time) after it was applied; a router gives up retrying long before. Default 2 min. */
  retentionMs: number;
  /** Issuers with no records are dropped after this long idle. Default 1 h. */
  issuerIdleMs: number;
  /** Issuers kept at most (idle empty ones go first). Default 50,000. */
  maxIssuers: number;
}

export const defaultRequestTableLimits: RequestTableLimits = {
  maxEntries: 100_000,
  retentionMs: 120_000,
  issuerIdleMs: 3_600_000,
  maxIssuers: 50_000,
};

/** A first result as kept: the FSM's value, or an error's code and message. */
export type StoredResult = { readonly v: unknown } | { readonly e: string; readonly c: string };

interface Entry {
  readonly issuer: string;
  readonly seq: number;
  readonly index: number;
  readonly atMs: number;
  readonly result: StoredResult;
}

interface Issuer {
  readonly epoch: number;
  floor: number;
  lastAtMs: number;
  readonly entries: Map<number, Entry>;
}

export type RequestLookup =
  | { kind: "new" }
  | { kind: "repeat"; index: number; result: unknown }
  | { kind: "expired"; error: RequestExpiredError };

const maxIssuerLength = 128;

/** A request id from peer input, or a message saying what is wrong with it. */
export function parseRequestId(raw: unknown): RequestId | string {
  if (!Array.isArray(raw) || raw.length !== 2) return "request id must be [issuer, seq]";
  const [issuer, seq] = raw as unknown[];
  if (typeof issuer !== "string" || issuer === "" || issuer.length > maxIssuerLength) return "request id issuer must be a short string";
  if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) return "request id seq must be a positive integer";
  return [issuer, seq];
}

/** The epoch an issuer was minted with (the digits before its first "-"); 0 when it has none. */
export function issuerEpoch(issuer: string): number {
  const dash = issuer.indexOf("-");
  const n = Number(dash < 0 ? issuer : issuer.slice(0, dash));
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

export function storeResult(result: unknown): StoredResult {
  if (result instanceof CairnError) return { e: result.message, c: result.code };
  if (result instanceof Error) return { e: result.message, c: "state" };
  return { v: result };
}

function loadResult(stored: StoredResult): unknown {
  return "e" in stored ? new CairnError(stored.c, stored.e) : stored.v;
}

export class RequestTable {
  readonly limits: RequestTableLimits;
  /** Insertion order = order of last use (an issuer is re-inserted when used), so the first is the idlest. */
  readonly #issuers = new Map<string, Issuer>();
  /** Records in apply order; `#head` is the oldest live one. */
  #fifo: Entry[] = [];
  #head = 0;
  #minEpoch = 0;
  #nowMs = 0;

  constructor(limits: Partial<RequestTableLimits> = {}) {
    this.limits = { ...defaultRequestTableLimits, ...limits };
  }

  get size(): number {
    return this.#fifo.length - this.#head;
  }

  get issuerCount(): number {
    return this.#issuers.size;
  }

  /** The highest epoch of a dropped issuer: an unknown issuer must be minted above it. */
  get minEpoch(): number {
    return this.#minEpoch;
  }

  /** Before applying a command with this id, at log time atMs. */
  lookup(id: RequestId, atMs: number): RequestLookup {
    this.#advance(atMs);
    this.#evict();
    const [name, seq] = id;
    const issuer = this.#issuers.get(name);
    if (!issuer) {
      const epoch = issuerEpoch(name);
      if (epoch <= this.#minEpoch) {
        return {
          kind: "expired",
          error: new RequestExpiredError(`Request issuer "${name}" is unknown and older than the request table; mint an issuer with an epoch above ${this.#minEpoch}`, this.#minEpoch),
        };
      }
      return { kind: "new" };
    }
    const e = issuer.entries.get(seq);
    if (e) return { kind: "repeat", index: e.index, result: loadResult(e.result) };
    if (seq <= issuer.floor) {
      return { kind: "expired", error: new RequestExpiredError(`Request ${name}/${seq} is older than the request table holds; it was not applied again`) };
    }
    return { kind: "new" };
  }

  /** After applying a command with this id at log index `index`. */
  record(id: RequestId, index: number, result: unknown, atMs: number): void {
    this.#advance(atMs);
    const [name, seq] = id;
    let issuer = this.#issuers.get(name);
    if (issuer) this.#issuers.delete(name);
    else issuer = { epoch: issuerEpoch(name), floor: 0, lastAtMs: 0, entries: new Map() };
    this.#issuers.set(name, issuer);
    issuer.lastAtMs = this.#nowMs;
    const entry: Entry = { issuer: name, seq, index, atMs: this.#nowMs, result: storeResult(result) };
    issuer.entries.set(seq, entry);
    this.#fifo.push(entry);
    this.#evict();
  }

  #advance(atMs: number): void {
    if (Number.isFinite(atMs) && atMs > this.#nowMs) this.#nowMs = atMs;
  }

  #evict(): void {
    const { maxEntries, retentionMs, issuerIdleMs, maxIssuers } = this.limits;
    while (this.size > maxEntries || (this.size > 0 && this.#fifo[this.#head]!.atMs < this.#nowMs - retentionMs)) {
      const e = this.#fifo[this.#head++]!;
      const issuer = this.#issuers.get(e.issuer);
      if (issuer && issuer.entries.get(e.seq) === e) {
        issuer.entries.delete(e.seq);
        if (e.seq > issuer.floor) issuer.floor = e.seq;
      }
    }
    if (this.#head > 1024 && this.#head * 2 > this.#fifo.length) {
      this.#fifo = this.#fifo.slice(this.#head);
      this.#head = 0;
    }
    for (const [name, issuer] of this.#issuers) {
      const idle = issuer.lastAtMs < this.#nowMs - issuerIdleMs;
      if (issuer.entries.size > 0 || !(idle || this.#issuers.size > maxIssuers)) break;
      this.#issuers.delete(name);
      if (issuer.epoch > this.#minEpoch) this.#minEpoch = issuer.epoch;
    }
  }

  // ---- snapshot ----

  /** The table as snapshot rows (a point-in-time copy), in the order restore needs. */
  rows(): object[] {
    const out: object[] = [{ k: "meta", minEpoch: this.#minEpoch, nowMs: this.#nowMs }];
    for (const [id, i] of this.#issuers) out.push({ k: "issuer", id, floor: i.floor, lastAtMs: i.lastAtMs });
    for (let j = this.#head; j < this.#fifo.length; j++) {
      const e = this.#fifo[j]!;
      out.push({ k: "entry", issuer: e.issuer, seq: e.seq, index: e.index, atMs: e.atMs, r: e.result });
    }
    return out;
  }

  /** Rebuild from rows(). Throws CorruptionError on a malformed row. */
  static fromRows(rows: readonly unknown[], limits: Partial<RequestTableLimits> = {}): RequestTable {
    const t = new RequestTable(limits);
    const bad = (what: string): never => {
      throw new CorruptionError(`Snapshot has a malformed request table ${what} row`);
    };
    const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
    for (const raw of rows) {
      if (typeof raw !== "object" || raw === null) bad("");
      const r = raw as Record<string, unknown>;
      if (r.k === "meta") {
        if (!num(r.minEpoch) || !num(r.nowMs)) bad("meta");
        t.#minEpoch = r.minEpoch as number;
        t.#nowMs = r.nowMs as number;
      } else if (r.k === "issuer") {
        if (typeof r.id !== "string" || !num(r.floor) || !num(r.lastAtMs)) bad("issuer");
        const id = r.id as string;
        t.#issuers.set(id, { epoch: issuerEpoch(id), floor: r.floor as number, lastAtMs: r.lastAtMs as number, entries: new Map() });
      } else if (r.k === "entry") {
        const res = r.r as Record<string, unknown> | null;
        const okResult = typeof res === "object" && res !== null && ("v" in res || (typeof res.e === "string" && typeof res.c === "string"));
        if (typeof r.issuer !== "string" || !num(r.seq) || !num(r.index) || !num(r.atMs) || !okResult) bad("entry");
        const issuer = t.#issuers.get(r.issuer as string) ?? bad("entry (unknown issuer)");
        const e: Entry = { issuer: r.issuer as string, seq: r.seq as number, index: r.index as number, atMs: r.atMs as number, result: res as StoredResult };
        issuer.entries.set(e.seq, e);
        t.#fifo.push(e);
      } else {
        bad(JSON.stringify(String(r.k)));
      }
    }
    return t;
  }
}
