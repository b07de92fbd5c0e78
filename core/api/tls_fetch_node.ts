// A fetch for HTTPS agents with the CLI's TLS options (-ca-file, -ca-path,
// -client-cert, -client-key, -tls-server-name, CONSUL_HTTP_SSL_VERIFY=false):
// the global fetch cannot take a CA or a client certificate without undici's
// own classes, which Node does not expose. node:https does, and its answer is
// handed back as a standard Response, body streamed (agent monitor); a
// ReadableStream request body is streamed too (snapshot restore).
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { readCas } from "../tls_context_node.ts";

export interface ClientTlsOptions {
  caFile?: string;
  caPath?: string;
  certFile?: string;
  keyFile?: string;
  /** SNI and the name the certificate must carry (default: the address's host). */
  serverName?: string;
  /** false: do not check the agent's certificate (CONSUL_HTTP_SSL_VERIFY=false). */
  verify?: boolean;
}

/** Whether any option needs more than the global fetch. */
export function needsTlsFetch(o: ClientTlsOptions): boolean {
  return !!(o.caFile || o.caPath || o.certFile || o.keyFile || o.serverName || o.verify === false);
}

/** The files the options name, read once: a missing file is the command's error before any request. */
export interface ClientTlsMaterial {
  ca?: Buffer[];
  cert?: Buffer;
  key?: Buffer;
}

export function readClientTls(o: ClientTlsOptions): ClientTlsMaterial {
  const cas = readCas(o.caFile ?? "", o.caPath ?? "");
  return {
    ...(cas.length > 0 ? { ca: cas } : {}),
    ...(o.certFile ? { cert: readFileSync(o.certFile) } : {}),
    ...(o.keyFile ? { key: readFileSync(o.keyFile) } : {}),
  };
}

/**
 * node:tls client options for these settings (what node:https is given, and
 * tls.connect for the snapshot download): the CA, the client certificate,
 * SNI and the name checked, whether to check at all.
 */
export function clientTlsConnectOptions(o: ClientTlsOptions, m: ClientTlsMaterial): import("node:tls").ConnectionOptions {
  return {
    ...(m.ca ? { ca: m.ca } : {}),
    ...(m.cert ? { cert: m.cert } : {}),
    ...(m.key ? { key: m.key } : {}),
    ...(o.serverName ? { servername: o.serverName } : {}),
    rejectUnauthorized: o.verify !== false,
    ...(o.serverName && o.verify !== false
      ? { checkServerIdentity: (_host: string, c: import("node:tls").PeerCertificate) => process.getBuiltinModule("node:tls").checkServerIdentity(o.serverName!, c) }
      : {}),
  };
}

export function tlsFetch(o: ClientTlsOptions): typeof fetch {
  const material = readClientTls(o);
  const https = process.getBuiltinModule("node:https");
  const http = process.getBuiltinModule("node:http");
  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    const method = init?.method ?? "GET";
    const headers = new Headers(init?.headers);
    // A stream (snapshot restore's file) is sent as it is read, chunked: read
    // whole first, a 1 GiB archive sat in the CLI's memory before a byte left.
    const stream = init?.body instanceof ReadableStream ? (init.body as ReadableStream<Uint8Array>) : undefined;
    const body = stream || init?.body === undefined || init.body === null ? undefined : new Uint8Array(await new Response(init.body).arrayBuffer());
    if (body) headers.set("Content-Length", String(body.length));
    const plain: Record<string, string> = {};
    headers.forEach((v, k) => (plain[k] = v));
    const lib = url.protocol === "https:" ? https : http;
    return await new Promise<Response>((resolve, reject) => {
      const req = lib.request(url, {
        method,
        headers: plain,
        agent: false,
        ...(init?.signal ? { signal: init.signal } : {}),
        ...(url.protocol === "https:" ? clientTlsConnectOptions(o, material) : {}),
      }, (res) => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const x of v) h.append(k, x);
          else if (v !== undefined) h.set(k, v);
        }
        const status = res.statusCode ?? 500;
        const noBody = method === "HEAD" || status === 204 || status === 304;
        if (noBody) res.resume();
        resolve(new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers: h }));
      });
      // fetch's shape: the node error rides as `cause`, which ApiClient reads.
      req.on("error", (err) => reject(new TypeError("fetch failed", { cause: err })));
      if (stream) {
        const source = Readable.fromWeb(stream as import("node:stream/web").ReadableStream<Uint8Array>);
        source.on("error", (err) => req.destroy(err));
        source.pipe(req);
      } else {
        req.end(body);
      }
    });
  }) as typeof fetch;
}
