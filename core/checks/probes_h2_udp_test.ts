// UDP, H2PING and gRPC probes against real sockets on loopback, and the
// Docker / OS service kinds that cairn registers but does not run.
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { readFileSync } from "node:fs";
import { createSecureServer, createServer as createH2Server, type Http2Server, type Http2SecureServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { decodeCheckDefinition } from "../service_defs/definition.ts";
import type { LocalCheck } from "../service_defs/types.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { LocalState } from "../local/state.ts";
import { CheckManager } from "./manager.ts";
import { httpProbe } from "./http.ts";
import { grpcHealthRequest, grpcHealthStatus, grpcProbe, h2pingProbe } from "./h2.ts";
import { udpProbe } from "./udp.ts";

const never = new AbortController().signal;

function listen(server: Http2Server | Http2SecureServer): Promise<number> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
}

function closedPort(): Promise<number> {
  const s = createSocket("udp4");
  return new Promise((resolve) => s.bind(0, "127.0.0.1", () => {
    const port = s.address().port;
    s.close(() => resolve(port));
  }));
}

test("UDP probe: an answer or silence is passing, a port unreachable is critical", async () => {
  const echo = createSocket("udp4");
  echo.on("message", (_m, from) => echo.send("ok", from.port, from.address));
  await new Promise<void>((r) => echo.bind(0, "127.0.0.1", () => r()));
  const silent = createSocket("udp4");
  await new Promise<void>((r) => silent.bind(0, "127.0.0.1", () => r()));
  try {
    const a = `127.0.0.1:${echo.address().port}`;
    const started = Date.now();
    assert.deepEqual(await udpProbe(a, 5_000, never), { status: "passing", output: `UDP connect ${a}: Success` });
    assert.ok(Date.now() - started < 4_000, "an answer ends the wait");
    const b = `127.0.0.1:${silent.address().port}`;
    assert.deepEqual(await udpProbe(b, 200, never), { status: "passing", output: `UDP connect ${b}: Success` });
  } finally {
    echo.close();
    silent.close();
  }
  const port = await closedPort();
  const r = await udpProbe(`127.0.0.1:${port}`, 2_000, never);
  assert.equal(r.status, "critical");
  assert.match(r.output, new RegExp(`^read udp 127\\.0\\.0\\.1:\\d+->127\\.0\\.0\\.1:${port}: read: connection refused$`));
});

test("H2PING probe: h2c and TLS servers answer the ping; a closed port is critical", async () => {
  const h2c = createH2Server();
  const dir = new URL("./testdata/", import.meta.url);
  const tls = createSecureServer({ cert: readFileSync(new URL("self_signed_cert.pem", dir)), key: readFileSync(new URL("self_signed_key.pem", dir)) });
  const p1 = await listen(h2c);
  const p2 = await listen(tls);
  try {
    const base = { useTls: false, tlsSkipVerify: false, tlsServerName: "" };
    assert.deepEqual(await h2pingProbe({ ...base, address: `127.0.0.1:${p1}` }, never), { status: "passing", output: "HTTP2 ping was successful" });
    const strict = await h2pingProbe({ ...base, useTls: true, address: `127.0.0.1:${p2}` }, never);
    assert.equal(strict.status, "critical", "a self-signed certificate fails without tls_skip_verify");
    assert.deepEqual(await h2pingProbe({ ...base, useTls: true, tlsSkipVerify: true, address: `127.0.0.1:${p2}` }, never), { status: "passing", output: "HTTP2 ping was successful" });
  } finally {
    h2c.close();
    tls.close();
  }
  const r = await h2pingProbe({ useTls: false, tlsSkipVerify: false, tlsServerName: "", address: `127.0.0.1:${p1}` }, never);
  assert.equal(r.status, "critical");
  assert.match(r.output, /^Failed to dial to 127\.0\.0\.1:\d+: dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/);
});

test("gRPC health messages: request encoding and response decoding", () => {
  assert.deepEqual([...grpcHealthRequest("")], [0, 0, 0, 0, 0]);
  assert.deepEqual([...grpcHealthRequest("db")], [0, 0, 0, 0, 4, 0x0a, 2, 0x64, 0x62]);
  assert.equal(grpcHealthStatus(Uint8Array.from([0, 0, 0, 0, 2, 0x08, 1])), 1);
  assert.equal(grpcHealthStatus(Uint8Array.from([0, 0, 0, 0, 0])), 0, "an empty message is UNKNOWN");
  assert.equal(grpcHealthStatus(Uint8Array.from([0, 0, 0, 0, 9, 0x08])), undefined, "truncated");
  assert.equal(grpcHealthStatus(Uint8Array.from([1, 0, 0, 0, 2, 0x08, 1])), undefined, "compressed frames are not expected");
});

test("gRPC probe: SERVING passing; NOT_SERVING, an error status and a closed port critical", async () => {
  const seen: string[] = [];
  const server = createH2Server();
  server.on("stream", (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => {
      const body = Buffer.concat(chunks);
      const service = body.length > 7 ? body.subarray(7).toString() : "";
      seen.push(`${String(headers[":path"])} ${service}`);
      if (service === "missing") {
        stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "5", "grpc-message": "unknown service" }, { endStream: true });
        return;
      }
      stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(Buffer.from([0, 0, 0, 0, 2, 0x08, service === "down" ? 2 : 1]));
    });
  });
  const port = await listen(server);
  const tls = { useTls: false, tlsSkipVerify: false, tlsServerName: "" };
  try {
    assert.deepEqual(await grpcProbe(`127.0.0.1:${port}`, tls, never), { status: "passing", output: `gRPC check 127.0.0.1:${port}: success` });
    assert.deepEqual(await grpcProbe(`127.0.0.1:${port}/db`, tls, never), { status: "passing", output: `gRPC check 127.0.0.1:${port}/db: success` });
    assert.deepEqual(await grpcProbe(`127.0.0.1:${port}/down`, tls, never), { status: "critical", output: `gRPC 127.0.0.1:${port}/down serving status: NOT_SERVING` });
    assert.deepEqual(await grpcProbe(`127.0.0.1:${port}/missing`, tls, never), { status: "critical", output: "rpc error: code = NotFound desc = unknown service" });
    assert.deepEqual(seen, ["/grpc.health.v1.Health/Check ", "/grpc.health.v1.Health/Check db", "/grpc.health.v1.Health/Check down", "/grpc.health.v1.Health/Check missing"]);
  } finally {
    server.close();
  }
  const r = await grpcProbe(`127.0.0.1:${port}`, tls, never);
  assert.equal(r.status, "critical");
  assert.match(r.output, /^rpc error: code = Unavailable desc = connection error: dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/);
});

test("check definitions: UDP, H2PING and gRPC decode to their kinds; Docker and OS service are accepted, not refused", () => {
  const udp = decodeCheckDefinition({ Name: "u", UDP: "127.0.0.1:53", Interval: "10s" }).checkType;
  assert.equal(udp.kind, "udp");
  assert.equal(udp.udp, "127.0.0.1:53");
  const h2 = decodeCheckDefinition({ name: "h", h2ping: "127.0.0.1:443", interval: "10s" }).checkType;
  assert.equal(h2.kind, "h2ping");
  assert.equal(h2.h2pingUseTls, true, "h2ping_use_tls defaults to true");
  const h2c = decodeCheckDefinition({ name: "h", h2ping: "127.0.0.1:80", h2ping_use_tls: false, interval: "10s" }).checkType;
  assert.equal(h2c.h2pingUseTls, false);
  const g = decodeCheckDefinition({ Name: "g", GRPC: "127.0.0.1:9000/db", GRPCUseTLS: true, Interval: "10s" }).checkType;
  assert.equal(g.kind, "grpc");
  assert.equal(g.grpcUseTls, true);
  const d = decodeCheckDefinition({ Name: "d", DockerContainerID: "f972c95ebf0e", Args: ["/bin/true"], Interval: "10s" }).checkType;
  assert.equal(d.kind, "docker", "a Docker check also has args: it is not a script check");
  const o = decodeCheckDefinition({ Name: "o", OSService: "nginx", Interval: "10s" }).checkType;
  assert.equal(o.kind, "os_service");
  assert.throws(() => decodeCheckDefinition({ Name: "g", GRPC: "not an address", Interval: "10s" }), /GRPC must be host:port/);
});

test("CheckManager: a Docker or OS service check is registered, stays critical with a reason, and is named in a warning", () => {
  const clock = new SimClock();
  const sink = new CaptureSink();
  const logger = createLogger({ level: "debug", sink });
  const state = new LocalState({ node: { node: "n1", id: "", address: "", taggedAddresses: {}, meta: {} }, clock });
  const manager = new CheckManager({ state, clock, rng: new Rng(seeds(1)[0]!), logger });
  for (const [id, def] of [["d", { Name: "d", DockerContainerID: "f972c95ebf0e", Args: ["/bin/true"], Interval: "10s" }], ["o", { Name: "o", OSService: "nginx", Interval: "10s" }]] as const) {
    const checkType = decodeCheckDefinition(def).checkType;
    const check: LocalCheck = {
      node: "n1", checkId: id, name: id, status: "passing", notes: "", output: "", serviceId: "", serviceName: "", serviceTags: [], type: checkType.kind, checkType,
    };
    state.addCheck(check);
    manager.start(check);
    assert.equal(state.check(id)?.status, "critical");
    assert.match(state.check(id)?.output ?? "", /checks are not run by cairn: this check stays critical$/);
  }
  const warnings = sink.records.filter((r) => r.level === "warn").map((r) => r.message);
  assert.deepEqual(warnings, [
    "Docker checks are not run by cairn; the check is registered and stays critical",
    "OS service checks are not run by cairn; the check is registered and stays critical",
  ]);
  manager.stopAll();
});

test("HTTPS check with enable_agent_tls_for_checks: the agent's CA and certificate get through a server that wants a client certificate", async () => {
  const tlsDir = new URL("../../testdata/tls/", import.meta.url);
  const pem = (n: string) => readFileSync(new URL(n, tlsDir));
  const server = (await import("node:https")).createServer(
    { cert: pem("server.pem"), key: pem("server-key.pem"), ca: pem("ca.pem"), requestCert: true, rejectUnauthorized: true },
    (_req, res) => res.end("mutual"),
  );
  const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)));
  const target = { http: `https://127.0.0.1:${port}/`, method: "", header: {}, body: "", tlsSkipVerify: false, tlsServerName: "", outputMaxSize: 0 };
  try {
    const without = await httpProbe(target, never);
    assert.equal(without.status, "critical", "the agent's CA is not in the system store");
    const skip = await httpProbe({ ...target, tlsSkipVerify: true }, never);
    assert.equal(skip.status, "critical", "no client certificate: the server refuses");
    const agentTls = { ca: [pem("ca.pem")], cert: pem("client.pem"), key: pem("client-key.pem") };
    assert.deepEqual(await httpProbe({ ...target, agentTls }, never), { status: "passing", output: `HTTP GET https://127.0.0.1:${port}/: 200 OK Output: mutual` });
  } finally {
    server.close();
  }
});
