// Where an agent's RPC goes (consul agent/consul/rpc.go `forward`,
// agent/router), decided here and nowhere else, for clients and servers
// alike: a server answers locally when it can — it is the leader, the read
// allows stale answers, or the method never needs the leader — and forwards
// to the leader otherwise; a client sends everything to a server it learned
// from gossip, trying another when one fails.
//
// Retries are decided by typed errors only. A request that provably never
// reached a state machine (no leader, a follower's refusal, no connection)
// is sent again until `holdTimeoutMs` (Consul's rpc_hold_timeout, 7 s). A
// write whose attempt may have been applied (the leader lost its leadership
// while committing it, the connection dropped after sending) is sent again
// only because it carries a request id, given here to every write: the FSM
// applies an id once and answers a repeat with the first result
// (core/state/requests.ts). A write still without an answer at the hold
// timeout is answered OutcomeUnknownError, never sent blindly.
//
// A request for another datacenter (consul rpc.go `forwardDC`) goes, from a
// server, to a server of that datacenter chosen by the WAN routes
// (wan_routes.ts): shuffled, a failed server moved to the back. It travels
// unchanged — the request id the first router gave a write included, so a
// write retried across datacenters is still applied once — and the remote
// server answers it as a local request (its own leader forwarding, stale
// reads, blocking). A datacenter the WAN pool never heard of is "No path to
// datacenter"; one it knows with no server alive, or whose servers all fail
// to connect, is "Remote DC has no server currently reachable". A client
// agent leaves all of this to the server it asks.
import type { Clock } from "../clock/clock.ts";
import {
  errorMessage,
  LeadershipLostError,
  DcUnavailableError,
  NoLeaderError,
  NoPathToDatacenterError,
  NotLeaderError,
  OutcomeUnknownError,
  RateLimitedError,
  RequestExpiredError,
  RpcError,
  RpcTimeoutError,
} from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import type { Rng } from "../sim/rng.ts";
import type { RequestId } from "../state/requests.ts";
import { writeMethods } from "./methods.ts";
import type { Rpc, RpcArgs, RpcMethod, RpcReply } from "./methods.ts";
import type { RateLimits } from "./rate_limit.ts";
import type { WanRoute } from "./wan_routes.ts";

/** Where a request for another datacenter may go (WanRoutes fits). */
export interface WanRouting {
  route(dc: string): WanRoute;
  failed(dc: string, address: string): void;
}

/** Answers a call locally (a server's handler table). Methods named by string so operator calls ride along. */
export interface LocalHandler {
  handle(method: string, args: unknown, options?: { signal?: AbortSignal }): Promise<unknown>;
}

/** Sends a call to another server (RpcClientPool fits). */
export interface RemoteCaller {
  call(address: string, method: string, body: unknown, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<unknown>;
}

export interface RpcRouterOptions {
  /** Present on servers: the local endpoints. Absent on clients. */
  local?: LocalHandler;
  remote: RemoteCaller;
  /** Server RPC addresses known from gossip (clients pick from these). */
  servers: () => string[];
  clock: Clock;
  rng: Rng;
  logger: Logger;
  /** Consul's limits.rpc_hold_timeout. Default 7 s. */
  holdTimeoutMs?: number;
  /** Per forwarded call timeout, before any blocking wait is added. Default 30 s. */
  callTimeoutMs?: number;
  /** A server's own RPC address: a refusal naming it is not forwarded (to ourselves). */
  self?: string;
  /**
   * On servers and `-dev`: this datacenter. A request for another one goes
   * through `wan` (servers), or is refused before an endpoint runs. Clients
   * leave this to the server they ask.
   */
  datacenter?: string;
  /** Servers: the other datacenters' servers, from the WAN pool. */
  wan?: WanRouting;
  /**
   * The agent's rate limits (rate_limit.ts): `rpc_rate` on each try of a call
   * this agent sends; on servers `request_limits` on each request before it
   * is handled (from another agent in `serve`, the agent's own in `callRaw`).
   */
  limits?: RateLimits;
  /** Servers: whether this one leads (a write the leader refuses is "try later", not "elsewhere"). */
  isLeader?: () => boolean;
}

/** The datacenter a call names: `datacenter` for writes, `query.datacenter` for reads; "" for none. */
export function requestDatacenter(args: unknown): string {
  if (typeof args !== "object" || args === null) return "";
  const a = args as { datacenter?: unknown; query?: { datacenter?: unknown } };
  const dc = a.datacenter ?? a.query?.datacenter;
  return typeof dc === "string" ? dc : "";
}

export interface RpcRouterStats {
  local: number;
  forwarded: number;
  retries: number;
  holdTimeouts: number;
  /** Writes answered OutcomeUnknownError: an attempt may have been applied and none answered. */
  outcomeUnknown: number;
  /** Requests sent to another datacenter, and attempts there that failed to reach a server. */
  crossDc: number;
  crossDcFailures: number;
}

/**
 * What an error says about the attempt that got it: "unsent" — it changed
 * nothing and may go again (elsewhere); "unknown" — it may have been applied;
 * "final" — the answer itself.
 */
export function attemptOutcome(err: unknown): "unsent" | "unknown" | "final" {
  if (err instanceof NoLeaderError || err instanceof NotLeaderError) return "unsent";
  if (err instanceof LeadershipLostError || err instanceof RpcTimeoutError) return "unknown";
  if (err instanceof RpcError && err.remoteCode === undefined) return err.unsent ? "unsent" : "unknown";
  return "final";
}

/** The longest a blocking read may wait on the server, plus Consul's jitter (1/16); add it to a forwarded call's timeout. */
export function blockingWaitMs(args: unknown): number {
  if (typeof args !== "object" || args === null) return 0;
  const q = (args as { query?: { minQueryIndex?: unknown; maxQueryTimeMs?: unknown } }).query;
  if (!q || typeof q.maxQueryTimeMs !== "number" || !(Number(q.minQueryIndex) > 0)) return 0;
  return Math.ceil(q.maxQueryTimeMs * (1 + 1 / 16));
}

const noneTried: Set<string> = new Set();

/** Servers of another datacenter one request tries before it is "Remote DC has no server currently reachable". */
export const maxDcAttempts = 3;

export class RpcRouter implements Rpc {
  readonly stats: RpcRouterStats = { local: 0, forwarded: 0, retries: 0, holdTimeouts: 0, outcomeUnknown: 0, crossDc: 0, crossDcFailures: 0 };
  readonly #o: RpcRouterOptions;
  readonly #holdMs: number;
  readonly #callMs: number;
  /** The server a client used last with success; tried first. */
  #preferred = "";
  /** This router's request issuer: its epoch (wall ms when minted), then random digits. */
  #issuer = "";
  #seq = 0;

  constructor(options: RpcRouterOptions) {
    this.#o = options;
    this.#holdMs = options.holdTimeoutMs ?? 7_000;
    this.#callMs = options.callTimeoutMs ?? 30_000;
  }

  call<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal }): Promise<RpcReply<M>> {
    return this.callRaw(method, args, options) as Promise<RpcReply<M>>;
  }

  /** Route any method by name (operator calls outside the typed contract use this). */
  async callRaw(method: string, args: unknown, options: { signal?: AbortSignal } = {}): Promise<unknown> {
    const { clock, limits } = this.#o;
    const deadline = clock.now() + this.#holdMs;
    // A server checks its request limits once for its own agent's call (Consul's in-memory RPC does).
    if (limits && this.#o.local) limits.checkRequest(method, this.#isLeader);
    // Only a client picks among servers; a server answers locally (or forwards to the leader).
    const tried = this.#o.local ? noneTried : new Set<string>();
    // A write gets its request id here, unless a router before us gave it one.
    const isWrite = writeMethods.has(method) && typeof args === "object" && args !== null;
    const ownId = isWrite && (args as { requestId?: unknown }).requestId === undefined;
    if (ownId) args = { ...(args as object), requestId: this.#nextRequestId(0) };
    let maybeApplied = false;
    let lastErr: unknown;
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) throw options.signal.reason;
      try {
        // rpc_rate: every try takes a token; an empty bucket fails the call at once (Consul's client RPC).
        limits?.checkOutgoing();
        return await this.#once(method, args, options, tried);
      } catch (err) {
        // A server's request limit refused it before any handler ran: a client tries another server
        // until the hold timeout (consul canRetry: rate.ErrRetryElsewhere); "try later" is the answer.
        if (err instanceof RateLimitedError && (!err.elsewhere || this.#o.local)) throw err;
        if (err instanceof RequestExpiredError) {
          // The table forgot this id (or never knew its issuer). Only an id
          // never sent before may be replaced by a fresh one.
          if (!ownId || maybeApplied || err.minEpoch === 0) throw this.#unknownIf(maybeApplied, method, err);
          args = { ...(args as object), requestId: this.#nextRequestId(err.minEpoch) };
          continue;
        }
        const outcome = err instanceof RateLimitedError ? "unsent" : attemptOutcome(err);
        if (outcome === "final") throw err;
        if (outcome === "unknown") {
          // Sending again is safe only with a request id (writes) or for what changes nothing (reads).
          if (isWrite) maybeApplied = true;
          else if (writeMethods.has(method) || err instanceof RpcTimeoutError) throw err;
        }
        lastErr = err;
      }
      const remaining = deadline - clock.now();
      if (remaining <= 0) {
        this.stats.holdTimeouts++;
        this.#o.logger.debug("giving up on RPC after the hold timeout", { method, error: errorMessage(lastErr) });
        if (maybeApplied) throw this.#unknownIf(true, method, lastErr);
        if (lastErr instanceof RateLimitedError) throw lastErr;
        if (lastErr instanceof RpcError && this.#o.local === undefined) {
          throw new RpcError(`No known Consul servers could answer: ${lastErr.message}`, { cause: lastErr });
        }
        throw new NoLeaderError();
      }
      this.stats.retries++;
      // Consul waits a jittered slice of the hold timeout (rpcHoldTimeout / 16) between tries. We start
      // with short waits that double up to that slice: a new leader is usually there within a few
      // hundred ms of the old one's death, and a request should not sleep half a second past it.
      const slice = Math.max(10, Math.floor(this.#holdMs / 16));
      const wait = Math.min(slice, 20 * 2 ** Math.min(attempt, 8));
      await this.#sleep(Math.min(remaining, Math.ceil(wait / 2) + this.#o.rng.int(Math.ceil(wait / 2) + 1)), options.signal);
    }
  }

  /**
   * Answer a call that came from another agent: here, or forwarded once to
   * the leader a local refusal names. No retries: the caller's router retries.
   */
  async serve(method: string, args: unknown, options: { signal?: AbortSignal } = {}): Promise<unknown> {
    const { local } = this.#o;
    if (!local) throw new TypeError("Only a server's router answers calls from other agents");
    // request_limits: before routing or handling, as Consul's RPC interceptor (forwarded calls count again at the leader).
    this.#o.limits?.checkRequest(method, this.#isLeader);
    const dc = this.#remoteDatacenter(args);
    if (dc !== undefined) return await this.#forwardDc(dc, method, args, options);
    try {
      this.stats.local++;
      return await local.handle(method, args, options);
    } catch (err) {
      if (!(err instanceof NotLeaderError) || !err.leader || err.leader === this.#o.self) throw err;
      return await this.#forward(err.leader, method, args, options);
    }
  }

  /** Routing before handling: the other datacenter a call names, if any; it never reaches a local endpoint. */
  #remoteDatacenter(args: unknown): string | undefined {
    const ours = this.#o.datacenter;
    if (ours === undefined) return undefined;
    const dc = requestDatacenter(args);
    if (dc === "" || dc === ours) return undefined;
    return dc;
  }

  /**
   * Send a call to a server of datacenter `dc`, as it is (its request id
   * included). A server that cannot be reached goes to the back of the list
   * and the next one is tried, each once and at most `maxDcAttempts`: a dead
   * datacenter fails within a few connection attempts. A read, or a write with its request id,
   * whose connection was lost after sending is tried at the next server too;
   * a write that none answered after one of them may have applied it is
   * OutcomeUnknownError, not "unreachable".
   */
  async #forwardDc(dc: string, method: string, args: unknown, options: { signal?: AbortSignal }): Promise<unknown> {
    const route = this.#o.wan?.route(dc) ?? { kind: "unknown" as const };
    if (route.kind === "unknown") throw new NoPathToDatacenterError(dc);
    if (route.kind === "unavailable") throw new DcUnavailableError(dc);
    this.stats.crossDc++;
    const isWrite = writeMethods.has(method);
    const retrySent = !isWrite || (typeof args === "object" && args !== null && (args as { requestId?: unknown }).requestId !== undefined);
    let lastErr: unknown;
    let maybeApplied = false;
    // At most a few servers per request: a datacenter whose hosts do not answer costs a few connect timeouts, not one per server.
    for (const address of route.addresses.slice(0, maxDcAttempts)) {
      if (options.signal?.aborted) throw options.signal.reason;
      try {
        return await this.#forward(address, method, args, options);
      } catch (err) {
        // The remote server's own answer (an error of the endpoint, no leader there, …) is the answer.
        if (!(err instanceof RpcError) || err.remoteCode !== undefined) throw crossDcError(err);
        this.stats.crossDcFailures++;
        this.#o.wan!.failed(dc, address);
        this.#o.logger.debug("server of another datacenter failed; trying the next", { datacenter: dc, server: address, error: errorMessage(err) });
        lastErr = err;
        if (!err.unsent && !retrySent) throw err;
        if (!err.unsent && isWrite) maybeApplied = true;
      }
    }
    this.#o.logger.warn("no server of the datacenter could be reached", { datacenter: dc, method, error: errorMessage(lastErr) });
    // A write one of them may have applied before its connection was lost is not "unreachable": say so.
    if (maybeApplied) throw this.#unknownIf(true, method, lastErr);
    throw new DcUnavailableError(dc, { cause: lastErr });
  }

  readonly #isLeader = (): boolean => this.#o.isLeader?.() ?? false;

  #unknownIf(maybeApplied: boolean, method: string, err: unknown): unknown {
    if (!maybeApplied) return err;
    this.stats.outcomeUnknown++;
    this.#o.logger.warn("write outcome unknown after retries", { method, error: errorMessage(err) });
    return new OutcomeUnknownError(errorMessage(err), { cause: err });
  }

  /** The next request id; a new issuer when there is none yet or the table asks for a newer epoch. */
  #nextRequestId(minEpoch: number): RequestId {
    if (this.#issuer === "" || minEpoch > 0) {
      const epoch = Math.max(Math.floor(this.#o.clock.wallNow()), minEpoch + 1);
      this.#issuer = `${epoch}-${this.#o.rng.int(2 ** 30).toString(36)}${this.#o.rng.int(2 ** 30).toString(36)}`;
      this.#seq = 0;
    }
    return [this.#issuer, ++this.#seq];
  }

  async #once(method: string, args: unknown, options: { signal?: AbortSignal }, tried: Set<string>): Promise<unknown> {
    const { local } = this.#o;
    if (local) {
      const dc = this.#remoteDatacenter(args);
      if (dc !== undefined) return await this.#forwardDc(dc, method, args, options);
      try {
        this.stats.local++;
        return await local.handle(method, args, options);
      } catch (err) {
        if (!(err instanceof NotLeaderError) || !err.leader) throw err;
        return await this.#forward(err.leader, method, args, options);
      }
    }
    // Client: one server, the preferred one first, then others not yet tried in this request.
    const servers = this.#o.servers();
    if (servers.length === 0) throw new RpcError("No known Consul servers", { unsent: true });
    let target = this.#preferred !== "" && servers.includes(this.#preferred) && !tried.has(this.#preferred) ? this.#preferred : "";
    if (target === "") {
      const fresh = servers.filter((s) => !tried.has(s));
      target = fresh.length > 0 ? this.#o.rng.pick(fresh) : this.#o.rng.pick(servers);
    }
    try {
      const reply = await this.#forward(target, method, args, options);
      this.#preferred = target;
      return reply;
    } catch (err) {
      if (err instanceof NotLeaderError && err.leader) return await this.#forward(err.leader, method, args, options);
      if ((err instanceof RpcError && err.remoteCode === undefined) || (err instanceof RateLimitedError && err.elsewhere)) {
        tried.add(target);
        if (this.#preferred === target) this.#preferred = "";
      }
      throw err;
    }
  }

  #forward(address: string, method: string, args: unknown, options: { signal?: AbortSignal }): Promise<unknown> {
    this.stats.forwarded++;
    return this.#o.remote.call(address, method, args, { timeoutMs: this.#callMs + blockingWaitMs(args), signal: options.signal });
  }

  #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        timer.cancel();
        reject(signal!.reason);
      };
      const timer = this.#o.clock.setTimer(ms, () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/**
 * An error of the remote datacenter as it may travel on: a refusal naming
 * that datacenter's leader becomes a plain "not the leader" (retried, by the
 * first router, through us again), never an address to dial from here.
 */
function crossDcError(err: unknown): unknown {
  if (err instanceof NotLeaderError && err.leader) return new NotLeaderError();
  return err;
}
