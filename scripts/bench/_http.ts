// One keep-alive HTTP call for the benchmarks: status, X-Consul-Index, body.
import { type Agent, type OutgoingHttpHeaders, request } from "node:http";
import { gunzipSync } from "node:zlib";

export interface Reply {
  status: number;
  index: number;
  /** As it came: gzipped when the answer's Content-Encoding says so (see replyText). */
  body: Buffer;
  gzipped: boolean;
}

/** The request headers of a client that takes gzipped answers, as Go's HTTP client (Consul's API client) is by default. */
export const acceptGzip: OutgoingHttpHeaders = { "Accept-Encoding": "gzip" };

/** A reply's body as text, gunzipped if it came gzipped. */
export function replyText(r: Pick<Reply, "body" | "gzipped">): string {
  return (r.gzipped ? gunzipSync(r.body) : r.body).toString();
}

export function httpCall(target: { host: string; port: number }, agent: Agent, method: string, path: string, body?: string | Buffer, headers?: OutgoingHttpHeaders): Promise<Reply> {
  return new Promise((ok, fail) => {
    const req = request({ host: target.host, port: target.port, method, path, agent, ...(headers ? { headers } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode ?? 0, index: Number(res.headers["x-consul-index"] ?? 0), body: Buffer.concat(chunks), gzipped: res.headers["content-encoding"] === "gzip" }));
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end(body);
  });
}
