import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Agent, request, type IncomingHttpHeaders } from "node:http";
import { createServer as createNetServer, connect, type Socket } from "node:net";
import { systemClock } from "../clock/mod.ts";
import { FakeRpc } from "./_fake_rpc.ts";
import { testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { gunzipSync } from "node:zlib";
import { acceptsGzip, createHttpServer, gzipBody, gzipMinBytes, ListenError, type HttpServer } from "./serve_node.ts";

// Real loopback sockets on port 0; the fake RPC's timers use the system clock,
// but no test waits for one to fire.
const rpc = new FakeRpc(systemClock);
let server: HttpServer;
let port = 0;
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

before(async () => {
  server = createHttpServer({ router: createRoutes(testBackends({ rpc })) });
  port = (await server.listen({ host: "127.0.0.1", port: 0 })).port;
});

after(async () => {
  agent.destroy();
  await server.close({ graceMs: 500 });
});

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  socketPort: number;
}

function call(method: string, path: string, body?: Uint8Array | string, options: { signal?: AbortSignal; headers?: Record<string, string> } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, agent, signal: options.signal, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      const socketPort = res.socket.localPort ?? 0;
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), socketPort }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

test("serve_node: PUT and GET over a kept-alive connection", async () => {
  const put = await call("PUT", "/v1/kv/hello%20world", "v1");
  assert.equal(put.status, 200);
  assert.equal(put.body.toString(), "true");
  const get = await call("GET", "/v1/kv/hello%20world?raw");
  assert.equal(get.status, 200);
  assert.equal(get.body.toString(), "v1");
  assert.equal(get.headers["x-consul-knownleader"], "true");
  assert.ok(Number(get.headers["x-consul-index"]) > 0);
  assert.equal(get.socketPort, put.socketPort, "the second request reused the connection");
  assert.equal(get.headers["content-length"], "2");
  assert.equal(get.headers["transfer-encoding"], undefined);
  await call("PUT", "/v1/kv/%C3%A9", "x");
  const utf = await call("GET", "/v1/kv/%C3%A9?keys");
  assert.equal(utf.body.toString(), '["é"]');
  assert.equal(utf.headers["content-length"], "6", "Content-Length counts UTF-8 bytes");
  const missing = await call("GET", "/v1/kv/none");
  assert.equal(missing.status, 404);
  assert.equal(missing.body.length, 0);
  assert.ok(missing.headers["x-consul-index"]);
});

test("serve_node: every answer carries a Date header of the current second, as Go's server sends", async () => {
  const before = Math.floor(Date.now() / 1000) * 1000;
  for (const path of ["/v1/status/leader", "/v2/x"]) {
    const r = await call("GET", path);
    const date = r.headers["date"];
    assert.match(date ?? "", /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d\d:\d\d:\d\d GMT$/, path);
    const at = Date.parse(date!);
    assert.ok(at >= before && at <= Date.now(), `${path}: ${date} is now`);
  }
});

test("serve_node: bad percent-encoding is a 400, unknown path a 404", async () => {
  const bad = await call("GET", "/v1/kv/%zz");
  assert.equal(bad.status, 400);
  assert.match(bad.body.toString(), /bad percent-encoding/);
  assert.equal((await call("GET", "/v2/x")).status, 404);
});

test("serve_node: body at the limit is accepted; over it is 413 naming the limit", async () => {
  const ok = await call("PUT", "/v1/kv/edge", new Uint8Array(512 * 1024).fill(65));
  assert.equal(ok.status, 200);
  const big = await call("PUT", "/v1/kv/edge", new Uint8Array(512 * 1024 + 1));
  assert.equal(big.status, 413);
  assert.match(big.body.toString(), /the limit is 524288 bytes \(512 KiB\)/);
  assert.equal(rpc.kv.get("edge")?.value.length, 512 * 1024, "the oversized value was not stored");
  // The connection still serves requests afterwards.
  assert.equal((await call("GET", "/v1/status/leader")).status, 200);
});

test("serve_node: a chunked body is cut off at the limit while it is read", async () => {
  const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method: "PUT", path: "/v1/kv/chunked", headers: { "Transfer-Encoding": "chunked" } }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => { body += c.toString(); });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    const chunk = new Uint8Array(64 * 1024);
    let sent = 0;
    const pump = (): void => {
      // Keep sending until the server answers (at most 2 MiB).
      while (sent < 2 * 1024 * 1024) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
  assert.equal(r.status, 413);
  assert.match(r.body, /524288 bytes/);
  assert.equal(rpc.kv.has("chunked"), false);
});

test("serve_node: a huge declared body is refused at once without reading it", async () => {
  const answer = await new Promise<string>((resolve, reject) => {
    const sock = connect(port, "127.0.0.1", () => {
      sock.write(`PUT /v1/kv/huge HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 * 1024}\r\n\r\n`);
    });
    let text = "";
    sock.on("data", (d: Buffer) => { text += d.toString(); });
    sock.on("close", () => resolve(text));
    sock.on("error", reject);
  });
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.match(answer, /524288 bytes/);
});

test("serve_node: a client that goes away cancels its blocking query", async () => {
  await call("PUT", "/v1/kv/block", "1");
  const index = rpc.index;
  const ac = new AbortController();
  const pending = call("GET", `/v1/kv/block?index=${index}&wait=60s`, undefined, { signal: ac.signal }).catch((e: Error) => e);
  for (let i = 0; i < 100 && rpc.waiting() === 0; i++) await new Promise((r) => setImmediate(r));
  assert.equal(rpc.waiting(), 1, "the blocking query is waiting");
  assert.equal(server.inFlight(), 1);
  ac.abort();
  const err = await pending;
  assert.ok(err instanceof Error);
  for (let i = 0; i < 100 && rpc.waiting() > 0; i++) await new Promise((r) => setImmediate(r));
  assert.equal(rpc.waiting(), 0, "the blocking query was cancelled");
  assert.equal(server.inFlight(), 0);
});

test("serve_node: a client that goes away cancels its blocking query behind an agent's Router (query times set, ACLs on)", async () => {
  // The agent's Router sets the request's context (query times, the token's ACL); it once did so on a copy
  // of the request, which lost the request class's `signal` getter, so no blocking query was ever cancelled.
  const rpc2 = new FakeRpc(systemClock);
  const acl = { accessorId: "a", allowed: () => true };
  const s2 = createHttpServer({
    router: createRoutes(testBackends({ rpc: rpc2, queryTimes: { defaultMs: 300_000, maxMs: 600_000 }, authorizer: { authorize: () => ({ allowed: true, acl }) } })),
  });
  const p2 = (await s2.listen({ host: "127.0.0.1", port: 0 })).port;
  const agent2 = new Agent({ keepAlive: true });
  try {
    const get = (path: string, signal?: AbortSignal) => new Promise<number>((ok, fail) => {
      const req = request({ host: "127.0.0.1", port: p2, method: "GET", path, agent: agent2, signal }, (res) => {
        res.resume();
        res.on("end", () => ok(res.statusCode ?? 0));
      });
      req.on("error", fail);
      req.end();
    });
    const index = rpc2.index;
    const ac = new AbortController();
    const pending = get(`/v1/kv/block?index=${index}&wait=60s`, ac.signal).catch((e: Error) => e);
    for (let i = 0; i < 100 && rpc2.waiting() === 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(rpc2.waiting(), 1, "the blocking query is waiting");
    ac.abort();
    assert.ok((await pending) instanceof Error);
    for (let i = 0; i < 100 && rpc2.waiting() > 0; i++) await new Promise((r) => setImmediate(r));
    assert.equal(rpc2.waiting(), 0, "the blocking query was cancelled");
  } finally {
    agent2.destroy();
    await s2.close({ graceMs: 500 });
  }
});

test("serve_node: a blocking query is answered when the key changes", async () => {
  await call("PUT", "/v1/kv/wake", "1");
  const index = rpc.index;
  const pending = call("GET", `/v1/kv/wake?index=${index}`);
  for (let i = 0; i < 100 && rpc.waiting() === 0; i++) await new Promise((r) => setImmediate(r));
  await call("PUT", "/v1/kv/wake", "2");
  const r = await pending;
  assert.equal(r.status, 200);
  assert.ok(Number(r.headers["x-consul-index"]) > index);
});

test("serve_node: listening on a busy port says which port and what to do", async () => {
  const blocker = createNetServer();
  const busy = await new Promise<number>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve((blocker.address() as { port: number }).port)));
  const other = createHttpServer({ router: createRoutes(testBackends({ rpc })) });
  try {
    await assert.rejects(other.listen({ host: "127.0.0.1", port: busy }), (err: unknown) => {
      assert.ok(err instanceof ListenError);
      assert.match(err.message, new RegExp(`^Cannot listen on 127\\.0\\.0\\.1:${busy}: address already in use; .*ss -ltnp`));
      assert.equal(err.port, busy);
      return true;
    });
  } finally {
    await other.close();
    await new Promise((r) => blocker.close(r));
  }
});

test("serve_node: close cancels blocking queries and stops listening", async () => {
  const s = createHttpServer({ router: createRoutes(testBackends({ rpc })) });
  const p = (await s.listen({ host: "127.0.0.1", port: 0 })).port;
  const waitingBefore = rpc.waiting();
  const pending = new Promise<number>((resolve) => {
    const req = request({ host: "127.0.0.1", port: p, path: `/v1/kv/block?index=${rpc.index + 100}` }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", () => resolve(-1));
    req.end();
  });
  for (let i = 0; i < 100 && rpc.waiting() === waitingBefore; i++) await new Promise((r) => setImmediate(r));
  assert.equal(rpc.waiting(), waitingBefore + 1);
  await s.close({ graceMs: 1_000 });
  const status = await pending;
  assert.ok(status === 503 || status === -1, `status ${status}`);
  assert.equal(rpc.waiting(), waitingBefore);
  assert.equal(s.server.listening, false);
});

test("serve_node: a malformed request line gets a 400 and the connection closes", async () => {
  const answer = await new Promise<string>((resolve, reject) => {
    const sock = connect(port, "127.0.0.1", () => sock.write("THIS IS NOT HTTP\r\n\r\n"));
    let text = "";
    sock.on("data", (d: Buffer) => { text += d.toString(); });
    sock.on("close", () => resolve(text));
    sock.on("error", reject);
  });
  assert.match(answer, /^HTTP\/1\.1 400 Bad Request\r\n/);
});

test("serve_node: requests are logged at trace with status and latency", async () => {
  const { CaptureSink, createLogger } = await import("../log/mod.ts");
  const sink = new CaptureSink();
  const s = createHttpServer({ router: createRoutes(testBackends({ rpc })), logger: createLogger({ sink, level: "trace" }) });
  const p = (await s.listen({ host: "127.0.0.1", port: 0 })).port;
  try {
    const r = await fetch(`http://127.0.0.1:${p}/v1/status/leader`);
    assert.equal(r.status, 200);
    await r.text();
    const rec = sink.records.find((x) => x.message === "request finished");
    assert.ok(rec, sink.text());
    assert.equal(rec.fields.status, 200);
    assert.equal(rec.fields.url, "/v1/status/leader");
  } finally {
    await s.close();
  }
});

test("serve_node: Expect: 100-continue gets 413 instead of Continue when the declared body is too big", async () => {
  const talk = (length: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const sock = connect(port, "127.0.0.1", () => {
        sock.write(`PUT /v1/kv/expect HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`);
      });
      let text = "";
      sock.on("data", (d: Buffer) => {
        text += d.toString();
        if (text.includes("\r\n\r\n")) {
          sock.destroy();
          resolve(text);
        }
      });
      sock.on("error", reject);
    });
  assert.match(await talk(1024 * 1024), /^HTTP\/1\.1 413 /);
  assert.match(await talk(10), /^HTTP\/1\.1 100 Continue\r\n/);
});

/** One GET on a fresh connection (left open in `open`): the raw answer, once whole or once the server closes. */
function rawGet(p: number, path: string, open: Socket[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(p, "127.0.0.1");
    open.push(socket);
    let text = "";
    socket.on("error", reject);
    socket.on("data", (d: Buffer) => {
      text += d.toString("latin1");
      const head = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text);
      if (head >= 0 && length && text.length >= head + 4 + Number(length[1])) resolve(text);
    });
    socket.on("end", () => resolve(text));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
}

function connections(server: HttpServer): Promise<number> {
  return new Promise((resolve, reject) => server.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

test("serve_node: limits.http_max_conns_per_client: one connection past the limit from one IP gets Consul's 429; a freed slot is usable again", async () => {
  const limited = createHttpServer({ router: createRoutes(testBackends({ rpc })), maxConnsPerClient: 3 });
  const p = (await limited.listen({ host: "127.0.0.1", port: 0 })).port;
  const sockets: Socket[] = [];
  try {
    const first = await Promise.all([0, 1, 2].map(() => rawGet(p, "/v1/status/leader", sockets)));
    for (const t of first) assert.match(t, /^HTTP\/1\.1 200 /, t);
    const refused = await rawGet(p, "/v1/status/leader", sockets);
    assert.equal(refused, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nContent-Length: 81\r\nConnection: close\r\n\r\n" +
      "Your IP is issuing too many concurrent connections, please rate limit your calls\n", "go-connlimit's answer, byte for byte");
    sockets[0]!.destroy();
    // The server sees the close (and the refused one's) on its next turns.
    for (let i = 0; i < 200 && (await connections(limited)) > 2; i++) await new Promise((r) => setImmediate(r));
    assert.match(await rawGet(p, "/v1/status/leader", sockets), /^HTTP\/1\.1 200 /, "the freed slot");
    assert.equal(await rawGet(p, "/v1/status/leader", sockets), refused, "full again");
  } finally {
    for (const s of sockets) s.destroy();
    await limited.close({ graceMs: 100 });
  }
  // Without the option (the shared server of this file): no limit.
  const many: Socket[] = [];
  try {
    const answers = await Promise.all(Array.from({ length: 8 }, () => rawGet(port, "/v1/status/leader", many)));
    for (const t of answers) assert.match(t, /^HTTP\/1\.1 200 /);
  } finally {
    for (const s of many) s.destroy();
  }
});

test("serve_node: answers are gzipped for a client that accepts gzip (as Consul's are), others get them plain", async () => {
  const value = "x".repeat(4 * gzipMinBytes);
  await call("PUT", "/v1/kv/big", value);
  await call("PUT", "/v1/kv/small", "v");
  const plain = await call("GET", "/v1/kv/big");
  assert.equal(plain.headers["content-encoding"], undefined);
  const gz = await call("GET", "/v1/kv/big", undefined, { headers: { "Accept-Encoding": "deflate, gzip" } });
  assert.equal(gz.status, 200);
  assert.equal(gz.headers["content-encoding"], "gzip");
  assert.equal(gz.headers["vary"], "Accept-Encoding");
  assert.equal(gz.headers["content-length"], String(gz.body.length));
  assert.ok(gz.body.length < plain.body.length / 4);
  assert.equal(gunzipSync(gz.body).toString(), plain.body.toString());
  assert.equal(JSON.parse(plain.body.toString())[0].Key, "big");
  // Refused with q=0, and a short answer is not worth compressing.
  assert.equal((await call("GET", "/v1/kv/big", undefined, { headers: { "Accept-Encoding": "gzip;q=0" } })).headers["content-encoding"], undefined);
  const small = await call("GET", "/v1/kv/small?raw", undefined, { headers: { "Accept-Encoding": "gzip" } });
  assert.equal(small.headers["content-encoding"], undefined);
  assert.equal(small.body.toString(), "v");
});

test("serve_node: acceptsGzip reads Accept-Encoding's codings and q values", () => {
  assert.equal(acceptsGzip(undefined), false);
  assert.equal(acceptsGzip(""), false);
  assert.equal(acceptsGzip("gzip"), true);
  assert.equal(acceptsGzip("br, GZIP;q=0.5"), true);
  assert.equal(acceptsGzip("*"), true);
  assert.equal(acceptsGzip("gzip;q=0"), false);
  assert.equal(acceptsGzip("gzip; q=0.000"), false);
  assert.equal(acceptsGzip("deflate, br"), false);
  assert.equal(acceptsGzip("x-gzip"), false);
});

test("serve_node: a shared body is compressed once; other bodies, binary types and set encodings are left alone", () => {
  const body = Buffer.from(JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ Node: `n${i}` }))));
  const shared = { status: 200, headers: { "Content-Type": "application/json" }, body, sharedBody: true };
  const a = gzipBody("gzip", shared);
  assert.ok(a);
  assert.equal(gzipBody("gzip", { ...shared, headers: { ...shared.headers } }), a, "the same bytes for the next reader");
  assert.equal(gunzipSync(a).toString(), body.toString());
  const own = { status: 200, headers: { "Content-Type": "application/json" }, body };
  assert.notEqual(gzipBody("gzip", own), gzipBody("gzip", own));
  assert.equal(gzipBody("gzip", { ...own, headers: { "Content-Type": "application/octet-stream" } }), undefined);
  assert.equal(gzipBody("gzip", { ...own, headers: { "Content-Type": "application/json", "Content-Encoding": "identity" } }), undefined);
  assert.equal(gzipBody(undefined, own), undefined);
});

test("serve_node: a long streamed answer that waits for the client leaves no listeners behind (snapshot save)", async () => {
  const { Router } = await import("./router.ts");
  const piece = new Uint8Array(1024 * 1024).fill(3);
  const pieces = 40;
  const streaming = createHttpServer({
    router: new Router([{
      pattern: "/v1/stream",
      methods: ["GET"],
      authz: { resource: "none" },
      handler: async () => ({
        status: 200,
        headers: {},
        body: "",
        stream: (async function* () {
          for (let i = 0; i < pieces; i++) yield piece;
        })(),
      }),
    }]),
  });
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on("warning", onWarning);
  try {
    const { port: p } = await streaming.listen({ host: "127.0.0.1", port: 0 });
    const got = await new Promise<number>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port: p, path: "/v1/stream" }, (r) => {
        let n = 0;
        // A slow reader: the server waits for 'drain' again and again.
        r.on("data", (c: Buffer) => {
          n += c.length;
          r.pause();
          setImmediate(() => r.resume());
        });
        r.on("end", () => resolve(n));
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(got, pieces * piece.length);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings.filter((w) => w === "MaxListenersExceededWarning"), [], "no listener piled up on the response");
  } finally {
    process.off("warning", onWarning);
    await streaming.close({ graceMs: 100 });
  }
});
