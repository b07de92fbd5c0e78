// Consul's user events (agent/user_event.go): fired as Serf user events named
// `consul:event:<name>` whose payload is the msgpack UserEvent (ID, filters,
// payload); each agent keeps the last 256 it should process (node, service
// and tag filters are regexps) for /v1/event/list. Plain Serf user events
// (a `serf event` from a stock serf agent) are kept too, with an ID derived
// from their Lamport time and name so every agent shows the same one.
import { randomUUID } from "../random_node.ts";
import { decode, encode } from "@msgpack/msgpack";
import type { Clock } from "../clock/clock.ts";
import { BadRequestError } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import type { GossipPool, PoolUserEvent } from "./mod.ts";
import type { UserEvent } from "../http/backends.ts";

export type { UserEvent } from "../http/backends.ts";

export const userEventPrefix = "consul:event:";
export const userEventBufferSize = 256;
/** Consul's userEventMaxVersion. */
export const userEventVersion = 1;

export interface FireParams {
  name: string;
  payload: Uint8Array | null;
  nodeFilter?: string;
  serviceFilter?: string;
  tagFilter?: string;
}

/** A bad fire request (name, filters): the HTTP API answers 400 with its text. */
export class UserEventError extends BadRequestError {}

function compile(what: string, expr: string): RegExp | undefined {
  if (expr === "") return undefined;
  try {
    return new RegExp(expr);
  } catch (err) {
    throw new UserEventError(`Invalid ${what} filter: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Consul's validateUserEventParams. */
export function validateFireParams(p: FireParams): void {
  if (p.name === "") throw new UserEventError("User event missing name");
  if (p.tagFilter && !p.serviceFilter) throw new UserEventError("Cannot provide tag filter without service filter");
  compile("node", p.nodeFilter ?? "");
  compile("service", p.serviceFilter ?? "");
  compile("tag", p.tagFilter ?? "");
}

export function encodeUserEvent(e: UserEvent): Uint8Array {
  return encode({
    ID: e.id,
    Name: e.name,
    Payload: e.payload,
    NodeFilter: e.nodeFilter,
    ServiceFilter: e.serviceFilter,
    TagFilter: e.tagFilter,
    Version: e.version,
    LTime: e.lTime,
  });
}

/** Decode Consul's msgpack UserEvent; undefined when it is not one. */
export function decodeUserEvent(bytes: Uint8Array): UserEvent | undefined {
  let v: unknown;
  try {
    v = decode(bytes);
  } catch {
    return undefined;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  const str = (x: unknown): string => (typeof x === "string" ? x : x instanceof Uint8Array ? new TextDecoder().decode(x) : "");
  const num = (x: unknown): number => (typeof x === "number" ? x : typeof x === "bigint" ? Number(x) : 0);
  if (typeof o.ID !== "string" && !(o.ID instanceof Uint8Array)) return undefined;
  const payload = o.Payload instanceof Uint8Array ? o.Payload : typeof o.Payload === "string" ? new TextEncoder().encode(o.Payload) : null;
  return {
    id: str(o.ID),
    name: str(o.Name),
    payload,
    nodeFilter: str(o.NodeFilter),
    serviceFilter: str(o.ServiceFilter),
    tagFilter: str(o.TagFilter),
    version: num(o.Version),
    lTime: num(o.LTime),
  };
}

/** A stable UUID-shaped ID for a plain Serf event (FNV-1a over lTime/name/payload). */
function plainEventId(e: PoolUserEvent): string {
  const bytes = new TextEncoder().encode(`${e.lTime}\u0000${e.name}\u0000`);
  let h1 = 0x811c9dc5, h2 = 0x01000193 ^ 0x5bd1e995, h3 = 0x27d4eb2f, h4 = 0x165667b1;
  const feed = (b: number) => {
    h1 = Math.imul(h1 ^ b, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ b, 0x01000193 + 2) >>> 0;
    h3 = Math.imul(h3 ^ b, 0x01000193 + 4) >>> 0;
    h4 = Math.imul(h4 ^ b, 0x01000193 + 6) >>> 0;
  };
  for (const b of bytes) feed(b);
  for (const b of e.payload) feed(b);
  const hex = [h1, h2, h3, h4].map((h) => h.toString(16).padStart(8, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A new event from fire parameters, checked as Consul's validateUserEventParams (LTime 0: gossip stamps it). */
function newUserEvent(params: FireParams): UserEvent {
  validateFireParams(params);
  return {
    id: randomUUID(),
    name: params.name,
    payload: params.payload,
    nodeFilter: params.nodeFilter ?? "",
    serviceFilter: params.serviceFilter ?? "",
    tagFilter: params.tagFilter ?? "",
    version: userEventVersion,
    lTime: 0,
  };
}

export interface LocalServiceLike {
  service: string;
  tags: readonly string[];
}

export class UserEventStore {
  #buf: UserEvent[] = [];
  #version = 0;
  #waiters = new Set<() => void>();
  #pool: GossipPool;
  #nodeName: string;
  #services: () => LocalServiceLike[];
  #clock: Clock;
  #log: Logger;
  #unsubscribe: () => void;
  #remote: ((datacenter: string, name: string, payload: Uint8Array) => Promise<unknown>) | undefined;
  dropped = 0;

  constructor(options: {
    pool: GossipPool;
    nodeName: string;
    localServices: () => LocalServiceLike[];
    clock: Clock;
    logger: Logger;
    /** Fire into another datacenter: Consul's Internal.EventFire RPC, answered by a server there. */
    remote?: (datacenter: string, name: string, payload: Uint8Array) => Promise<unknown>;
  }) {
    this.#remote = options.remote;
    this.#pool = options.pool;
    this.#nodeName = options.nodeName;
    this.#services = options.localServices;
    this.#clock = options.clock;
    this.#log = options.logger;
    this.#unsubscribe = options.pool.onUserEvent((e) => this.#onGossip(e));
  }

  /** Fire an event into the LAN pool; returns it as /v1/event/fire answers (LTime 0). */
  fire(params: FireParams): UserEvent {
    const event = newUserEvent(params);
    try {
      this.#pool.userEvent(`${userEventPrefix}${params.name}`, encodeUserEvent(event), false);
    } catch (err) {
      throw new UserEventError(err instanceof Error ? err.message : String(err));
    }
    return event;
  }

  /** Fire an event into another datacenter's LAN pool, through a server there (consul agent.UserEvent with a dc). */
  async fireIn(datacenter: string, params: FireParams): Promise<UserEvent> {
    const event = newUserEvent(params);
    if (!this.#remote) throw new UserEventError(`Cannot fire an event in datacenter "${datacenter}": this agent cannot reach other datacenters`);
    await this.#remote(datacenter, params.name, encodeUserEvent(event));
    return event;
  }

  /** Events in arrival order (oldest first). */
  list(): UserEvent[] {
    return this.#buf.slice();
  }

  get version(): number {
    return this.#version;
  }

  /** Resolves when an event arrives after `version`, or after timeoutMs, or on abort. */
  wait(version: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.#version !== version || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        timer.cancel();
        this.#waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.#clock.setTimer(timeoutMs, done);
      this.#waiters.add(done);
      signal?.addEventListener("abort", done);
    });
  }

  /** Wait until `changed()` is true after some new event, up to timeoutMs (or abort). */
  async waitUntil(changed: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = this.#clock.now() + timeoutMs;
    for (;;) {
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0 || signal?.aborted) return;
      await this.wait(this.#version, remaining, signal);
      if (changed()) return;
    }
  }

  #onGossip(e: PoolUserEvent): void {
    let event: UserEvent | undefined;
    if (e.name.startsWith(userEventPrefix)) {
      event = decodeUserEvent(e.payload);
      if (!event) {
        this.dropped++;
        this.#log.warn("dropping user event with a bad payload", { name: e.name });
        return;
      }
      event.lTime = e.lTime;
    } else {
      event = { id: plainEventId(e), name: e.name, payload: e.payload.length > 0 ? e.payload : null, nodeFilter: "", serviceFilter: "", tagFilter: "", version: userEventVersion, lTime: e.lTime };
    }
    if (!this.#shouldProcess(event)) return;
    this.#log.debug("new event", { event: event.name, event_id: event.id });
    this.#buf.push(event);
    if (this.#buf.length > userEventBufferSize) this.#buf.splice(0, this.#buf.length - userEventBufferSize);
    this.#version++;
    for (const w of [...this.#waiters]) w();
  }

  /** Consul's shouldProcessUserEvent. */
  #shouldProcess(e: UserEvent): boolean {
    try {
      const node = compile("node", e.nodeFilter);
      if (node && !node.test(this.#nodeName)) return false;
      const service = compile("service", e.serviceFilter);
      if (service) {
        const tag = compile("tag", e.tagFilter);
        const match = this.#services().some((s) => service.test(s.service) && (!tag || s.tags.some((t) => tag.test(t))));
        if (!match) return false;
      }
    } catch (err) {
      this.dropped++;
      this.#log.warn("dropping user event with a bad filter", { event: e.name, error: err instanceof Error ? err.message : String(err) });
      return false;
    }
    return true;
  }

  stop(): void {
    this.#unsubscribe();
    for (const w of [...this.#waiters]) w();
  }
}
