// Server RPC over TLS (tls.internal_rpc): the marker exchange, mutual
// certificates, verify_incoming refusing plaintext and certificate-less
// clients, verify_server_hostname refusing a client certificate posing as a
// server, and a reload applying to the next connection. Certificates from
// testdata/tls (openssl).
import assert from "node:assert/strict";
import { connect } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { effectiveTls } from "../config/tls.ts";
import type { TlsConfig } from "../config/types.ts";
import { CaptureSink, createLogger } from "../log/logger.ts";
import { reloadedServerContext, tlsClientOptions } from "../tls_context_node.ts";
import { rpcProtocolV1, rpcTlsMarker } from "./frame.ts";
import { createRpcServer, RpcClientPool, type RpcClientTls, type RpcServerTls } from "./transport_node.ts";

const dir = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../../testdata/tls");
const f = (name: string) => join(dir, name);

function tlsConfig(cert: string, extra: Partial<TlsConfig["internalRpc"]> = {}): TlsConfig {
  return { defaults: { caFile: f("ca.pem"), certFile: f(`${cert}.pem`), keyFile: f(`${cert}-key.pem`) }, internalRpc: extra, https: {} };
}

function serverTls(cert: string, verifyIncoming: boolean): RpcServerTls {
  const t = effectiveTls(tlsConfig(cert, { verifyIncoming }), "internalRpc");
  return { secureContext: reloadedServerContext(t, "internal_rpc"), verifyIncoming };
}

function clientTls(cert: string | undefined, options: { verifyServerHostname?: boolean; serverName?: string; ca?: string } = {}): RpcClientTls {
  const base = cert ? tlsConfig(cert) : { defaults: { caFile: f("ca.pem") }, internalRpc: {}, https: {} };
  if (options.ca) base.defaults.caFile = f(options.ca);
  base.internalRpc = { verifyOutgoing: true, ...(options.verifyServerHostname ? { verifyServerHostname: true } : {}) };
  const t = effectiveTls(base, "internalRpc");
  return { options: tlsClientOptions(t, "internal_rpc", undefined), ...(options.verifyServerHostname ? { serverName: () => options.serverName ?? "server.dc1.consul" } : {}) };
}

async function rig(tls: RpcServerTls | undefined) {
  const sink = new CaptureSink();
  let current = tls;
  const server = await createRpcServer({
    host: "127.0.0.1", port: 0, logger: createLogger({ sink, level: "debug" }),
    handlers: { "Test.Echo": (body) => body },
    tls: () => current,
  });
  return { server, sink, set: (t: RpcServerTls | undefined) => (current = t) };
}

function pool(tls: RpcClientTls | undefined): RpcClientPool {
  return new RpcClientPool({ logger: createLogger({ sink: new CaptureSink() }), connectTimeoutMs: 2_000, ...(tls ? { tls: () => tls } : {}) });
}

test("rpc over TLS: mutual certificates, many calls on one connection", async () => {
  const { server } = await rig(serverTls("server", true));
  const p = pool(clientTls("client", { verifyServerHostname: true }));
  try {
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => p.call(server.address, "Test.Echo", { i })));
    assert.deepEqual(answers, Array.from({ length: 20 }, (_, i) => ({ i })));
    assert.equal(p.stats.connects, 1);
  } finally {
    p.close();
    await server.close();
  }
});

test("rpc over TLS: verify_incoming refuses plaintext and TLS without a client certificate, naming the peer", async () => {
  const { server, sink } = await rig(serverTls("server", true));
  const plain = pool(undefined);
  const anonymous = pool(clientTls(undefined));
  try {
    await assert.rejects(plain.call(server.address, "Test.Echo", 1), /closed/);
    assert.equal(server.stats.plaintextRefused, 1);
    assert.ok(sink.records.some((r) => /non-TLS connection attempted with verify_incoming set/.test(r.message) && typeof r.fields.remote === "string"));
    await assert.rejects(anonymous.call(server.address, "Test.Echo", 1));
    assert.equal(server.stats.tlsRefused, 1);
  } finally {
    plain.close();
    anonymous.close();
    await server.close();
  }
});

test("rpc over TLS: without verify_incoming both plaintext and TLS are served (the first step of a rolling switch)", async () => {
  const { server } = await rig(serverTls("server", false));
  const plain = pool(undefined);
  const secure = pool(clientTls(undefined));
  try {
    assert.equal(await plain.call(server.address, "Test.Echo", "plain"), "plain");
    assert.equal(await secure.call(server.address, "Test.Echo", "tls"), "tls");
  } finally {
    plain.close();
    secure.close();
    await server.close();
  }
});

test("rpc over TLS: verify_outgoing checks the chain; verify_server_hostname refuses a client certificate posing as a server", async () => {
  // A node that presents a client agent's certificate on its RPC port.
  const { server: impostor } = await rig(serverTls("client", false));
  const strict = pool(clientTls("client", { verifyServerHostname: true }));
  const chainOnly = pool(clientTls("client"));
  const otherCa = pool(clientTls("client", { ca: "other-ca.pem" }));
  try {
    await assert.rejects(strict.call(impostor.address, "Test.Echo", 1), /TLS handshake with .* failed: .*(altnames|server\.dc1\.consul)/i);
    assert.equal(await chainOnly.call(impostor.address, "Test.Echo", 2), 2, "verify_outgoing alone checks the chain, not the name");
    await assert.rejects(otherCa.call(impostor.address, "Test.Echo", 3), /TLS handshake with .* failed/);
  } finally {
    strict.close();
    chainOnly.close();
    otherCa.close();
    await impostor.close();
  }
});

test("rpc over TLS: a server without a certificate refuses TLS; a reload gives the next connection the new one", async () => {
  const { server, set } = await rig(undefined);
  const p = pool(clientTls(undefined));
  try {
    await assert.rejects(p.call(server.address, "Test.Echo", 1), /did not accept TLS|closed/);
    set(serverTls("server", false));
    p.close();
    const q = pool(clientTls(undefined));
    try {
      assert.equal(await q.call(server.address, "Test.Echo", 2), 2);
    } finally {
      q.close();
    }
  } finally {
    await server.close();
  }
});

test("rpc over TLS: bytes after the TLS marker before the answer are a protocol error", async () => {
  const { server } = await rig(serverTls("server", false));
  try {
    const closed = await new Promise<boolean>((resolve) => {
      const s = connect({ host: "127.0.0.1", port: server.port }, () => s.write(Uint8Array.from([rpcTlsMarker, rpcProtocolV1, 0, 0])));
      s.on("close", () => resolve(true));
      s.on("error", () => {});
      setTimeout(() => resolve(false), 2_000);
    });
    assert.ok(closed);
    assert.equal(server.stats.badProtocol, 1);
  } finally {
    await server.close();
  }
});

test("rpc_handshake_timeout: a connection that names no protocol, or asks for TLS and never shakes hands, is closed", async () => {
  const sink = new CaptureSink();
  const server = await createRpcServer({
    host: "127.0.0.1", port: 0, logger: createLogger({ sink, level: "debug" }), handshakeTimeoutMs: 200,
    handlers: { "Test.Echo": (body) => body }, tls: () => serverTls("server", false),
  });
  const closedAfter = (first: number[]) => new Promise<number>((resolve) => {
    const t0 = Date.now();
    const s = connect({ host: "127.0.0.1", port: server.port }, () => { if (first.length) s.write(Uint8Array.from(first)); });
    s.resume(); // read the server's answer byte, so its close is seen
    s.on("close", () => resolve(Date.now() - t0));
    s.on("error", () => {});
    setTimeout(() => resolve(-1), 5_000);
  });
  try {
    const silent = await closedAfter([]);
    assert.ok(silent >= 150 && silent < 4_000, `silent connection closed after ${silent} ms`);
    const stalled = await closedAfter([rpcTlsMarker]);
    assert.ok(stalled >= 150 && stalled < 4_000, `stalled TLS closed after ${stalled} ms`);
    assert.equal(server.stats.handshakeTimeouts, 2);
    assert.ok(sink.records.some((r) => /no protocol byte within rpc_handshake_timeout/.test(r.message)));
    assert.ok(sink.records.some((r) => /no TLS handshake within rpc_handshake_timeout/.test(r.message)));
    // A prompt client is unaffected.
    const p = pool(clientTls("client"));
    try {
      assert.equal(await p.call(server.address, "Test.Echo", "ok"), "ok");
    } finally {
      p.close();
    }
  } finally {
    await server.close();
  }
});
