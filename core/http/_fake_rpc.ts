// A small in-memory Rpc for handler tests (not the real server): KV with
// Raft-like indexes, blocking reads woken by writes, txn, status. Records
// every call so tests can check what the HTTP layer asked for.
import type { Clock } from "../clock/mod.ts";
import type { DirEntry, KvFlags, QueryMeta, QueryOptions, Rpc, RpcArgs, RpcMethod, RpcReply, TxnReply, TxnResult } from "../rpc/mod.ts";

export interface FakeCall {
  method: RpcMethod;
  args: unknown;
}

export class FakeRpc implements Rpc {
  readonly calls: FakeCall[] = [];
  readonly kv = new Map<string, DirEntry>();
  index = 1;
  leader = "127.0.0.1:8300";
  peers = ["127.0.0.1:8300"];
  /** Thrown by the next call when set (once). */
  failNext: Error | undefined;
  meta: Omit<QueryMeta, "index" | "consistencyLevel"> = { knownLeader: true, lastContactMs: 0 };
  /** Index at which keys were last deleted, per key (tombstones). */
  readonly #tombstones = new Map<string, number>();
  readonly #waiters = new Set<() => void>();
  readonly #clock: Clock;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Blocking calls waiting right now. */
  waiting(): number {
    return this.#waiters.size;
  }

  async call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>> {
    this.calls.push({ method, args });
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    return (await this.#dispatch(method, args as never, options?.signal)) as RpcReply<M>;
  }

  lastCall(method?: RpcMethod): FakeCall | undefined {
    const list = method ? this.calls.filter((c) => c.method === method) : this.calls;
    return list[list.length - 1];
  }

  async #dispatch(method: RpcMethod, args: never, signal?: AbortSignal): Promise<unknown> {
    switch (method) {
      case "KVS.Apply":
        return this.#apply(args);
      case "KVS.Get": {
        const a = args as RpcArgs<"KVS.Get">;
        return await this.#blocking(a.query, signal, () => {
          const e = this.kv.get(a.key);
          return { value: { entries: e ? [e] : [] }, index: Math.max(e?.modifyIndex ?? 0, this.#tombstones.get(a.key) ?? 0) };
        });
      }
      case "KVS.List": {
        const a = args as RpcArgs<"KVS.List">;
        return await this.#blocking(a.query, signal, () => {
          const entries = this.#list(a.prefix);
          return { value: { entries }, index: this.#prefixIndex(a.prefix, entries) };
        });
      }
      case "KVS.ListKeys": {
        const a = args as RpcArgs<"KVS.ListKeys">;
        return await this.#blocking(a.query, signal, () => {
          const entries = this.#list(a.prefix);
          const keys: string[] = [];
          for (const e of entries) {
            let k = e.key;
            if (a.separator) {
              const at = k.indexOf(a.separator, a.prefix.length);
              if (at >= 0) k = k.slice(0, at + a.separator.length);
            }
            if (keys[keys.length - 1] !== k) keys.push(k);
          }
          return { value: { keys }, index: this.#prefixIndex(a.prefix, entries) };
        });
      }
      case "Txn.Apply":
        return this.#txn(args);
      case "Status.Leader":
        return this.leader;
      case "Status.Peers":
        return this.peers;
      default:
        throw new Error(`fake rpc: no method "${method}"`);
    }
  }

  #list(prefix: string): DirEntry[] {
    return [...this.kv.values()].filter((e) => e.key.startsWith(prefix)).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  #prefixIndex(prefix: string, entries: DirEntry[]): number {
    let idx = 0;
    for (const e of entries) idx = Math.max(idx, e.modifyIndex);
    for (const [k, i] of this.#tombstones) if (k.startsWith(prefix)) idx = Math.max(idx, i);
    return idx;
  }

  async #blocking<T extends object>(
    query: QueryOptions,
    signal: AbortSignal | undefined,
    read: () => { value: T; index: number },
  ): Promise<T & { meta: QueryMeta }> {
    const level = query.allowStale ? "stale" : query.requireConsistent ? "consistent" : "leader";
    let r = read();
    if (query.minQueryIndex > 0 && r.index <= query.minQueryIndex) {
      await new Promise<void>((resolve, reject) => {
        let timer: { cancel(): void } | undefined;
        const done = (): void => {
          this.#waiters.delete(check);
          timer?.cancel();
          signal?.removeEventListener("abort", onAbort);
        };
        const check = (): void => {
          r = read();
          if (r.index > query.minQueryIndex) {
            done();
            resolve();
          }
        };
        const onAbort = (): void => {
          done();
          reject(Object.assign(new Error("blocking query aborted"), { name: "AbortError" }));
        };
        if (signal?.aborted) return onAbort();
        signal?.addEventListener("abort", onAbort);
        timer = this.#clock.setTimer(query.maxQueryTimeMs, () => {
          done();
          resolve();
        });
        this.#waiters.add(check);
      });
      r = read();
    }
    return { ...r.value, meta: { index: Math.max(r.index, 1), ...this.meta, consistencyLevel: level } };
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  #set(key: string, value: Uint8Array, flags: KvFlags, session?: string): DirEntry {
    const idx = ++this.index;
    const old = this.kv.get(key);
    const e: DirEntry = {
      key,
      flags,
      value,
      session: session ?? old?.session ?? "",
      lockIndex: old?.lockIndex ?? 0,
      createIndex: old?.createIndex ?? idx,
      modifyIndex: idx,
    };
    this.kv.set(key, e);
    return e;
  }

  #delete(key: string): void {
    if (this.kv.delete(key)) this.#tombstones.set(key, ++this.index);
  }

  #apply(a: RpcArgs<"KVS.Apply">): { ok: boolean; index: number } {
    const { entry } = a;
    const old = this.kv.get(entry.key);
    let ok = true;
    switch (a.op) {
      case "set":
        this.#set(entry.key, entry.value ?? new Uint8Array(0), entry.flags ?? 0);
        break;
      case "cas":
        ok = entry.modifyIndex === 0 ? !old : old?.modifyIndex === entry.modifyIndex;
        if (ok) this.#set(entry.key, entry.value ?? new Uint8Array(0), entry.flags ?? 0);
        break;
      case "lock":
        ok = !old?.session || old.session === entry.session;
        if (ok) {
          const e = this.#set(entry.key, entry.value ?? new Uint8Array(0), entry.flags ?? 0, entry.session);
          this.kv.set(entry.key, { ...e, lockIndex: e.lockIndex + (old?.session === entry.session ? 0 : 1) });
        }
        break;
      case "unlock":
        ok = old?.session === entry.session;
        if (ok) this.#set(entry.key, entry.value ?? new Uint8Array(0), entry.flags ?? 0, "");
        break;
      case "delete":
        this.#delete(entry.key);
        break;
      case "delete-cas":
        ok = old !== undefined && old.modifyIndex === entry.modifyIndex;
        if (ok) this.#delete(entry.key);
        break;
      case "delete-tree":
        for (const k of [...this.kv.keys()]) if (k.startsWith(entry.key)) this.#delete(k);
        break;
    }
    this.#wake();
    return { ok, index: this.index };
  }

  #txn(a: RpcArgs<"Txn.Apply">): TxnReply {
    const snapshot = new Map(this.kv);
    const startIndex = this.index;
    const results: TxnResult[] = [];
    const strip = (e: DirEntry): DirEntry => ({ ...e, value: new Uint8Array(0) });
    for (let i = 0; i < a.ops.length; i++) {
      const op = a.ops[i]!.kv;
      if (!op) throw new Error("the fake runs KV operations only: use a dev server for Node, Service and Check ops");
      const cur = this.kv.get(op.key);
      let what = "";
      switch (op.verb) {
        case "set":
          results.push({ kv: strip(this.#set(op.key, op.value ?? new Uint8Array(0), op.flags ?? 0)) });
          break;
        case "cas":
          if ((op.index ?? 0) === 0 ? cur !== undefined : cur?.modifyIndex !== op.index) {
            what = `failed to set key "${op.key}", index is stale`;
          } else results.push({ kv: strip(this.#set(op.key, op.value ?? new Uint8Array(0), op.flags ?? 0)) });
          break;
        case "get":
          if (!cur) what = `key "${op.key}" doesn't exist`;
          else results.push({ kv: cur });
          break;
        case "get-tree":
          for (const e of this.#list(op.key)) results.push({ kv: e });
          break;
        case "check-index":
          if (!cur || cur.modifyIndex !== op.index) what = `current modify index ${cur?.modifyIndex ?? 0} != ${op.index ?? 0}`;
          else results.push({ kv: strip(cur) });
          break;
        case "check-not-exists":
          if (cur) what = `key "${op.key}" exists`;
          break;
        case "check-session":
          if (!cur || cur.session !== op.session) what = `key "${op.key}" is not locked by session "${op.session ?? ""}"`;
          else results.push({ kv: strip(cur) });
          break;
        case "delete":
          this.#delete(op.key);
          break;
        case "delete-tree":
          for (const k of [...this.kv.keys()]) if (k.startsWith(op.key)) this.#delete(k);
          break;
        case "delete-cas":
          if (!cur || cur.modifyIndex !== op.index) what = `failed to delete key "${op.key}", index is stale`;
          else this.#delete(op.key);
          break;
        case "lock":
        case "unlock":
        case "get-or-empty":
          what = `${op.verb} is not supported by the fake`;
          break;
      }
      if (what) {
        this.kv.clear();
        for (const [k, v] of snapshot) this.kv.set(k, v);
        this.index = startIndex;
        return { results: [], errors: [{ opIndex: i, what }], index: 0 };
      }
    }
    this.#wake();
    const q = a.query;
    if (!q) return { results, errors: [], index: this.index };
    // Read-only (the HTTP layer sends `query` only then): the read's meta, as the server's Txn.Read.
    const consistencyLevel = q.allowStale ? "stale" : q.requireConsistent ? "consistent" : "leader";
    return { results, errors: [], index: this.index, meta: { index: Math.max(this.index, 1), ...this.meta, consistencyLevel } };
  }
}
