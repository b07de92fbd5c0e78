// KV locks and semaphores over sessions, as consul api/lock.go and
// api/semaphore.go (the leader-election and semaphore recipes):
//
// - Lock: one holder. A session (TTL 15 s, renewed every TTL/2) acquires
//   `<prefix>/.lock`; while another session holds it we block on the key and
//   retry. Held until the key loses our session or the session goes away.
// - Semaphore: up to `limit` holders. Each contender acquires its own key
//   `<prefix>/<session>`; `<prefix>/.lock` holds `{"Limit":n,"Holders":{…}}`
//   updated with check-and-set; holders whose contender key lost its session
//   are pruned. All contenders must agree on the limit.
//
// Consul also stamps magic Flags values on these keys; those are 64-bit and
// do not fit the flags this store keeps (safe integers), so they are left out.
import type { ApiClient } from "./client.ts";
import type { KVPair } from "./kv.ts";
import { linkedSignal } from "./signals.ts";

export const defaultLockSessionTtl = "15s";
export const defaultLockRetryMs = 5_000;
export const defaultMonitorRetries = 3;
const monitorWaitMs = 60_000;

export interface LockOptions {
  /** The lock key (Lock) or the prefix (Semaphore). */
  key: string;
  sessionName?: string;
  sessionTtl?: string;
  /** Value stored in the lock key (Lock) or the contender key (Semaphore). */
  value?: Uint8Array | string;
  /** Retries of a failed monitor query before the lock counts as lost (Consul -monitor-retry). */
  monitorRetries?: number;
  retryMs?: number;
  /** Receives progress lines (Consul's -verbose output). */
  log?: (line: string) => void;
}

/** A lock or semaphore slot that is held: `lost` aborts when it is no longer ours. */
export interface Held {
  readonly session: string;
  readonly lost: AbortSignal;
  release(): Promise<void>;
}

export class LockConflictError extends Error {}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function ttlMs(ttl: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(ttl);
  if (!m) return 15_000;
  return Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as Record<string, number>)[m[2]!]!;
}

/** Session + renewal loop shared by locks and semaphores. */
class LockSession {
  readonly #c: ApiClient;
  readonly ctl = new AbortController();
  id = "";
  #renew: ReturnType<typeof setTimeout> | undefined;

  constructor(client: ApiClient) {
    this.#c = client;
  }

  async create(name: string, ttl: string): Promise<void> {
    this.id = await this.#c.session.create({ Name: name, TTL: ttl, Behavior: "release" });
    const every = Math.max(500, ttlMs(ttl) / 2);
    const tick = async (): Promise<void> => {
      if (this.ctl.signal.aborted) return;
      try {
        const s = await this.#c.session.renew(this.id);
        if (!s) {
          this.ctl.abort(new Error("session invalidated"));
          return;
        }
      } catch {
        // A failed renew is retried at the next tick; the TTL allows for it.
      }
      if (!this.ctl.signal.aborted) this.#renew = setTimeout(() => void tick(), every);
    };
    this.#renew = setTimeout(() => void tick(), every);
  }

  async destroy(): Promise<void> {
    clearTimeout(this.#renew);
    if (!this.ctl.signal.aborted) this.ctl.abort(new Error("released"));
    if (this.id) await this.#c.session.destroy(this.id).catch(() => undefined);
  }
}

/** Watch a key set with blocking queries until `stillHeld` says no (or queries keep failing). */
async function monitor(
  retries: number,
  query: (index: number, signal: AbortSignal) => Promise<{ index: number; held: boolean }>,
  session: LockSession,
  lost: AbortController,
  startIndex: number,
): Promise<void> {
  let index = startIndex;
  let failures = 0;
  while (!lost.signal.aborted) {
    if (session.ctl.signal.aborted) break;
    const linked = linkedSignal(lost.signal, session.ctl.signal);
    const signal = linked.signal;
    try {
      const r = await query(index, signal);
      failures = 0;
      if (!r.held) break;
      index = r.index < index ? 0 : r.index;
    } catch {
      if (signal.aborted) break;
      if (++failures > retries) break;
      await sleep(1_000, signal);
    } finally {
      linked.dispose();
    }
  }
  if (!lost.signal.aborted) lost.abort(new Error("lock lost"));
}

/** Consul api.Lock: mutual exclusion on one key. */
export class Lock {
  readonly #c: ApiClient;
  readonly #o: LockOptions;

  constructor(client: ApiClient, options: LockOptions) {
    this.#c = client;
    this.#o = options;
  }

  /** Wait for the lock; undefined when `signal` aborts first (timeout, shutdown). */
  async acquire(signal?: AbortSignal): Promise<Held | undefined> {
    const o = this.#o;
    const log = o.log ?? (() => {});
    const session = new LockSession(this.#c);
    await session.create(o.sessionName ?? "Consul API Lock", o.sessionTtl ?? defaultLockSessionTtl);
    let index = 0;
    try {
      while (!signal?.aborted) {
        const wait = linkedSignal(signal, session.ctl.signal);
        let pair: KVPair | null;
        try {
          const r = await this.#c.kv.get(o.key, { waitIndex: index, waitTimeMs: 15_000, signal: wait.signal });
          pair = r.pair;
          index = r.meta.lastIndex;
        } catch (err) {
          if (signal?.aborted) break;
          if (session.ctl.signal.aborted) throw new Error("lock session was invalidated before the lock was acquired");
          throw err;
        } finally {
          wait.dispose();
        }
        if (pair?.Session && pair.Session !== session.id) continue; // held by someone else: block on the key
        const ok = await this.#c.kv.put(o.key, o.value ?? "", { acquire: session.id });
        if (ok) {
          const lost = new AbortController();
          const held: Held = {
            session: session.id,
            lost: lost.signal,
            release: async () => {
              if (!lost.signal.aborted) lost.abort(new Error("released"));
              await this.#c.kv.put(o.key, "", { release: session.id }).catch(() => undefined);
              // Consul's lock Destroy: delete the key unless someone else took it meanwhile.
              const cur = await this.#c.kv.get(o.key).catch(() => undefined);
              if (cur?.pair && !cur.pair.Session) await this.#c.kv.delete(o.key, { cas: cur.pair.ModifyIndex }).catch(() => undefined);
              await session.destroy();
            },
          };
          void monitor(o.monitorRetries ?? defaultMonitorRetries, async (i, s) => {
            const r = await this.#c.kv.get(o.key, { waitIndex: i, waitTimeMs: monitorWaitMs, signal: s });
            return { index: r.meta.lastIndex, held: r.pair?.Session === session.id };
          }, session, lost, 0);
          return held;
        }
        // Lock delay after an invalidated holder: retry after a pause (Consul DefaultLockRetryTime).
        log("Lock acquisition failed, retrying");
        await sleep(o.retryMs ?? defaultLockRetryMs, signal);
        index = 0;
      }
    } catch (err) {
      await session.destroy();
      throw err;
    }
    await session.destroy();
    return undefined;
  }
}

interface SemaphoreLock {
  Limit: number;
  Holders: Record<string, boolean>;
}

/** Consul api.Semaphore: up to `limit` holders under one prefix. */
export class Semaphore {
  readonly #c: ApiClient;
  readonly #o: LockOptions;
  readonly #limit: number;
  readonly #lockKey: string;

  constructor(client: ApiClient, options: LockOptions & { limit: number }) {
    this.#c = client;
    this.#o = options;
    this.#limit = options.limit;
    this.#lockKey = `${options.key.replace(/\/+$/, "")}/.lock`;
  }

  #prefix(): string {
    return `${this.#o.key.replace(/\/+$/, "")}/`;
  }

  /** Parse the lock key and drop holders whose contender key has no session any more. */
  #state(pairs: KVPair[]): { lock: SemaphoreLock; modifyIndex: number } {
    const lockPair = pairs.find((p) => p.Key === this.#lockKey);
    let lock: SemaphoreLock = { Limit: this.#limit, Holders: {} };
    if (lockPair?.Value && lockPair.Value.length > 0) {
      try {
        const parsed = JSON.parse(new TextDecoder().decode(lockPair.Value)) as SemaphoreLock;
        lock = { Limit: Number(parsed.Limit), Holders: { ...(parsed.Holders ?? {}) } };
      } catch {
        throw new LockConflictError("Existing key does not match semaphore use");
      }
      if (lock.Limit !== this.#limit) throw new LockConflictError(`Semaphore limit conflict (lock: ${lock.Limit}, local: ${this.#limit})`);
    }
    const alive = new Set(pairs.filter((p) => p.Key !== this.#lockKey && p.Session).map((p) => p.Session!));
    for (const h of Object.keys(lock.Holders)) if (!alive.has(h)) delete lock.Holders[h];
    return { lock, modifyIndex: lockPair?.ModifyIndex ?? 0 };
  }

  async acquire(signal?: AbortSignal): Promise<Held | undefined> {
    const o = this.#o;
    const session = new LockSession(this.#c);
    await session.create(o.sessionName ?? "Consul API Semaphore", o.sessionTtl ?? defaultLockSessionTtl);
    const contender = `${this.#prefix()}${session.id}`;
    try {
      if (!(await this.#c.kv.put(contender, o.value ?? "", { acquire: session.id }))) throw new Error("failed to make contender entry");
      let index = 0;
      while (!signal?.aborted) {
        const wait = linkedSignal(signal, session.ctl.signal);
        let pairs: KVPair[];
        try {
          const r = await this.#c.kv.list(this.#prefix(), { waitIndex: index, waitTimeMs: 15_000, signal: wait.signal });
          pairs = r.pairs;
          index = r.meta.lastIndex;
        } catch (err) {
          if (signal?.aborted) break;
          if (session.ctl.signal.aborted) throw new Error("semaphore session was invalidated before a slot was acquired");
          throw err;
        } finally {
          wait.dispose();
        }
        const { lock, modifyIndex } = this.#state(pairs);
        if (!lock.Holders[session.id]) {
          if (Object.keys(lock.Holders).length >= lock.Limit) continue; // full: block
          lock.Holders[session.id] = true;
          const ok = await this.#c.kv.put(this.#lockKey, JSON.stringify(lock), { cas: modifyIndex });
          if (!ok) {
            index = 0;
            continue;
          }
        }
        const lost = new AbortController();
        const held: Held = {
          session: session.id,
          lost: lost.signal,
          release: async () => {
            if (!lost.signal.aborted) lost.abort(new Error("released"));
            for (let attempt = 0; attempt < 5; attempt++) {
              try {
                const r = await this.#c.kv.list(this.#prefix());
                const cur = r.pairs.find((p) => p.Key === this.#lockKey);
                if (!cur) break;
                const l = JSON.parse(new TextDecoder().decode(cur.Value ?? new Uint8Array())) as SemaphoreLock;
                if (!l.Holders?.[session.id]) break;
                delete l.Holders[session.id];
                if (await this.#c.kv.put(this.#lockKey, JSON.stringify(l), { cas: cur.ModifyIndex })) break;
              } catch {
                break;
              }
            }
            await this.#c.kv.delete(contender).catch(() => undefined);
            await session.destroy();
          },
        };
        void monitor(o.monitorRetries ?? defaultMonitorRetries, async (i, s) => {
          const r = await this.#c.kv.list(this.#prefix(), { waitIndex: i, waitTimeMs: monitorWaitMs, signal: s });
          let held = false;
          try {
            held = this.#state(r.pairs).lock.Holders[session.id] === true && r.pairs.some((p) => p.Key === contender && p.Session === session.id);
          } catch {
            held = false;
          }
          return { index: r.meta.lastIndex, held };
        }, session, lost, 0);
        return held;
      }
    } catch (err) {
      await this.#c.kv.delete(contender).catch(() => undefined);
      await session.destroy();
      throw err;
    }
    await this.#c.kv.delete(contender).catch(() => undefined);
    await session.destroy();
    return undefined;
  }
}
