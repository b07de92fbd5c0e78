// /v1/kv and /v1/txn, as consul api/kv.go and api/txn.go.
import { decodeBase64, encodeBase64 } from "./base64.ts";
import type { ApiClient, QueryMeta, QueryOptions, WriteOptions } from "./client.ts";
import { parseJsonExact, stringifyExact, toUint64, type Uint64 } from "./uint64_json.ts";

/** A key as the agent returns it, with Value decoded from base64 (null when the key has no value). */
export interface KVPair {
  Key: string;
  CreateIndex: number;
  ModifyIndex: number;
  LockIndex: number;
  /** A uint64: a bigint when above 2^53 (Terraform's and Consul's lock flags are). */
  Flags: Uint64;
  Value: Uint8Array | null;
  Session?: string;
}

export interface KvPutOptions extends WriteOptions {
  flags?: Uint64;
  /** Check-and-set: write only if ModifyIndex equals this (0: only if the key does not exist). */
  cas?: number;
  /** Acquire the lock with this session. */
  acquire?: string;
  /** Release the lock held by this session. */
  release?: string;
}

export interface KvDeleteOptions extends WriteOptions {
  recurse?: boolean;
  cas?: number;
}

export type KvTxnVerb =
  | "set"
  | "cas"
  | "lock"
  | "unlock"
  | "get"
  | "get-tree"
  | "check-index"
  | "check-session"
  | "check-not-exists"
  | "delete"
  | "delete-tree"
  | "delete-cas";

export interface KvTxnOp {
  Verb: KvTxnVerb;
  Key: string;
  Value?: Uint8Array;
  Flags?: Uint64;
  Index?: number;
  Session?: string;
}

export interface TxnError {
  OpIndex: number;
  What: string;
}

export interface TxnResponse {
  /** False when the server rolled the transaction back (HTTP 409). */
  ok: boolean;
  results: KVPair[];
  errors: TxnError[];
}

/** Path-escape a KV key segment by segment, keeping "/" (Go's url.URL.EscapedPath). */
export function escapeKey(key: string): string {
  return key.split("/").map(encodeURIComponent).join("/");
}

interface WireKVPair {
  Key?: unknown;
  CreateIndex?: unknown;
  ModifyIndex?: unknown;
  LockIndex?: unknown;
  Flags?: unknown;
  Value?: unknown;
  Session?: unknown;
}

function num(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/** Decode one wire pair; a value that is not base64 is a protocol error. */
export function decodeKVPair(w: WireKVPair): KVPair {
  let value: Uint8Array | null = null;
  if (typeof w.Value === "string") {
    const bytes = decodeBase64(w.Value);
    if (!bytes) throw new TypeError(`Invalid base64 value for key "${String(w.Key)}"`);
    value = bytes;
  }
  const pair: KVPair = {
    Key: typeof w.Key === "string" ? w.Key : "",
    CreateIndex: num(w.CreateIndex),
    ModifyIndex: num(w.ModifyIndex),
    LockIndex: num(w.LockIndex),
    Flags: toUint64(w.Flags) ?? 0,
    Value: value,
  };
  if (typeof w.Session === "string" && w.Session !== "") pair.Session = w.Session;
  return pair;
}

function parseJson(text: string, what: string): unknown {
  try {
    return parseJsonExact(text, ["Flags"]);
  } catch {
    throw new TypeError(`Invalid JSON from agent for ${what}: ${text.slice(0, 200)}`);
  }
}

function parsePairs(text: string, what: string): KVPair[] {
  const data = parseJson(text, what);
  if (!Array.isArray(data)) throw new TypeError(`Invalid response from agent for ${what}: expected a list`);
  return data.map((w) => decodeKVPair(w as WireKVPair));
}

function parseBool(text: string): boolean {
  return text.trim() === "true";
}

export class Kv {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  /** One key; `pair` is null when it does not exist. */
  async get(key: string, q?: QueryOptions): Promise<{ pair: KVPair | null; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: `/v1/kv/${escapeKey(key)}`, query: q, accept: [404] });
    if (r.status === 404) return { pair: null, meta: r.meta };
    const pairs = parsePairs(r.text, `key "${key}"`);
    return { pair: pairs[0] ?? null, meta: r.meta };
  }

  /** Every key under a prefix (`?recurse`). */
  async list(prefix: string, q?: QueryOptions): Promise<{ pairs: KVPair[]; meta: QueryMeta }> {
    const r = await this.#c.request({
      method: "GET",
      path: `/v1/kv/${escapeKey(prefix)}`,
      params: { recurse: true },
      query: q,
      accept: [404],
    });
    if (r.status === 404) return { pairs: [], meta: r.meta };
    return { pairs: parsePairs(r.text, `prefix "${prefix}"`), meta: r.meta };
  }

  /** Key names under a prefix, folded at `separator` when given (`?keys&separator=`). */
  async keys(prefix: string, separator?: string, q?: QueryOptions): Promise<{ keys: string[]; meta: QueryMeta }> {
    const r = await this.#c.request({
      method: "GET",
      path: `/v1/kv/${escapeKey(prefix)}`,
      params: { keys: true, separator: separator || undefined },
      query: q,
      accept: [404],
    });
    if (r.status === 404) return { keys: [], meta: r.meta };
    const data = parseJson(r.text, `keys under "${prefix}"`);
    if (!Array.isArray(data) || data.some((k) => typeof k !== "string")) {
      throw new TypeError(`Invalid response from agent for keys under "${prefix}": expected a list of strings`);
    }
    return { keys: data as string[], meta: r.meta };
  }

  /** Write a value; false when a CAS or lock condition failed. */
  async put(key: string, value: Uint8Array | string, w: KvPutOptions = {}): Promise<boolean> {
    const r = await this.#c.request({
      method: "PUT",
      path: `/v1/kv/${escapeKey(key)}`,
      params: { flags: w.flags ? String(w.flags) : undefined, cas: w.cas, acquire: w.acquire, release: w.release },
      body: value,
      write: w,
    });
    return parseBool(r.text);
  }

  /** Delete a key (or a prefix with `recurse`); false when a CAS condition failed. */
  async delete(key: string, w: KvDeleteOptions = {}): Promise<boolean> {
    const r = await this.#c.request({
      method: "DELETE",
      path: `/v1/kv/${escapeKey(key)}`,
      params: { recurse: w.recurse, cas: w.cas },
      write: w,
    });
    return r.text.trim() === "" ? true : parseBool(r.text);
  }

  /** Atomic batch through /v1/txn; a rolled-back transaction (409) is `ok: false`, not an exception. */
  async txn(ops: readonly KvTxnOp[], w: WriteOptions = {}): Promise<TxnResponse> {
    const body = ops.map((op) => {
      const kv: Record<string, unknown> = { Verb: op.Verb, Key: op.Key };
      if (op.Value !== undefined) kv.Value = encodeBase64(op.Value);
      if (op.Flags !== undefined) kv.Flags = op.Flags;
      if (op.Index !== undefined) kv.Index = op.Index;
      if (op.Session !== undefined) kv.Session = op.Session;
      return { KV: kv };
    });
    const r = await this.#c.request({ method: "PUT", path: "/v1/txn", body: stringifyExact(body), write: w, accept: [409] });
    const data = parseJson(r.text, "txn") as { Results?: unknown; Errors?: unknown } | null;
    const results = Array.isArray(data?.Results)
      ? data.Results.map((res) => decodeKVPair(((res as { KV?: WireKVPair }).KV ?? {}) as WireKVPair))
      : [];
    const errors = Array.isArray(data?.Errors)
      ? data.Errors.map((e) => ({ OpIndex: num((e as TxnError).OpIndex), What: String((e as TxnError).What ?? "") }))
      : [];
    return { ok: r.status !== 409, results, errors };
  }
}
