// The one place where errors become HTTP status codes (consul agent/http.go
// `handleErr`). Bodies are plain text, as Consul writes them.
import { CairnError, errorMessage } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { textResponse, type HttpResponse } from "./types.ts";

/** An error that already knows its status (consul `HTTPError{StatusCode, Reason}`). */
export class HttpError extends CairnError {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super("http", message, { cause: options.cause });
    this.status = status;
    this.headers = options.headers ?? {};
  }
}

const statusByCode: Record<string, number> = {
  bad_request: 400,
  not_found: 404,
  too_large: 413,
  cas_conflict: 409,
  permission_denied: 403,
  acl_not_found: 403,
  acl_disabled: 401,
  // Rate limits (consul agent/http.go): this agent's rpc_rate, or a server's request_limits that
  // another server may not share (429); a write the leader alone could take, refused by it (503).
  rpc_rate_exceeded: 429,
  rate_limit_elsewhere: 429,
  rate_limit_later: 503,
  // Consul answers these with its catch-all 500 and the error text.
  no_leader: 500,
  not_leader: 500,
  rpc_timeout: 500,
};

const rateLimitCodes: ReadonlySet<string> = new Set(["rpc_rate_exceeded", "rate_limit_elsewhere", "rate_limit_later"]);

/** Status code for an error, by its `code` (see core/errors.ts). */
export function statusForError(err: unknown): number {
  if (err instanceof HttpError) return err.status;
  if (err instanceof CairnError) return statusByCode[err.code] ?? 500;
  return 500;
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || (err as { code?: unknown }).code === "ABORT_ERR");
}

/** Turn any thrown value into Consul's plain-text error answer. */
export function errorResponse(err: unknown, logger?: Logger, context?: { method: string; path: string }): HttpResponse {
  if (isAbort(err)) return textResponse(503, "Request canceled");
  const status = statusForError(err);
  const message = errorMessage(err);
  // A rate limit's refusal was logged (at debug) and counted where it was decided; a storm of them must not flood the log.
  const limited = err instanceof CairnError && rateLimitCodes.has(err.code);
  if (status >= 500 && !limited) logger?.warn("request failed", { ...context, status, error: message });
  else logger?.debug("request rejected", { ...context, status, error: message });
  const headers = err instanceof HttpError ? { ...err.headers } : {};
  return textResponse(status, message, headers);
}
