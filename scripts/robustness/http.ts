// One HTTP call with a deadline, classified the way a history needs it: a
// reply (any status), a timeout, or a connection error. Keep-alive sockets
// are shared per server through one Agent.
import { Agent, request } from "node:http";

export type HttpOutcome =
  | { kind: "reply"; status: number; body: string; headers: Record<string, string | string[] | undefined> }
  | { kind: "timeout" }
  | { kind: "error"; message: string };

const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export function httpRequest(
  url: string,
  options: { method?: string; body?: string; timeoutMs?: number } = {},
): Promise<HttpOutcome> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: HttpOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(o);
    };
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const req = request(url, {
      method: options.method ?? "GET",
      agent,
      headers: body ? { "content-length": body.length } : {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => finish({ kind: "reply", status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8"), headers: res.headers }));
      res.on("error", (err) => finish({ kind: "error", message: err.message }));
      res.on("aborted", () => finish({ kind: "error", message: "response aborted" }));
    });
    const timer = setTimeout(() => {
      finish({ kind: "timeout" });
      req.destroy();
    }, options.timeoutMs ?? 10_000);
    req.on("error", (err) => finish({ kind: "error", message: (err as NodeJS.ErrnoException).code ?? err.message }));
    req.end(body);
  });
}

/** "500 outcome unknown: …", "timeout", "ECONNRESET": for logs and error tallies. */
export function describeOutcome(o: HttpOutcome): string {
  if (o.kind === "timeout") return "timeout";
  if (o.kind === "error") return o.message;
  return `${o.status} ${o.body.trim().slice(0, 200)}`;
}

/** Close idle keep-alive sockets (at the end of a run, so the process can exit). */
export function closeIdleSockets(): void {
  agent.destroy();
}
