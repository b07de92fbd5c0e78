// One keep-alive HTTP call for the benchmarks: status, X-Consul-Index, body.
import { type Agent, request } from "node:http";

export interface Reply {
  status: number;
  index: number;
  body: Buffer;
}

export function httpCall(target: { host: string; port: number }, agent: Agent, method: string, path: string, body?: string | Buffer): Promise<Reply> {
  return new Promise((ok, fail) => {
    const req = request({ host: target.host, port: target.port, method, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => ok({ status: res.statusCode ?? 0, index: Number(res.headers["x-consul-index"] ?? 0), body: Buffer.concat(chunks) }));
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end(body);
  });
}
