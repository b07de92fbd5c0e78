// Shared answers for the reads everyone repeats (issue #24): a load
// balancer, a DNS server and a thousand blocking watchers all ask for the
// same service's instances at the same index. The first read builds the
// answer; the others get the same frozen array until the service's index
// moves. A cached answer is keyed by the store (a restore brings a new one),
// the query's parameters and the index it carries, so it can only be served
// while the data it was read from is unchanged. The array is frozen with
// its items, so nobody can change what the next reader gets, and the HTTP
// layer may encode it once for all (core/http/encoded_cache.ts).

import type { CheckServiceNode, ServiceNode } from "../rpc/methods.ts";
import { checkServiceNodesTxn, serviceMaxIndex, serviceNodesTxn, watchService } from "../state/catalog.ts";
import { deepFreeze } from "../state/catalog_schema.ts";
import type { Indexed } from "../state/kvs.ts";
import type { ReadTxn } from "../state/txn.ts";
import type { WatchSet } from "../state/watch.ts";

/**
 * Answers kept per store (least recently used dropped first). An answer is
 * an array of small wrappers around rows the store holds anyway (about
 * 10 KB for 100 instances), so a few thousand cost little.
 */
export const readCacheLimit = 4096;

interface Entry<T> {
  index: number;
  value: T;
}

/** A bounded map of answers per store, each valid at one index only. */
export class ReadCache<T> {
  readonly #byStore = new WeakMap<object, Map<string, Entry<T>>>();
  readonly #limit: number;
  hits = 0;
  misses = 0;

  constructor(limit = readCacheLimit) {
    this.#limit = limit;
  }

  /** The answer for key at exactly this index, else undefined. */
  get(store: object, key: string, index: number): T | undefined {
    const m = this.#byStore.get(store);
    const e = m?.get(key);
    if (!e || e.index !== index) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    // Most recently used last.
    m!.delete(key);
    m!.set(key, e);
    return e.value;
  }

  set(store: object, key: string, index: number, value: T): void {
    let m = this.#byStore.get(store);
    if (!m) this.#byStore.set(store, (m = new Map()));
    m.delete(key);
    m.set(key, { index, value });
    if (m.size > this.#limit) m.delete(m.keys().next().value!);
  }

  /** Answers held for a store (for tests). */
  size(store: object): number {
    return this.#byStore.get(store)?.size ?? 0;
  }
}

/** The query parameters that decide a service answer (the name is case-insensitive, like the lookup). */
function serviceKey(kind: string, q: { name: string; tags?: readonly string[]; nodeMeta?: Record<string, string>; passingOnly?: boolean }): string {
  return JSON.stringify([kind, q.name.toLowerCase(), q.tags ?? [], q.nodeMeta ?? null, q.passingOnly === true]);
}

const checkServiceNodes = new ReadCache<readonly CheckServiceNode[]>();
const serviceNodes = new ReadCache<readonly ServiceNode[]>();

/** For tests and metrics: the caches behind the shared reads. */
export const sharedReadCaches = { checkServiceNodes, serviceNodes };

/** The read behind `key`, shared: a cached answer at the service's current index, else `read`'s, frozen and kept. */
function sharedRead<T>(
  cache: ReadCache<readonly T[]>,
  key: string,
  state: ReadTxn,
  ws: WatchSet | undefined,
  name: string,
  read: () => Indexed<T[]>,
): Indexed<readonly T[]> {
  const index = serviceMaxIndex(state, name);
  const hit = cache.get(state, key, index);
  if (hit) {
    watchService(state, ws, name);
    return { index, value: hit };
  }
  const r = read();
  const value = deepFreeze(r.value);
  cache.set(state, key, r.index, value);
  return { index: r.index, value };
}

/**
 * Health.ServiceNodes' read, shared: the same frozen array for every reader
 * of the same store, parameters and "service.<name>" index. Watches the
 * service's index either way.
 */
export function sharedCheckServiceNodes(
  state: ReadTxn,
  ws: WatchSet | undefined,
  q: { name: string; tags?: readonly string[]; nodeMeta?: Record<string, string>; passingOnly?: boolean },
): Indexed<readonly CheckServiceNode[]> {
  return sharedRead(checkServiceNodes, serviceKey("health", q), state, ws, q.name, () => checkServiceNodesTxn(state, ws, q));
}

/** Catalog.ServiceNodes' read, shared the same way. */
export function sharedServiceNodes(
  state: ReadTxn,
  ws: WatchSet | undefined,
  q: { name: string; tags?: readonly string[]; nodeMeta?: Record<string, string> },
): Indexed<readonly ServiceNode[]> {
  return sharedRead(serviceNodes, serviceKey("catalog", q), state, ws, q.name, () => serviceNodesTxn(state, ws, q));
}
