// HTTP checks (consul agent/checks CheckHTTP): 2xx is passing, 429 warning,
// anything else (or no answer) critical. Output is the status line and the
// start of the body, capped. node:http/https rather than fetch, so
// tls_skip_verify and tls_server_name can be honoured.
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { STATUS_CODES } from "node:http";
import type { CheckType } from "../local/types.ts";
import { capOutput, defaultOutputMaxSize, type ProbeResult } from "./runner.ts";

export const httpCheckUserAgent = "Consul Health Check";

/** One request; never throws. */
export function httpProbe(t: Pick<CheckType, "http" | "method" | "header" | "body" | "tlsSkipVerify" | "tlsServerName" | "outputMaxSize">, signal: AbortSignal): Promise<ProbeResult> {
  const method = (t.method || "GET").toUpperCase();
  const max = t.outputMaxSize || defaultOutputMaxSize;
  let url: URL;
  try {
    url = new URL(t.http);
  } catch {
    return Promise.resolve({ status: "critical", output: `parse "${t.http}": invalid URL` });
  }
  const headers: Record<string, string | string[]> = {
    "User-Agent": httpCheckUserAgent,
    Accept: "text/plain, text/*, */*",
  };
  for (const [k, v] of Object.entries(t.header)) headers[k] = v;
  const body = t.body ? new TextEncoder().encode(t.body) : undefined;
  if (body) headers["Content-Length"] = String(body.length);
  const goName = method.charAt(0) + method.slice(1).toLowerCase();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: ProbeResult) => {
      if (settled) return;
      settled = true;
      resolve(r);
    };
    const opts = {
      method,
      headers,
      signal,
      // No connection reuse between runs (Consul's check client disables keep-alives).
      agent: false as const,
      ...(url.protocol === "https:" ? { rejectUnauthorized: !t.tlsSkipVerify, servername: t.tlsServerName || undefined } : {}),
    };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, opts, (res: IncomingMessage) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      res.on("data", (c: Uint8Array) => {
        if (size < max + 1) {
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
        const text = new TextDecoder().decode(all);
        const statusLine = `${code} ${res.statusMessage || STATUS_CODES[code] || ""}`.trim();
        const output = capOutput(`HTTP ${method} ${t.http}: ${statusLine} Output: ${text}`, max + 256);
        const status = code >= 200 && code <= 299 ? "passing" : code === 429 ? "warning" : "critical";
        finish({ status, output });
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
      finish({ status: "critical", output: `${goName} "${t.http}": ${reason}` });
    });
    if (body) req.end(body);
    else req.end();
  });
}
