// Errors crossing the server RPC wire: a handler's thrown error becomes
// `{ code, message, leader? }`; the caller gets back the same CairnError class
// when the code is one callers act on (not_leader, no_leader, not_found, ...),
// else an RpcError carrying the remote code.

import {
  AclDisabledError,
  AclNotFoundError,
  BadRequestError,
  CairnError,
  CasConflictError,
  DcUnavailableError,
  LeadershipLostError,
  NoLeaderError,
  NoPathToDatacenterError,
  NotFoundError,
  NotLeaderError,
  OutcomeUnknownError,
  PermissionDeniedError,
  RateLimitedError,
  RequestExpiredError,
  RpcError,
  RpcRateExceededError,
  RpcTimeoutError,
  TooLargeError,
} from "../errors.ts";
import type { WireError } from "./frame.ts";

export function toWireError(err: unknown): WireError {
  if (err instanceof NotLeaderError || err instanceof LeadershipLostError) {
    const w: WireError = { code: err.code, message: err.message };
    if (err.leader) w.leader = err.leader;
    return w;
  }
  if (err instanceof RequestExpiredError) return { code: err.code, message: err.message, minEpoch: err.minEpoch };
  if (err instanceof RpcError && err.remoteCode) return { code: err.remoteCode, message: err.message };
  if (err instanceof CairnError) return { code: err.code, message: err.message };
  if (err instanceof Error) return { code: "internal", message: err.message };
  return { code: "internal", message: String(err) };
}

export function fromWireError(w: WireError): Error {
  switch (w.code) {
    case "not_leader":
      return new NotLeaderError(w.leader || undefined);
    case "no_leader":
      return new NoLeaderError();
    case "no_path_to_dc":
      return new NoPathToDatacenterError("");
    case "dc_unavailable":
      return new DcUnavailableError("");
    case "leadership_lost":
      return new LeadershipLostError(w.leader || undefined);
    case "request_expired":
      return new RequestExpiredError(w.message, typeof w.minEpoch === "number" ? w.minEpoch : 0);
    case "outcome_unknown":
      return new OutcomeUnknownError(w.message.replace(/^Write outcome unknown, it may or may not have been applied: /, ""));
    case "not_found":
      return new NotFoundError(w.message);
    case "cas_conflict":
      return new CasConflictError(w.message);
    case "bad_request":
      return new BadRequestError(w.message);
    case "permission_denied":
      return new PermissionDeniedError(w.message.replace(/^Permission denied(: )?/, "") || undefined);
    case "acl_not_found":
      return new AclNotFoundError();
    case "acl_disabled":
      return new AclDisabledError();
    case "too_large":
      return new TooLargeError(w.message, 0);
    case "rpc_timeout":
      return new RpcTimeoutError(w.message);
    case "rate_limit_elsewhere":
      return new RateLimitedError(true);
    case "rate_limit_later":
      return new RateLimitedError(false);
    case "rpc_rate_exceeded":
      return new RpcRateExceededError();
    default:
      return new RpcError(w.message, { remoteCode: w.code });
  }
}
