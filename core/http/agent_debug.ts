// What `cairn debug` and `cairn doctor` read about an agent's own process and
// host: /v1/agent/host (consul agent/agent_endpoint.go AgentHost: operator:read,
// always on), and a CPU profile and a heap snapshot of the agent process
// (Consul's /debug/pprof/profile?seconds=N and /debug/pprof/heap). Those two
// are gated as Consul gates pprof (agent/http.go handlePProf): without
// enable_debug and without ACLs the answer is 401; with ACLs a token with
// operator:read may take them (the route's rule). cairn's formats are V8's
// (.cpuprofile, .heapsnapshot: Chrome DevTools opens them), not pprof, so
// the paths are cairn's own under /v1/agent/debug/.
import { HttpError } from "./http_error.ts";
import { jsonResponse, wantsPretty, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** Host facts in gopsutil's field names, as Consul's /v1/agent/host carries them. */
export interface HostFacts {
  Memory: { total: number; available: number; used: number; usedPercent: number; free: number };
  CPU: { cpu: number; modelName: string; mhz: number; cores: number }[];
  Host: {
    hostname: string;
    uptime: number;
    bootTime: number;
    os: string;
    platform: string;
    kernelVersion: string;
    kernelArch: string;
  };
  /** The data dir's file system (statfs); null in -dev (no data dir) or when statfs failed (see Errors). */
  Disk: { path: string; fstype: string; total: number; free: number; used: number; usedPercent: number; inodesTotal: number; inodesFree: number; inodesUsed: number; inodesUsedPercent: number } | null;
  /** cairn's addition: the agent process itself. */
  Process: { pid: number; uptime: number; rssBytes: number; heapUsedBytes: number; heapTotalBytes: number; nodeVersion: string };
  /** Unix nanoseconds, when the facts were read. */
  CollectionTime: number;
  /** What could not be read, and why. */
  Errors: Record<string, string>;
}

export interface AgentDebugBackend {
  /** enable_debug: the profile and heap endpoints answer (ACLs, once cairn has them, will let operator:read in too). */
  enabled(): boolean;
  host(): Promise<HostFacts>;
  /** A V8 CPU profile (.cpuprofile JSON) over `seconds`, cut short when `signal` aborts. */
  cpuProfile(options: { seconds: number; signal?: AbortSignal }): Promise<string>;
  /**
   * A V8 heap snapshot (.heapsnapshot JSON) as the chunks V8 wrote it (a
   * big heap's snapshot is longer than one string may be), every secret the
   * agent holds and every string in `redact` replaced.
   */
  heapSnapshot(options: { redact: readonly string[] }): Promise<Iterable<string>>;
}

/** Longest profile one request may ask for (Consul's debug asks for its whole -duration). */
export const maxProfileSeconds = 3_600;

/** GET /v1/agent/host */
export function agentHostHandler(debug: AgentDebugBackend): Handler {
  return async (req) => jsonResponse(await debug.host(), { pretty: wantsPretty(req) });
}

function requireDebug(debug: AgentDebugBackend): void {
  // Consul's checkACLDisabled: 401 "ACL support disabled" when neither enable_debug nor ACLs let the caller in.
  if (!debug.enabled()) {
    throw new HttpError(401, "Debug endpoints are disabled on this agent: set enable_debug = true in its configuration (ACL support disabled)");
  }
}

/** The caller's token as sent, so the heap snapshot does not carry it back. */
function requestToken(req: HttpRequest): string {
  const h = req.headers["x-consul-token"];
  if (typeof h === "string" && h !== "") return h;
  const auth = req.headers["authorization"];
  if (typeof auth === "string" && /^bearer\s+/i.test(auth)) return auth.replace(/^bearer\s+/i, "");
  return req.query.get("token") ?? "";
}

/** GET /v1/agent/debug/profile?seconds=N (default 30, as Go's pprof) */
export function agentDebugProfileHandler(debug: AgentDebugBackend): Handler {
  return async (req): Promise<HttpResponse> => {
    requireDebug(debug);
    const text = req.query.get("seconds");
    let seconds = 30;
    if (text !== null && text !== "") {
      seconds = Number(text);
      if (!/^\d+$/.test(text) || seconds < 1 || seconds > maxProfileSeconds) {
        throw new HttpError(400, `Invalid seconds "${text}": a whole number from 1 to ${maxProfileSeconds}`);
      }
    }
    const profile = await debug.cpuProfile({ seconds, signal: req.signal });
    return { status: 200, headers: { "Content-Type": "application/json", "Content-Disposition": 'attachment; filename="profile.cpuprofile"' }, body: profile };
  };
}

/** GET /v1/agent/debug/heap */
export function agentDebugHeapHandler(debug: AgentDebugBackend): Handler {
  return async (req): Promise<HttpResponse> => {
    requireDebug(debug);
    const token = requestToken(req);
    const chunks = await debug.heapSnapshot({ redact: token ? [token] : [] });
    async function* stream(): AsyncGenerator<string> {
      yield* chunks;
    }
    return { status: 200, headers: { "Content-Type": "application/json", "Content-Disposition": 'attachment; filename="heap.heapsnapshot"' }, body: "", stream: stream() };
  };
}

/**
 * Every occurrence of each needle replaced across a sequence of chunks, a
 * needle split between two chunks included: each step keeps back the last
 * (longest needle - 1) characters, which may be the start of one.
 * `seen.replaced` tells whether anything was.
 */
export function* replaceAcrossChunks(chunks: Iterable<string>, needles: readonly string[], replacement: string, seen: { replaced: boolean } = { replaced: false }): Generator<string> {
  const list = [...new Set(needles.filter((n) => n !== ""))];
  if (list.length === 0) {
    yield* chunks;
    return;
  }
  const keep = Math.max(...list.map((n) => n.length)) - 1;
  const replaceAll = (text: string) =>
    list.reduce((t, n) => {
      if (!t.includes(n)) return t;
      seen.replaced = true;
      return t.split(n).join(replacement);
    }, text);
  let carry = "";
  for (const chunk of chunks) {
    const text = replaceAll(carry + chunk);
    if (text.length <= keep) {
      carry = text;
      continue;
    }
    yield text.slice(0, text.length - keep);
    carry = keep > 0 ? text.slice(text.length - keep) : "";
  }
  if (carry !== "") yield replaceAll(carry);
}

/** For agents built without the node side (tests): every debug route answers a clear 500. */
export const unavailableDebug: AgentDebugBackend = {
  enabled: () => true,
  host: () => Promise.reject(new Error("Host facts are not available in this agent")),
  cpuProfile: () => Promise.reject(new Error("CPU profiles are not available in this agent")),
  heapSnapshot: () => Promise.reject(new Error("Heap snapshots are not available in this agent")),
};
