import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { LeanAgent, parseReply } from "./_lean_http.ts";

const tlsDir = join(import.meta.dirname, "../../testdata/tls");

test("parseReply: Content-Length, chunked, incomplete and bad answers", () => {
  const whole = Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Consul-Index: 7\r\n\r\nhelloHTTP/1.1 404");
  const r = parseReply(whole);
  assert.ok(r && !(r instanceof Error));
  assert.equal(r.reply.status, 200);
  assert.equal(r.reply.body.toString(), "hello");
  assert.equal(r.used, whole.length - "HTTP/1.1 404".length);
  assert.equal(parseReply(Buffer.from("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel")), undefined);
  assert.equal(parseReply(Buffer.from("HTTP/1.1 200 OK\r\nContent-Le")), undefined);

  const chunked = Buffer.from("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
  const c = parseReply(chunked);
  assert.ok(c && !(c instanceof Error));
  assert.equal(c.reply.body.toString(), "abcde");
  assert.equal(c.used, chunked.length);
  assert.equal(parseReply(chunked.subarray(0, chunked.length - 2)), undefined);

  assert.ok(parseReply(Buffer.from("SSH-2.0-x\r\n\r\n")) instanceof Error);
  assert.ok(parseReply(Buffer.from("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody")) instanceof Error);
});

function echo(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = `${req.method} ${req.url} ${req.headers["x-consul-token"] ?? "-"} ${Buffer.concat(chunks).toString()}`;
    if (req.url === "/chunked") {
      res.write(body.slice(0, 3));
      res.end(body.slice(3));
      return;
    }
    res.writeHead(req.url === "/missing" ? 404 : 200, { "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  });
}

test("LeanAgent: keep-alive requests over TCP, at most maxSockets connections", async () => {
  const server = createServer(echo);
  let connections = 0;
  server.on("connection", () => connections++);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as AddressInfo).port;
  const agent = new LeanAgent({ host: "127.0.0.1", port }, 2);
  try {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => agent.call("PUT", `/k${i}`, { "X-Consul-Token": "t" }, Buffer.from(`v${i}`))));
    replies.forEach((r, i) => {
      assert.equal(r.status, 200);
      assert.equal(r.body.toString(), `PUT /k${i} t v${i}`);
    });
    assert.equal((await agent.call("GET", "/missing", {})).status, 404);
    assert.equal((await agent.call("GET", "/chunked", {})).body.toString(), "GET /chunked - ");
    assert.equal(connections, 2);
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
});

test("LeanAgent over TLS: the server's certificate is checked against the CA", async () => {
  const server = createHttpsServer({ key: readFileSync(join(tlsDir, "server-key.pem")), cert: readFileSync(join(tlsDir, "server.pem")) }, echo);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as AddressInfo).port;
  const good = new LeanAgent({ host: "127.0.0.1", port, ca: readFileSync(join(tlsDir, "ca.pem")) }, 1);
  const foreign = new LeanAgent({ host: "127.0.0.1", port, ca: readFileSync(join(tlsDir, "other-ca.pem")) }, 1);
  try {
    const r = await good.call("GET", "/x", {});
    assert.equal(r.body.toString(), "GET /x - ");
    await assert.rejects(foreign.call("GET", "/x", {}), /certificate/i);
  } finally {
    good.destroy();
    foreign.destroy();
    server.closeAllConnections();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
});

test("LeanAgent.open: every connection is made (TLS handshake done) before the first request, and requests reuse them", { timeout: 20_000 }, async () => {
  const server = createHttpsServer({ key: readFileSync(join(tlsDir, "server-key.pem")), cert: readFileSync(join(tlsDir, "server.pem")) }, echo);
  let handshakes = 0;
  let requests = 0;
  // The client's side of a TLS 1.3 handshake ends before the server's: wait for the server to count all three.
  let allUp: () => void = () => {};
  const up = new Promise<void>((ok) => (allUp = ok));
  server.on("secureConnection", () => {
    if (++handshakes === 3) allUp();
  });
  server.on("request", () => requests++);
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const port = (server.address() as AddressInfo).port;
  const agent = new LeanAgent({ host: "127.0.0.1", port, ca: readFileSync(join(tlsDir, "ca.pem")) }, 3);
  try {
    await agent.open();
    await up;
    assert.equal(requests, 0);
    const replies = await Promise.all(Array.from({ length: 9 }, (_, i) => agent.call("GET", `/k${i}`, {})));
    replies.forEach((r, i) => assert.equal(r.body.toString(), `GET /k${i} - `));
    assert.equal(handshakes, 3);
    await agent.open();
    assert.equal(handshakes, 3);
  } finally {
    agent.destroy();
    server.closeAllConnections();
    await new Promise<void>((ok) => server.close(() => ok()));
  }
});
