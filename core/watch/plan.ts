// A watch plan, as consul api/watch (watch.go, funcs.go, plan.go): one view
// of the catalog, KV store or events (key, keyprefix, services, nodes,
// service, checks, event) read by blocking queries against an agent's HTTP
// API, and a handler called with the view's JSON once at start and again
// every time it changes. Shared by `cairn watch` (cli/watch.ts) and the
// agent's configured watches (core/watch/agent_watches.ts).
//
// The loop (plan.go `RunWithClientAndHclog`): an unchanged index after a
// wait timeout is no change; a new index with the same data is no change
// either; an index that went backwards (snapshot restore, new leader)
// starts over from 0; a failed query is retried after 5 s × failures², at
// most 180 s. Time comes from the injected Clock.
import type { RawRequest, RawResponse } from "../api/client.ts";
import { escapeKey } from "../api/kv.ts";
import type { Clock } from "../clock/clock.ts";
import { sleep } from "../clock/sleep.ts";
import { uuidToIndex } from "../http/event.ts";
import type { WatchParams, WatchType } from "../config/types.ts";

export type { WatchParams, WatchType } from "../config/types.ts";
export const watchTypes: readonly WatchType[] = ["key", "keyprefix", "services", "nodes", "service", "checks", "event"];

/** The parameters each type takes besides datacenter, token and stale (funcs.go). */
export const watchTypeParams: Readonly<Record<WatchType, readonly (keyof WatchParams)[]>> = {
  key: ["key"],
  keyprefix: ["prefix"],
  services: [],
  nodes: [],
  service: ["service", "tag", "passingonly"],
  checks: ["service", "state", "tag"],
  event: ["name"],
};

/** One blocking query of a watch: the path, its parameters, and how to turn the answer into the handler's data. */
export interface WatchQuery {
  readonly type: WatchType;
  readonly path: string;
  readonly params: readonly [string, string][];
  readonly datacenter?: string;
  readonly token?: string;
  readonly stale: boolean;
  /** 404 is an empty result (key, keyprefix). */
  readonly accept404: boolean;
  /** The handler's data; `lastIndex` is the index the previous run saw (the event watch keeps only newer events). */
  data(status: number, text: string, lastIndex: string): unknown;
}

/** The part of core/api's ApiClient a watch uses. */
export interface WatchClient {
  request(req: RawRequest): Promise<RawResponse>;
}

function json(text: string): unknown {
  return text.trim() === "" ? null : JSON.parse(text);
}

function orEmpty(v: unknown): unknown {
  return v ?? [];
}

function stripLeadingSlash(s: string): string {
  return s.replace(/^\/+/, "");
}

/** Build the query of a watch, or an error message in Consul's words. */
export function watchQuery(p: WatchParams): WatchQuery | string {
  if ((p.type as string) === "") return "Watch type must be specified";
  if (!watchTypes.includes(p.type)) return `Unsupported watch type: ${p.type}`;
  const base = { type: p.type, datacenter: p.datacenter || undefined, token: p.token || undefined, stale: p.stale === true };
  switch (p.type) {
    case "key": {
      const key = stripLeadingSlash(p.key ?? "");
      if (key === "") return "Must specify a single key to watch";
      return { ...base, path: `/v1/kv/${escapeKey(key)}`, params: [], accept404: true, data: (s, t) => (s === 404 ? null : ((json(t) as unknown[] | null)?.[0] ?? null)) };
    }
    case "keyprefix": {
      if (p.prefix === undefined) return "Must specify a single prefix to watch";
      const prefix = stripLeadingSlash(p.prefix);
      return { ...base, path: `/v1/kv/${escapeKey(prefix)}`, params: [["recurse", ""]], accept404: true, data: (s, t) => (s === 404 ? [] : orEmpty(json(t))) };
    }
    case "services":
      return { ...base, path: "/v1/catalog/services", params: [], accept404: false, data: (_s, t) => json(t) ?? {} };
    case "nodes":
      return { ...base, path: "/v1/catalog/nodes", params: [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
    case "service": {
      const service = p.service ?? "";
      if (service === "") return "Must specify a single service to watch";
      const params: [string, string][] = (p.tag ?? []).map((t) => ["tag", t]);
      if (p.passingonly) params.push(["passing", ""]);
      return { ...base, path: `/v1/health/service/${encodeURIComponent(service)}`, params, accept404: false, data: (_s, t) => orEmpty(json(t)) };
    }
    case "checks": {
      const service = p.service ?? "";
      const state = p.state ?? "";
      if (service !== "" && state !== "") return "Cannot specify service and state";
      if (service !== "") return { ...base, path: `/v1/health/checks/${encodeURIComponent(service)}`, params: [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
      // Consul's StateTags: only the checks of service instances with every tag (filtered here, on ServiceTags).
      const tags = p.tag ?? [];
      const withTags = (c: { ServiceTags?: unknown }) => tags.every((t) => Array.isArray(c.ServiceTags) && c.ServiceTags.includes(t));
      return {
        ...base,
        path: `/v1/health/state/${encodeURIComponent(state || "any")}`,
        params: [],
        accept404: false,
        data: (_s, t) => (orEmpty(json(t)) as Array<{ ServiceTags?: unknown }>).filter(withTags),
      };
    }
    case "event": {
      const name = p.name ?? "";
      // The stale setting does not apply to events (funcs.go eventWatch).
      return {
        ...base,
        stale: false,
        path: "/v1/event/list",
        params: name ? [["name", name]] : [],
        accept404: false,
        data: (_s, t, lastIndex) => newEvents(orEmpty(json(t)) as Array<{ ID?: string }>, lastIndex),
      };
    }
  }
}

/** Only the events after the one the last run ended with (funcs.go eventWatch "Prune to only the new events"). */
function newEvents(events: Array<{ ID?: string }>, lastIndex: string): Array<{ ID?: string }> {
  if (lastIndex === "" || lastIndex === "0") return events;
  const i = events.findIndex((e) => typeof e.ID === "string" && uuidToIndex(e.ID) === lastIndex);
  return i < 0 ? events : events.slice(i + 1);
}

function pathWith(q: WatchQuery, extra: [string, string][]): string {
  const params = [...q.params, ...extra];
  if (params.length === 0) return q.path;
  const sp = new URLSearchParams(params);
  return `${q.path}?${sp.toString().replace(/=(&|$)/g, "$1")}`;
}

function indexValue(text: string): bigint {
  return /^\d+$/.test(text) ? BigInt(text) : 0n;
}

/** How long a blocking round waits on the server (Consul's api default is the server's, 5 min). */
export const watchWaitMs = 300_000;

/**
 * One round of the watch: the data and its index, blocking above `index`.
 * Indexes stay text: the event list's are 64-bit hashes a number would round.
 */
export async function watchOnce(client: WatchClient, q: WatchQuery, index: string, signal?: AbortSignal): Promise<{ index: string; data: unknown }> {
  const blocking: [string, string][] = index !== "0" && index !== "" ? [["index", index], ["wait", `${watchWaitMs / 1000}s`]] : [];
  const r = await client.request({
    method: "GET",
    path: pathWith(q, blocking),
    query: { signal, datacenter: q.datacenter, token: q.token, allowStale: q.stale },
    accept: q.accept404 ? [404] : [],
  });
  return { index: r.meta.lastIndexText ?? String(r.meta.lastIndex), data: q.data(r.status, r.text, index) };
}

/** Consul's retry after the n-th failure in a row: 5 s × n², at most 180 s (plan.go). */
export function watchRetryMs(failures: number): number {
  return Math.min(180_000, 5_000 * failures * failures);
}

export interface WatchPlanOptions {
  client: WatchClient;
  query: WatchQuery;
  clock: Clock;
  signal: AbortSignal;
  /** The current data at start, then each change; awaited before the next round. */
  onChange(index: string, data: unknown): Promise<void> | void;
  /** A failed round and when the next will be; return false to stop the plan instead. */
  onError?(err: unknown, info: { failures: number; retryMs: number; first: boolean }): boolean | void;
}

/**
 * Run a watch until `signal` aborts ("stopped") or `onError` returns false
 * ("error"). The handler runs once for the current data, then once per
 * change of index and data.
 */
export async function runWatchPlan(o: WatchPlanOptions): Promise<"stopped" | "error"> {
  const { client, query: q, clock, signal } = o;
  let index = "0";
  let last: string | undefined;
  let failures = 0;
  let first = true;
  while (!signal.aborted) {
    let r: { index: string; data: unknown };
    const round = new AbortController();
    const abortRound = () => round.abort(signal.reason);
    signal.addEventListener("abort", abortRound, { once: true });
    try {
      r = await watchOnce(client, q, index, round.signal);
    } catch (err) {
      if (signal.aborted) break;
      failures++;
      const retryMs = watchRetryMs(failures);
      if (o.onError?.(err, { failures, retryMs, first }) === false) return "error";
      await sleep(clock, retryMs, signal);
      continue;
    } finally {
      signal.removeEventListener("abort", abortRound);
    }
    if (signal.aborted) break;
    failures = 0;
    first = false;
    // An unchanged index: the wait timed out, nothing happened.
    if (index !== "0" && r.index === index) continue;
    // The index went backwards: start over from 0. Event-list indexes are hashes, not ordered.
    const prev = index;
    index = q.type !== "event" && indexValue(r.index) < indexValue(prev) ? "0" : r.index;
    // A new index with the same data (another key of the table changed) is no change either.
    const text = JSON.stringify(r.data);
    if (last !== undefined && text === last) continue;
    last = text;
    await o.onChange(r.index, r.data);
  }
  return "stopped";
}
