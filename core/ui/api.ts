// The web UI's HTTP client: same-origin /v1 calls with the token the user
// entered (kept in this browser's localStorage, sent as X-Consul-Token), the
// datacenter picked, errors carrying the API's own message and what to try,
// and blocking-query loops (X-Consul-Index) that back off when the agent
// fails and can be switched off.

const TOKEN_KEY = "cairn-ui-token";
const LIVE_KEY = "cairn-ui-live";

export function storedToken(): string {
  return localStorage.getItem(TOKEN_KEY) ?? "";
}

export function storeToken(token: string): void {
  if (token === "") localStorage.removeItem(TOKEN_KEY);
  else localStorage.setItem(TOKEN_KEY, token);
}

/** Live updates (blocking queries): on unless the user turned them off. */
export function liveUpdates(): boolean {
  return localStorage.getItem(LIVE_KEY) !== "off";
}

export function setLiveUpdates(on: boolean): void {
  localStorage.setItem(LIVE_KEY, on ? "on" : "off");
}

/** A failed call: the status, the API's own message, and a hint for a person. */
export class ApiError extends Error {
  readonly status: number;
  readonly hint: string;
  constructor(status: number, message: string, hint: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.hint = hint;
  }
}

function hintFor(status: number, message = ""): string {
  if (/No path to datacenter/i.test(message)) return "No server knows that datacenter (or none of its servers answer): pick another in the Datacenter menu.";
  if (/ACL support disabled/i.test(message)) return "ACLs are off in this cluster: its servers need acl { enabled = true } to use tokens, policies and roles.";
  if (/No cluster leader/i.test(message)) return "The servers have no leader right now: wait for an election, or check that a quorum of servers is up.";
  switch (status) {
    case 0: return "The agent did not answer: check that it is running and reachable, then reload the page.";
    case 400: return "The request was refused as malformed: check what you typed.";
    case 401: return "The agent refused this request (the feature may be turned off in its configuration).";
    case 403: return "Your token does not allow this: enter a token with the right policy under Settings.";
    case 404: return "It does not exist (any more): it may have been deleted meanwhile.";
    case 409: return "Someone else changed it meanwhile: reload and try again.";
    case 413: return "The value is larger than the agent accepts (limits.kv_max_value_size).";
    case 429: return "The agent is rate limiting: wait a moment and try again.";
    default: return status >= 500 ? "The agent or its servers failed: look at the agent's log; a cluster without a leader answers this way." : "";
  }
}

export interface ApiResult<T> {
  body: T;
  /** X-Consul-Index, 0 when absent. */
  index: number;
}

export interface CallOptions {
  method?: string;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Parse the answer as JSON (default) or keep the text. */
  text?: boolean;
  /** A 404 is an answer (body null), as for a KV prefix with nothing under it. */
  notFoundOk?: boolean;
}

/** One call to the agent's API: `path` starts with /v1/ and may carry a query. */
export async function api<T>(path: string, options: CallOptions = {}): Promise<ApiResult<T>> {
  const headers: Record<string, string> = {};
  const token = storedToken();
  if (token) headers["X-Consul-Token"] = token;
  let res: Response;
  try {
    res = await fetch(path, { method: options.method ?? "GET", body: options.body as BodyInit | undefined, headers, signal: options.signal, cache: "no-store" });
  } catch (err) {
    if (options.signal?.aborted) throw err;
    throw new ApiError(0, `Cannot reach the agent: ${(err as Error).message}`, hintFor(0));
  }
  const text = await res.text();
  if (res.status === 404 && options.notFoundOk) return { body: null as T, index: Number(res.headers.get("X-Consul-Index") ?? "0") || 0 };
  if (!res.ok) throw new ApiError(res.status, text.trim() || `${res.status} ${res.statusText}`, hintFor(res.status, text));
  const index = Number(res.headers.get("X-Consul-Index") ?? "0") || 0;
  if (options.text) return { body: text as T, index };
  return { body: (text === "" ? null : JSON.parse(text)) as T, index };
}

/** Append query parameters (skipping empty ones) to a path. */
export function withQuery(path: string, params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === false || v === "") continue;
    q.set(k, v === true ? "" : String(v));
  }
  const s = q.toString().replace(/=(&|$)/g, "$1");
  return s ? `${path}${path.includes("?") ? "&" : "?"}${s}` : path;
}

export interface Watch {
  stop(): void;
}

/**
 * Fetch `path`, then (with live updates on) block on it again and again with
 * ?index= the last X-Consul-Index and ?wait=, calling `onData` on each answer
 * and `onError` on each failure; after a failure it waits 1 s, 2 s, 4 s …
 * up to 30 s before the next try.
 */
export function watch<T>(path: string, handlers: { onData: (body: T, index: number) => void; onError: (err: ApiError) => void; waitSeconds?: number }): Watch {
  const abort = new AbortController();
  let stopped = false;
  void (async () => {
    let index = 0;
    let backoffMs = 0;
    while (!stopped) {
      try {
        const url = index > 0 ? withQuery(path, { index, wait: `${handlers.waitSeconds ?? 60}s` }) : path;
        const r = await api<T>(url, { signal: abort.signal, notFoundOk: true });
        backoffMs = 0;
        // An index going backwards (a snapshot restore, another server) starts over, as Consul's clients do.
        index = r.index < index ? 0 : r.index;
        if (!stopped) handlers.onData(r.body, r.index);
        if (!liveUpdates() || r.index === 0) return;
      } catch (err) {
        if (stopped) return;
        handlers.onError(err instanceof ApiError ? err : new ApiError(0, String(err), ""));
        backoffMs = Math.min(30_000, backoffMs === 0 ? 1_000 : backoffMs * 2);
        await new Promise((r) => setTimeout(r, backoffMs));
      }
    }
  })();
  return {
    stop() {
      stopped = true;
      abort.abort();
    },
  };
}

export function decodeBase64(value: string): string {
  return new TextDecoder().decode(base64ToBytes(value));
}

/** Whether base64 `value` decodes to valid UTF-8 text (otherwise the editor shows it as base64). */
export function isText(value: string): boolean {
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(base64ToBytes(value));
    return true;
  } catch {
    return false;
  }
}

/** A key as a URL path under /v1/kv/ (each segment escaped, the slashes kept). */
export function kvPath(key: string): string {
  return `/v1/kv/${key.split("/").map(encodeURIComponent).join("/")}`;
}

export function base64ToBytes(value: string): Uint8Array {
  return Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
}
