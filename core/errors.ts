// Error hierarchy shared by every layer. Each error has a stable `code`;
// core/http maps codes to status codes and cli/ maps them to exit codes.

export class CairnError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A request was malformed: bad body, bad parameter, bad flag. */
export class BadRequestError extends CairnError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("bad_request", message, options);
  }
}

export class NotFoundError extends CairnError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The caller's token does not allow the operation (consul acl.ErrPermissionDenied; HTTP 403). */
export class PermissionDeniedError extends CairnError {
  constructor(reason?: string) {
    super("permission_denied", reason ? `Permission denied: ${reason}` : "Permission denied");
  }
}

/** The request's token is not known (consul acl.ErrNotFound; HTTP 403 "ACL not found"). */
export class AclNotFoundError extends CairnError {
  constructor() {
    super("acl_not_found", "ACL not found");
  }
}

/** An ACL endpoint was asked while ACLs are off (consul acl.ErrDisabled; HTTP 401). */
export class AclDisabledError extends CairnError {
  constructor() {
    super("acl_disabled", "ACL support disabled");
  }
}

/** A request body or value was over a size limit. */
export class TooLargeError extends CairnError {
  readonly limitBytes: number;
  constructor(message: string, limitBytes: number) {
    super("too_large", message);
    this.limitBytes = limitBytes;
  }
}

export class NotLeaderError extends CairnError {
  readonly leader?: string;
  constructor(leader?: string) {
    super("not_leader", leader ? `Not the leader: leader is "${leader}"` : "Not the leader");
    this.leader = leader;
  }
}

export class NoLeaderError extends CairnError {
  constructor() {
    super("no_leader", "No cluster leader");
  }
}

/**
 * A leader lost its leadership (or stopped) while a write it had proposed was
 * in flight: the write may still be committed by the next leader, or not.
 * Only a write that carries a request id may be sent again after this.
 */
export class LeadershipLostError extends CairnError {
  readonly leader?: string;
  constructor(leader?: string, options?: { cause?: unknown }) {
    super("leadership_lost", "Leadership lost while the request was being committed", options);
    this.leader = leader;
  }
}

/**
 * The FSM cannot tell whether a request id was applied before: its record
 * has been dropped from the request table. Nothing was applied this time.
 */
export class RequestExpiredError extends CairnError {
  /** The lowest issuer epoch the table still accepts for an unknown issuer (0: not an issuer problem). */
  readonly minEpoch: number;
  constructor(message: string, minEpoch = 0) {
    super("request_expired", message);
    this.minEpoch = minEpoch;
  }
}

/** A write was possibly applied, and no answer says whether: the client must read to find out. */
export class OutcomeUnknownError extends CairnError {
  constructor(reason: string, options?: { cause?: unknown }) {
    super("outcome_unknown", `Write outcome unknown, it may or may not have been applied: ${reason}`, options);
  }
}

/** A request names a datacenter no server knows (consul structs.ErrNoDCPath). */
export class NoPathToDatacenterError extends CairnError {
  readonly datacenter: string;
  constructor(datacenter: string) {
    super("no_path_to_dc", "No path to datacenter");
    this.datacenter = datacenter;
  }
}

/** A datacenter the WAN pool knows, with no server that answers (consul structs.ErrDCNotAvailable). */
export class DcUnavailableError extends CairnError {
  readonly datacenter: string;
  constructor(datacenter: string, options?: { cause?: unknown }) {
    super("dc_unavailable", "Remote DC has no server currently reachable", options);
    this.datacenter = datacenter;
  }
}

/** This agent's own token bucket on the RPCs it sends refused one (consul structs.ErrRPCRateExceeded, limits.rpc_rate; HTTP 429). */
export class RpcRateExceededError extends CairnError {
  constructor() {
    super("rpc_rate_exceeded", "RPC rate limit exceeded");
  }
}

/**
 * A server's global read or write limit (limits.request_limits, enforcing)
 * refused a request before any handler ran (consul rate.ErrRetryElsewhere /
 * ErrRetryLater). `elsewhere`: another server may take it (HTTP 429); else
 * only the leader can, and it is the one refusing (a write: HTTP 503).
 */
export class RateLimitedError extends CairnError {
  readonly elsewhere: boolean;
  constructor(elsewhere: boolean) {
    super(
      elsewhere ? "rate_limit_elsewhere" : "rate_limit_later",
      elsewhere
        ? "rate limit exceeded, try again later or against a different server"
        : "rate limit exceeded for operation that can only be performed by the leader, try again later",
    );
    this.elsewhere = elsewhere;
  }
}

export class CasConflictError extends CairnError {
  constructor(message: string) {
    super("cas_conflict", message);
  }
}

export class RpcTimeoutError extends CairnError {
  constructor(message: string) {
    super("rpc_timeout", message);
  }
}

/** An RPC failed in transport (connection refused or lost) or the remote end answered with an error we do not map. */
export class RpcError extends CairnError {
  /** The error code the remote server sent, when the failure came from there. */
  readonly remoteCode?: string;
  /** True when the request provably never left this process (no connection could be made). */
  readonly unsent: boolean;
  constructor(message: string, options?: { cause?: unknown; remoteCode?: string; unsent?: boolean }) {
    super("rpc", message, options);
    this.remoteCode = options?.remoteCode;
    this.unsent = options?.unsent ?? false;
  }
}

export class ConfigError extends CairnError {
  readonly file?: string;
  readonly field?: string;
  readonly line?: number;
  constructor(message: string, where: { file?: string; field?: string; line?: number } = {}) {
    super("config", message);
    this.file = where.file;
    this.field = where.field;
    this.line = where.line;
  }
}

/** The FSM met a command it cannot apply; the node must halt. */
export class FsmError extends CairnError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("fsm", message, options);
  }
}

/**
 * The state store refused an operation: invalid session, failed txn check.
 * Consul answers these with 500 and the message as the body.
 */
export class StateError extends CairnError {
  constructor(message: string) {
    super("state", message);
  }
}

/** Data on disk failed a check (CRC, framing). */
export class CorruptionError extends CairnError {
  readonly file?: string;
  readonly offset?: number;
  constructor(message: string, where: { file?: string; offset?: number } = {}) {
    super("corruption", message);
    this.file = where.file;
    this.offset = where.offset;
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A listener (HTTP, DNS, gossip, RPC) could not be opened on its address. */
export class ListenError extends CairnError {
  readonly host: string;
  readonly port: number;
  constructor(message: string, where: { host: string; port: number; cause?: unknown }) {
    super("listen", message, { cause: where.cause });
    this.host = where.host;
    this.port = where.port;
  }
}

/**
 * Why a listener could not bind, with what to do about it. `what` names the
 * listener ("" for HTTP, " for DNS"), `portFlag` the flag that moves it.
 */
export function listenErrorText(o: { what: string; host: string; port: number; proto?: string; portFlag: string; checkWith: string; err: unknown }): string {
  const code = (o.err as { code?: unknown })?.code;
  const where = `Cannot listen${o.what} on ${o.host.includes(":") ? `[${o.host}]` : o.host}:${o.port}${o.proto ? ` (${o.proto})` : ""}`;
  switch (code) {
    case "EADDRINUSE":
      return `${where}: address already in use; another agent or program has it (check with \`${o.checkWith}\`), or pick another port with ${o.portFlag}`;
    case "EACCES":
      return `${where}: permission denied; ports below 1024 need extra privileges`;
    case "EADDRNOTAVAIL":
      return `${where}: address not available; "${o.host}" is not an address of this machine`;
    default:
      return `${where}: ${o.err instanceof Error ? o.err.message : String(o.err)}`;
  }
}
