// The server's RPC surface: one handler per RpcMethods entry, gathered from
// the endpoint family files. Transports (in-process, TCP) dispatch here.

import type { Clock } from "../clock/clock.ts";
import type { Logger } from "../log/logger.ts";
import { nullLogger } from "../log/logger.ts";
import { BadRequestError } from "../errors.ts";
import type { HandlerOptions, Rpc, RpcArgs, RpcHandlers, RpcMethod, RpcReply } from "../rpc/methods.ts";
import { parseRequestId } from "../state/requests.ts";
import type { Rng } from "../sim/rng.ts";
import type { CoordinateSource } from "../gossip/near.ts";
import type { QueryTimes } from "./blocking.ts";
import type { Consensus } from "./consensus.ts";
import type { ServerContext } from "./context.ts";
import type { Fsm } from "./fsm.ts";
import { catalogEndpoints } from "./catalog.ts";
import { withAclFilters } from "./acl_filter.ts";
import { aclAuthorize, aclEndpoints, AclResolver, initializeAcls, type AclServerConfig } from "./acl.ts";
import { AclReplicator } from "./acl_replication.ts";
import { CoordinateBatcher, coordinateEndpoints, type CoordinateUpdateConfig } from "./coordinate.ts";
import { healthEndpoints } from "./health.ts";
import { kvsEndpoints } from "./kvs.ts";
import { operatorMethodAccess } from "./operator.ts";
import { preparedQueryEndpoints } from "./prepared_query.ts";
import { sessionEndpoints } from "./session.ts";
import { SessionTimers } from "./leader/session_ttl.ts";
import { snapshotEndpoints } from "./snapshot.ts";
import { statusEndpoints } from "./status.ts";
import { txnEndpoints } from "./txn.ts";

export interface ServerOptions {
  fsm: Fsm;
  consensus: Consensus;
  clock: Clock;
  /** Jitter for blocking queries. */
  rng: Rng;
  logger?: Logger;
  /** Datacenter name stamped on catalog nodes (default "dc1"). */
  datacenter?: string;
  /** Known datacenters, nearest first (WAN gossip); default: just ours. */
  datacenters?: () => string[];
  /** Calls to other datacenters (the server's router), for prepared-query failover. */
  remote?: () => Rpc | undefined;
  /** LAN coordinates of this agent's pool, for prepared queries' `near` sort. */
  coordinates?: CoordinateSource;
  /** Blocking waits (default_query_time, max_query_time); default Consul's. */
  queryTimes?: QueryTimes;
  /** How the leader batches agents' coordinate updates (consul.coordinate.*); default Consul's. */
  coordinateUpdate?: Partial<CoordinateUpdateConfig>;
  /** ACLs (`acl {}`); absent: off. */
  acl?: AclServerConfig;
}

export class Server {
  readonly handlers: RpcHandlers;
  /** Session TTL timers (leader only); the agent calls `start()` on servers so a new leader re-arms them. */
  readonly sessionTimers: SessionTimers;
  /** Coordinate updates waiting for the leader's next batch; stopped with the server. */
  readonly coordinateBatcher: CoordinateBatcher;
  readonly #ctx: ServerContext;

  constructor(options: ServerOptions) {
    this.#ctx = {
      fsm: options.fsm,
      consensus: options.consensus,
      clock: options.clock,
      rng: options.rng,
      logger: (options.logger ?? nullLogger()).named("server"),
      datacenter: options.datacenter ?? "dc1",
      datacenters: options.datacenters,
      remote: options.remote,
      queryTimes: options.queryTimes,
    };
    const fsm = options.fsm;
    if (options.acl) {
      const acl = new AclResolver(options.acl, () => fsm.state, this.#ctx.datacenter ?? "dc1", { rpc: () => options.remote?.(), now: () => options.clock.now() });
      this.#ctx.acl = acl;
      // A secondary datacenter's servers replicate ACLs from the primary (its leader runs this).
      if (acl.isSecondary) {
        this.#ctx.aclReplication = new AclReplicator(this.#ctx, {
          primary: acl.primaryDatacenter,
          tokens: options.acl.enableTokenReplication === true,
          replicationToken: () => options.acl?.replicationToken?.() ?? "",
          remote: () => options.remote?.(),
        });
      }
    }
    this.sessionTimers = new SessionTimers(this.#ctx);
    this.coordinateBatcher = new CoordinateBatcher(this.#ctx, options.coordinateUpdate);
    this.handlers = withAclFilters(this.#ctx, {
      ...aclEndpoints(this.#ctx),
      ...kvsEndpoints(this.#ctx),
      ...txnEndpoints(this.#ctx),
      ...statusEndpoints(this.#ctx),
      ...catalogEndpoints(this.#ctx),
      ...healthEndpoints(this.#ctx),
      ...sessionEndpoints(this.#ctx, this.sessionTimers),
      ...snapshotEndpoints(this.#ctx),
      ...preparedQueryEndpoints(this.#ctx, { coordinates: options.coordinates }),
      ...coordinateEndpoints(this.#ctx, this.coordinateBatcher),
    });
  }

  get fsm(): Fsm {
    return this.#ctx.fsm;
  }

  get consensus(): Consensus {
    return this.#ctx.consensus;
  }

  /** The ACL resolver (undefined: ACLs not configured). */
  get acl(): AclResolver | undefined {
    return this.#ctx.acl;
  }

  /** On a new leader: store the built-in policies, the anonymous and initial management tokens (retried by the caller). */
  initializeAcls(): Promise<boolean> {
    return initializeAcls(this.#ctx);
  }

  /**
   * Check the token an operator call (Operator.Raft*, Operator.Autopilot*,
   * Operator.ServerHealth: served outside `handlers`) carries in its args;
   * throws PermissionDeniedError or AclNotFoundError. Other methods pass.
   */
  authorizeOperator(method: string, args: unknown): void {
    const access = Object.hasOwn(operatorMethodAccess, method) ? operatorMethodAccess[method] : undefined;
    if (!access) return;
    const token = (args as { token?: unknown } | null)?.token;
    aclAuthorize(this.#ctx, typeof token === "string" ? token : undefined, "operator", access);
  }

  /** ACL replication from the primary (a secondary datacenter's servers); the agent starts it with leadership. */
  get aclReplication(): AclReplicator | undefined {
    return this.#ctx.aclReplication;
  }

  /**
   * Answer one RPC. Unknown methods reject with a TypeError (callers are
   * typed). In a secondary datacenter a token this server cannot answer for
   * is first resolved at the primary, so the endpoints' checks stay synchronous.
   */
  handle<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal; internal?: boolean }): Promise<RpcReply<M>> {
    const wait = options?.internal !== true && method !== "ACL.Resolve" ? this.prefetchAcl(args) : undefined;
    return wait ? wait.then(() => this.#dispatch(method, args, options)) : this.#dispatch(method, args, options);
  }

  /**
   * In a secondary datacenter: resolve the token in `args` (`token` or
   * `query.token`) at the primary when this server cannot answer for it;
   * undefined when there is nothing to wait for. Callers that check tokens
   * outside `handle` (operator calls) wait for it first.
   */
  prefetchAcl(args: unknown): Promise<void> | undefined {
    const acl = this.#ctx.acl;
    if (!acl?.isSecondary) return undefined;
    const a = args as { token?: unknown; query?: { token?: unknown } } | null;
    const t = a?.token ?? a?.query?.token;
    const token = typeof t === "string" ? t : undefined;
    return acl.remoteNeeded(token) ? acl.prefetch(token) : undefined;
  }

  #dispatch<M extends RpcMethod>(method: M, args: RpcArgs<M>, options?: { signal?: AbortSignal; internal?: boolean }): Promise<RpcReply<M>> {
    const h = this.handlers[method] as
      | ((a: RpcArgs<M>, o?: HandlerOptions) => Promise<RpcReply<M>>)
      | undefined;
    if (typeof h !== "function" || !Object.hasOwn(this.handlers, method)) {
      return Promise.reject(new TypeError(`Unknown RPC method ${JSON.stringify(String(method))}`));
    }
    try {
      const rawId = (args as { requestId?: unknown } | null)?.requestId;
      if (rawId === undefined) return h(args, options);
      const requestId = parseRequestId(rawId);
      if (typeof requestId === "string") throw new BadRequestError(`Invalid request: ${requestId}`);
      return h(args, { ...options, requestId });
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
