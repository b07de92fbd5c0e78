// H2PING and gRPC checks, both over one HTTP/2 connection per run (consul
// agent/checks CheckH2PING and GrpcHealthProbe). node:http2 is loaded on the
// first such check, so an agent without one never carries it.
import type { ClientHttp2Session, SecureClientSessionOptions } from "node:http2";
import { settleOnce, type ProbeResult } from "./runner.ts";

function http2(): typeof import("node:http2") {
  return process.getBuiltinModule("node:http2");
}

export interface H2Target {
  address: string;
  useTls: boolean;
  tlsSkipVerify: boolean;
  tlsServerName: string;
}

type Dialed = { session: ClientHttp2Session } | { error: string };

/** Open a session to the target; resolves once connected, or with the dial error text. */
function connect(t: H2Target, signal: AbortSignal): Promise<Dialed> {
  const url = `${t.useTls ? "https" : "http"}://${t.address}`;
  const options: SecureClientSessionOptions = t.useTls
    ? { rejectUnauthorized: !t.tlsSkipVerify, ...(t.tlsServerName ? { servername: t.tlsServerName } : {}) }
    : {};
  let session: ClientHttp2Session;
  try {
    session = http2().connect(url, options);
  } catch (err) {
    return Promise.resolve({ error: (err as Error).message });
  }
  return settleOnce<Dialed>(signal, () => ({ error: "i/o timeout" }), (finish) => {
    session.once("connect", () => finish({ session }));
    session.once("error", (err: Error & { code?: string }) => {
      finish({ error: err.code === "ECONNREFUSED" ? `dial tcp ${t.address}: connect: connection refused` : err.message });
    });
    // A connected session goes on to the probe; one that failed goes now.
    return (r) => {
      if ("error" in r) session.destroy();
    };
  });
}

/** One HTTP/2 PING: passing when the peer answers it. Never throws. */
export async function h2pingProbe(t: H2Target, signal: AbortSignal): Promise<ProbeResult> {
  const c = await connect(t, signal);
  if ("error" in c) return { status: "critical", output: `Failed to dial to ${t.address}: ${c.error}` };
  const { session } = c;
  session.on("error", () => {});
  return settleOnce<ProbeResult>(signal, () => ({ status: "critical", output: "HTTP2 ping failed: context deadline exceeded" }), (finish) => {
    const sent = session.ping((err) => {
      if (err) finish({ status: "critical", output: `HTTP2 ping failed: ${err.message}` });
      else finish({ status: "passing", output: "HTTP2 ping was successful" });
    });
    if (!sent) finish({ status: "critical", output: "HTTP2 ping failed: too many pings in flight" });
    session.once("close", () => finish({ status: "critical", output: "HTTP2 ping failed: connection closed" }));
    return () => session.destroy();
  });
}

/** grpc.health.v1.HealthCheckResponse.ServingStatus */
const servingStatus = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"];
/** gRPC status codes by number, for the error text. */
const grpcCodes = [
  "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
  "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
  "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
];

/** The HealthCheckRequest message ({1: service}) in a gRPC length-prefixed frame. */
export function grpcHealthRequest(service: string): Uint8Array {
  const name = new TextEncoder().encode(service);
  const msg: number[] = [];
  if (name.length > 0) {
    msg.push(0x0a);
    let n = name.length;
    while (n >= 0x80) {
      msg.push((n & 0x7f) | 0x80);
      n >>>= 7;
    }
    msg.push(n, ...name);
  }
  const frame = new Uint8Array(5 + msg.length);
  new DataView(frame.buffer).setUint32(1, msg.length);
  frame.set(msg, 5);
  return frame;
}

/** The status field of a HealthCheckResponse frame; undefined when the bytes are not one. */
export function grpcHealthStatus(body: Uint8Array): number | undefined {
  if (body.length < 5 || body[0] !== 0) return undefined;
  const len = new DataView(body.buffer, body.byteOffset, body.length).getUint32(1);
  if (body.length < 5 + len) return undefined;
  const msg = body.subarray(5, 5 + len);
  let i = 0;
  let status = 0;
  while (i < msg.length) {
    const tag = msg[i++]!;
    const wireType = tag & 7;
    // Only varints (0) and length-delimited fields (2): both start with a varint.
    if (wireType !== 0 && wireType !== 2) return undefined;
    let v = 0;
    let shift = 0;
    for (;;) {
      if (i >= msg.length || shift > 28) return undefined;
      const b = msg[i++]!;
      v |= (b & 0x7f) << shift;
      shift += 7;
      if (b < 0x80) break;
    }
    if (wireType === 2) i += v;
    else if (tag >> 3 === 1) status = v;
  }
  return i === msg.length ? status : undefined;
}

/**
 * The gRPC health-checking protocol: Health/Check for the service after the
 * "/" of the target (the server's overall health when none). Passing only
 * when the answer is SERVING. Never throws.
 */
export async function grpcProbe(target: string, t: Omit<H2Target, "address">, signal: AbortSignal): Promise<ProbeResult> {
  const slash = target.indexOf("/");
  const address = slash < 0 ? target : target.slice(0, slash);
  const service = slash < 0 ? "" : target.slice(slash + 1);
  const c = await connect({ ...t, address }, signal);
  if ("error" in c) return { status: "critical", output: `rpc error: code = Unavailable desc = connection error: ${c.error}` };
  const { session } = c;
  session.on("error", () => {});
  return settleOnce<ProbeResult>(signal, () => ({ status: "critical", output: "rpc error: code = DeadlineExceeded desc = context deadline exceeded" }), (finish) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    let headerStatus: string | undefined;
    let headerMessage: string | undefined;
    const req = session.request({
      ":method": "POST",
      ":path": "/grpc.health.v1.Health/Check",
      "content-type": "application/grpc",
      te: "trailers",
    });
    req.on("error", (err: Error) => finish({ status: "critical", output: `rpc error: code = Unavailable desc = ${err.message}` }));
    req.on("response", (headers) => {
      // A trailers-only answer carries grpc-status in the headers.
      if (headers["grpc-status"] !== undefined) {
        headerStatus = String(headers["grpc-status"]);
        headerMessage = headers["grpc-message"] === undefined ? "" : decodeURIComponent(String(headers["grpc-message"]));
      }
    });
    req.on("data", (c: Uint8Array) => {
      if (size < 64 * 1024) {
        chunks.push(c);
        size += c.length;
      }
    });
    let trailerStatus: string | undefined;
    let trailerMessage = "";
    req.on("trailers", (trailers) => {
      if (trailers["grpc-status"] !== undefined) trailerStatus = String(trailers["grpc-status"]);
      if (trailers["grpc-message"] !== undefined) trailerMessage = decodeURIComponent(String(trailers["grpc-message"]));
    });
    req.on("end", () => {
      const code = Number(trailerStatus ?? headerStatus ?? "2");
      if (code !== 0) {
        const name = grpcCodes[code] ?? `Code(${code})`;
        return finish({ status: "critical", output: `rpc error: code = ${name} desc = ${trailerStatus !== undefined ? trailerMessage : headerMessage ?? ""}` });
      }
      const body = new Uint8Array(size);
      let at = 0;
      for (const c of chunks) {
        body.set(c, at);
        at += c.length;
      }
      const status = grpcHealthStatus(body);
      if (status === undefined) return finish({ status: "critical", output: `rpc error: code = Internal desc = malformed HealthCheckResponse from ${address}` });
      if (status !== 1) return finish({ status: "critical", output: `gRPC ${target} serving status: ${servingStatus[status] ?? String(status)}` });
      finish({ status: "passing", output: `gRPC check ${target}: success` });
    });
    req.end(grpcHealthRequest(service));
    return () => session.destroy();
  });
}
