// HTTP checks (consul agent/checks CheckHTTP): 2xx is passing, 429 warning,
// anything else (or no answer) critical. Output is the status line and the
// start of the body, capped. Redirects are followed (up to 10, as Go's
// client) unless disable_redirects. node:http/https rather than fetch, so
// tls_skip_verify and tls_server_name can be honoured.
import { request as httpRequest, STATUS_CODES, type IncomingMessage } from "node:http";
import type { CheckType } from "../service_defs/types.ts";
import { capOutput, defaultOutputMaxSize, type ProbeResult } from "./runner.ts";

export const httpCheckUserAgent = "Consul Health Check";
const maxRedirects = 10;

export type HttpProbeTarget = Pick<CheckType, "http" | "method" | "header" | "body" | "tlsSkipVerify" | "tlsServerName" | "outputMaxSize"> & {
  disableRedirects?: boolean;
  /** enable_agent_tls_for_checks: the agent's CAs and certificate for https:// checks. */
  agentTls?: AgentCheckTls;
};

/** What an HTTPS check borrows from the agent's TLS config (consul enable_agent_tls_for_checks). */
export interface AgentCheckTls {
  ca?: Uint8Array[];
  cert?: Uint8Array;
  key?: Uint8Array;
  serverName?: string;
}

/**
 * node:https, loaded on the first https:// check: importing it sets up TLS
 * (OpenSSL contexts, the tls and https modules), memory (docs/performance.md) that an agent
 * with no HTTPS check would otherwise carry for its whole life.
 */
function httpsRequest(): typeof import("node:https").request {
  return process.getBuiltinModule("node:https").request;
}

type Answer =
  | { kind: "response"; code: number; statusLine: string; text: string; location?: string }
  | { kind: "error"; reason: string };

function requestOnce(url: URL, method: string, t: HttpProbeTarget, body: Uint8Array | undefined, max: number, signal: AbortSignal): Promise<Answer> {
  const headers: Record<string, string | string[]> = {
    "User-Agent": httpCheckUserAgent,
    Accept: "text/plain, text/*, */*",
  };
  for (const [k, v] of Object.entries(t.header)) headers[k] = v;
  if (body) headers["Content-Length"] = String(body.length);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (a: Answer) => {
      if (settled) return;
      settled = true;
      resolve(a);
    };
    const opts = {
      method,
      headers,
      signal,
      // No connection reuse between runs (Consul's check client disables keep-alives).
      agent: false as const,
      ...(url.protocol === "https:"
        ? {
            rejectUnauthorized: !t.tlsSkipVerify,
            servername: t.tlsServerName || t.agentTls?.serverName || undefined,
            ...(t.agentTls?.ca ? { ca: t.agentTls.ca.map((c) => Buffer.from(c)) } : {}),
            ...(t.agentTls?.cert ? { cert: Buffer.from(t.agentTls.cert) } : {}),
            ...(t.agentTls?.key ? { key: Buffer.from(t.agentTls.key) } : {}),
          }
        : {}),
    };
    const req = (url.protocol === "https:" ? httpsRequest() : httpRequest)(url, opts, (res: IncomingMessage) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      res.on("data", (c: Uint8Array) => {
        if (size <= max) {
          chunks.push(c);
          size += c.length;
        }
        if (size > max) res.destroy();
      });
      const done = () => {
        const code = res.statusCode ?? 0;
        const all = new Uint8Array(Math.min(size, max));
        let off = 0;
        for (const c of chunks) {
          const take = Math.min(c.length, all.length - off);
          if (take <= 0) break;
          all.set(c.subarray(0, take), off);
          off += take;
        }
        const statusLine = `${code} ${res.statusMessage || STATUS_CODES[code] || ""}`.trim();
        const location = typeof res.headers.location === "string" ? res.headers.location : undefined;
        finish({ kind: "response", code, statusLine, text: new TextDecoder().decode(all), location });
      };
      res.once("end", done);
      res.once("close", done);
      res.once("error", done);
    });
    req.once("error", (err: Error & { code?: string }) => {
      const reason = signal.aborted
        ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        : err.code === "ECONNREFUSED"
        ? `dial tcp ${url.host}: connect: connection refused`
        : err.message;
      finish({ kind: "error", reason });
    });
    if (body) req.end(body);
    else req.end();
  });
}

/** One check run (following redirects); never throws. */
export async function httpProbe(t: HttpProbeTarget, signal: AbortSignal): Promise<ProbeResult> {
  let method = (t.method || "GET").toUpperCase();
  const max = t.outputMaxSize || defaultOutputMaxSize;
  const goName = (m: string) => m.charAt(0) + m.slice(1).toLowerCase();
  let url: URL;
  try {
    url = new URL(t.http);
  } catch {
    return { status: "critical", output: `parse "${t.http}": invalid URL` };
  }
  let body = t.body ? new TextEncoder().encode(t.body) : undefined;
  for (let hop = 0; ; hop++) {
    const a = await requestOnce(url, method, t, body, max, signal);
    if (a.kind === "error") return { status: "critical", output: `${goName(method)} "${url.toString() === new URL(t.http).toString() ? t.http : url.toString()}": ${a.reason}` };
    const redirect = a.location !== undefined && [301, 302, 303, 307, 308].includes(a.code) && !t.disableRedirects;
    if (redirect) {
      if (hop + 1 >= maxRedirects) return { status: "critical", output: `${goName(method)} "${a.location}": stopped after ${maxRedirects} redirects` };
      try {
        url = new URL(a.location!, url);
      } catch {
        return { status: "critical", output: `${goName(method)} "${t.http}": invalid redirect location "${a.location}"` };
      }
      // Go's client: 307/308 repeat the request; the others become a GET without a body.
      if (a.code !== 307 && a.code !== 308) {
        if (method !== "GET" && method !== "HEAD") method = "GET";
        body = undefined;
      }
      continue;
    }
    const output = capOutput(`HTTP ${(t.method || "GET").toUpperCase()} ${t.http}: ${a.statusLine} Output: ${a.text}`, max + 256);
    const status = a.code >= 200 && a.code <= 299 ? "passing" : a.code === 429 ? "warning" : "critical";
    return { status, output };
  }
}
