// Rate limits on RPCs, as Consul has them (pure: time from the injected Clock).
//
// - `limits.rpc_rate` / `rpc_max_burst`: one token bucket on the RPCs this
//   agent sends (consul agent/consul/client.go and server.go `RPC`: checked
//   on each try, an empty bucket is "RPC rate limit exceeded" at once, never
//   waited for). Default rate: infinite.
// - `limits.request_limits { mode, read_rate, write_rate }`: a server's
//   global read and write buckets on the requests it is asked to handle
//   (consul agent/consul/rate/handler.go, Consul 1.16+), burst = 10 × rate.
//   `permissive` counts and logs and lets the request through, `enforcing`
//   refuses it before any handler runs: a write refused by the leader is
//   "try again later" (503: no other server could take it), anything else
//   "try again later or against a different server" (429). Status, Operator
//   and Snapshot calls are exempt, and so is whatever never passes the
//   router: Raft, the leader's own duties (`internal` calls), gossip.
//
// The bucket is golang.org/x/time/rate's Limiter as Consul uses it: it starts
// full, refills at `rate` per second up to `burst`, each request takes one
// token; an infinite rate lets everything through.
import type { Clock } from "../clock/clock.ts";
import { RateLimitedError, RpcRateExceededError } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { writeMethods } from "./methods.ts";

export class TokenBucket {
  readonly #clock: Clock;
  #ratePerSec: number;
  #burst: number;
  #tokens: number;
  #lastMs: number;

  /** `ratePerSec` Infinity (or negative, Consul's "-1") lets everything through. */
  constructor(clock: Clock, options: { ratePerSec: number; burst: number }) {
    this.#clock = clock;
    this.#ratePerSec = normalRate(options.ratePerSec);
    this.#burst = Math.max(0, Math.floor(options.burst));
    this.#tokens = this.#burst;
    this.#lastMs = clock.now();
  }

  get ratePerSec(): number {
    return this.#ratePerSec;
  }

  get burst(): number {
    return this.#burst;
  }

  /** Take one token if there is one. */
  allow(): boolean {
    if (this.#ratePerSec === Infinity) return true;
    this.#refill();
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** New rate and burst (x/time/rate SetLimit/SetBurst): tokens earned so far are kept, capped by the new burst. */
  update(options: { ratePerSec: number; burst: number }): void {
    this.#refill();
    this.#ratePerSec = normalRate(options.ratePerSec);
    this.#burst = Math.max(0, Math.floor(options.burst));
    this.#tokens = Math.min(this.#tokens, this.#burst);
  }

  #refill(): void {
    const now = this.#clock.now();
    const elapsedMs = Math.max(0, now - this.#lastMs);
    this.#lastMs = now;
    if (this.#ratePerSec === Infinity) {
      this.#tokens = this.#burst;
      return;
    }
    this.#tokens = Math.min(this.#burst, this.#tokens + (elapsedMs * this.#ratePerSec) / 1000);
  }
}

function normalRate(r: number): number {
  return r < 0 || !Number.isFinite(r) ? Infinity : r;
}

export type RequestLimitsMode = "disabled" | "permissive" | "enforcing";
export const requestLimitsModes: readonly RequestLimitsMode[] = ["disabled", "permissive", "enforcing"];

export interface RateLimitsConfig {
  /** limits.rpc_rate: requests per second; Infinity (or negative) = no limit. */
  rpcRate: number;
  /** limits.rpc_max_burst. */
  rpcMaxBurst: number;
  /** limits.request_limits. */
  requestLimits: { mode: RequestLimitsMode; readRate: number; writeRate: number };
}

/** What a server's request limit makes of a method (consul rpcRateLimitSpecs). */
export function requestKind(method: string): "read" | "write" | "exempt" {
  if (method.startsWith("Status.") || method.startsWith("Operator.") || method.startsWith("Snapshot.")) return "exempt";
  if (writeMethods.has(method) || method === "Session.Renew" || method === "Coordinate.Update" || method === "Internal.EventFire") return "write";
  return "read";
}

/** Consul's burst for a global limit: 10 × the whole rate (at least 1 unless the rate is 0). */
export function requestBurst(ratePerSec: number): number {
  if (!(ratePerSec >= 0) || ratePerSec === Infinity) return 0;
  if (ratePerSec === 0) return 0;
  return Math.max(1, Math.floor(ratePerSec) * 10);
}

/** A counter to bump (the agent's metrics): Consul's names, without the "consul." prefix. */
export type RateLimitCounter = (name: string, labels?: Record<string, string>) => void;

/**
 * An agent's rate limits: its own outgoing RPC bucket, and on servers the
 * global request buckets. One object per agent; `update` applies a reload.
 */
export class RateLimits {
  readonly #rpc: TokenBucket;
  readonly #read: TokenBucket;
  readonly #write: TokenBucket;
  #mode: RequestLimitsMode;
  readonly #logger: Logger | undefined;
  #counter: RateLimitCounter = () => {};
  readonly stats = { rpcExceeded: 0, readExceeded: 0, writeExceeded: 0, refused: 0 };

  constructor(clock: Clock, config: RateLimitsConfig, logger?: Logger) {
    this.#rpc = new TokenBucket(clock, { ratePerSec: config.rpcRate, burst: config.rpcMaxBurst });
    const { readRate, writeRate } = config.requestLimits;
    this.#read = new TokenBucket(clock, { ratePerSec: readRate, burst: requestBurst(readRate) });
    this.#write = new TokenBucket(clock, { ratePerSec: writeRate, burst: requestBurst(writeRate) });
    this.#mode = config.requestLimits.mode;
    this.#logger = logger;
  }

  get mode(): RequestLimitsMode {
    return this.#mode;
  }

  /** Where the counts go (set once the agent's metrics exist). */
  countTo(counter: RateLimitCounter): void {
    this.#counter = counter;
  }

  /** `cairn reload`: Consul reloads rpc_rate, rpc_max_burst and request_limits. */
  update(config: RateLimitsConfig): void {
    this.#rpc.update({ ratePerSec: config.rpcRate, burst: config.rpcMaxBurst });
    const { readRate, writeRate } = config.requestLimits;
    this.#read.update({ ratePerSec: readRate, burst: requestBurst(readRate) });
    this.#write.update({ ratePerSec: writeRate, burst: requestBurst(writeRate) });
    this.#mode = config.requestLimits.mode;
  }

  /** Before each try of an RPC this agent sends: throws RpcRateExceededError when the bucket is empty. */
  checkOutgoing(): void {
    this.#counter("client.rpc");
    if (this.#rpc.allow()) return;
    this.stats.rpcExceeded++;
    this.#counter("client.rpc.exceeded");
    throw new RpcRateExceededError();
  }

  /**
   * Before a server handles a request (from another agent, or its own
   * agent's): throws RateLimitedError when `enforcing` refuses it.
   */
  checkRequest(method: string, isLeader: () => boolean): void {
    if (this.#mode === "disabled") return;
    const kind = requestKind(method);
    if (kind === "exempt") return;
    const bucket = kind === "read" ? this.#read : this.#write;
    if (bucket.allow()) return;
    if (kind === "read") this.stats.readExceeded++;
    else this.stats.writeExceeded++;
    const enforced = this.#mode === "enforcing";
    const limitType = `global/${kind}`;
    this.#logger?.debug("RPC exceeded allowed rate limit", { rpc: method, limit_type: limitType, limit_enforced: enforced });
    this.#counter("rpc.rate_limit.exceeded", { limit_type: limitType, op: method, mode: this.#mode });
    if (!enforced) return;
    this.stats.refused++;
    throw new RateLimitedError(!(kind === "write" && isLeader()));
  }
}
