// httpGet / apiStream: the body read off the socket into our own buffers
// arrives whole and in order (chunked, Content-Length, over TLS, with the
// reader pausing), and errors read as the other API calls give them.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type AddressInfo, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { after, test } from "node:test";
import { ApiClient, ApiConnectionError, ApiError } from "./client.ts";
import { HttpProtocolError } from "./http1.ts";
import { apiStream, httpGet } from "./http_get_node.ts";

const certs = join(import.meta.dirname, "../../testdata/tls");
const pem = (name: string) => readFileSync(join(certs, name));

const servers: Server[] = [];
after(() => {
  for (const s of servers) s.close();
});

async function listen<T extends Server>(server: T): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Serves `body` chunked, in writes of sizes from `rng`, waiting for drain. */
function chunkedHandler(body: Uint8Array, seen?: (req: IncomingMessage) => void) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    seen?.(req);
    res.writeHead(200, { "Content-Type": "application/octet-stream", "X-Consul-Index": "7" });
    let off = 0;
    let i = 0;
    while (off < body.length) {
      const sizes = [1, 7, 4096, 65_536, 300_000, 1_500_000, 3];
      const n = Math.min(sizes[i++ % sizes.length]!, body.length - off);
      if (!res.write(body.subarray(off, off + n))) await new Promise((r) => res.once("drain", r));
      off += n;
    }
    res.end();
  };
}

/** Reads the whole body; the reader stops every third piece and goes on a turn later. */
async function readAll(answer: Awaited<ReturnType<typeof httpGet>>): Promise<{ bytes: Buffer; pieces: number; largest: number }> {
  const parts: Uint8Array[] = [];
  let largest = 0;
  await answer.read((p) => {
    parts.push(p);
    largest = Math.max(largest, p.length);
    if (parts.length % 3 !== 0) return true;
    setImmediate(() => answer.resume());
    return false;
  });
  return { bytes: Buffer.concat(parts), pieces: parts.length, largest };
}

test("httpGet: a chunked body of 9 MiB arrives whole, in pieces of at most 1 MiB, with the reader pausing", async () => {
  const body = randomBytes(9 * 1024 * 1024 + 123);
  let url = "";
  const addr = await listen(createServer(chunkedHandler(body, (req) => (url = req.url ?? ""))));
  const answer = await httpGet(`http://${addr}/v1/snapshot?stale`, { headers: { "X-Consul-Token": "t" } });
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get("x-consul-index"), "7");
  const got = await readAll(answer);
  assert.equal(url, "/v1/snapshot?stale");
  assert.ok(got.bytes.equals(body), "the same bytes");
  assert.ok(got.largest <= 1024 * 1024, `pieces of at most 1 MiB (${got.largest})`);
  // The same through 'data' events (how it reads under Deno, whose node:net has no onread).
  const viaData = await readAll(await httpGet(`http://${addr}/v1/snapshot?stale`, { readInPlace: false }));
  assert.ok(viaData.bytes.equals(body), "the same bytes through 'data' events");
});

test("httpGet: a Content-Length body, and one that runs to the connection's end", async () => {
  const body = randomBytes(3 * 1024 * 1024);
  const addr = await listen(createServer((_req, res) => {
    res.writeHead(200, { "Content-Length": String(body.length) });
    res.end(body);
  }));
  assert.ok((await readAll(await httpGet(`http://${addr}/`))).bytes.equals(body));
  const raw = await listen(createNetServer((s) => {
    s.once("data", () => s.end(Buffer.concat([Buffer.from("HTTP/1.0 200 OK\r\n\r\n"), body])));
  }));
  assert.ok((await readAll(await httpGet(`http://${raw}/`))).bytes.equals(body));
});

test("apiStream: the client's URL and token; an error answer is ApiError with the agent's text", async () => {
  let seen: IncomingMessage | undefined;
  const addr = await listen(createServer((req, res) => {
    seen = req;
    res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" });
    res.end("No path to datacenter");
  }));
  const client = new ApiClient({ address: addr, token: "secret", datacenter: "dc9" });
  await assert.rejects(
    apiStream(client, { method: "GET", path: "/v1/snapshot", params: { stale: true } }),
    (err: unknown) => err instanceof ApiError && err.status === 500 && err.message === "Unexpected response code: 500 (No path to datacenter)",
  );
  assert.equal(seen?.url, "/v1/snapshot?dc=dc9&stale");
  assert.equal(seen?.headers["x-consul-token"], "secret");
  assert.equal(seen?.headers.host, addr);
});

test("apiStream: an agent that cannot be reached is ApiConnectionError, as for fetch", async () => {
  const s = createNetServer();
  const addr = await listen(s);
  s.close();
  await new Promise((r) => setTimeout(r, 10));
  await assert.rejects(
    apiStream(new ApiClient({ address: addr }), { method: "GET", path: "/v1/snapshot" }),
    (err: unknown) => err instanceof ApiConnectionError && err.message === `Cannot reach the agent at "http://${addr}": connection refused`,
  );
  await assert.rejects(
    apiStream(new ApiClient({ address: "unix:///tmp/nothing.sock" }), { method: "GET", path: "/v1/snapshot" }),
    /Cannot reach the agent at "unix:\/\/\/tmp\/nothing.sock": Protocol "unix:" not supported/,
  );
});

/** An upload of `data` in buffers of the sizes given, round and round. */
function uploadOf(data: Uint8Array, sizes: number[]) {
  let off = 0;
  let i = 0;
  return {
    length: data.length,
    next(): Promise<Uint8Array | undefined> {
      if (off >= data.length) return Promise.resolve(undefined);
      const n = Math.min(sizes[i++ % sizes.length]!, data.length - off);
      const c = data.slice(off, off + n);
      off += n;
      return new Promise((r) => setImmediate(() => r(c)));
    },
  };
}

test("apiStream: an upload arrives whole, with its length, method and token; the answer is read after it", async () => {
  const data = randomBytes(5 * 1024 * 1024 + 3);
  let got: { method?: string; url?: string; length?: string; token?: string; body?: Buffer } = {};
  const addr = await listen(createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    got = { method: req.method, url: req.url, length: req.headers["content-length"], token: req.headers["x-consul-token"] as string, body: Buffer.concat(parts) };
    res.writeHead(200);
    res.end();
  }));
  const client = new ApiClient({ address: addr, token: "t0k" });
  const answer = await apiStream(client, { method: "PUT", path: "/v1/snapshot" }, { upload: uploadOf(data, [1, 65_536, 1024 * 1024, 3_000_000]) });
  await answer.read(() => {});
  assert.equal(answer.status, 200);
  assert.deepEqual({ ...got, body: undefined }, { method: "PUT", url: "/v1/snapshot", length: String(data.length), token: "t0k", body: undefined });
  assert.ok(got.body?.equals(data), "the body arrived whole and in order");
});

test("apiStream: an answer before the upload ended stops it and is the error; an upload shorter than announced fails", async () => {
  // The answer comes after the first bytes; the server goes on reading (as ours drains a refused upload) until the client is gone.
  let received = 0;
  const addr = await listen(createNetServer((sock: Socket) => {
    sock.on("data", (c: Buffer) => {
      if (received === 0) sock.write("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 26\r\n\r\nInvalid snapshot: not gzip");
      received += c.length;
    });
    sock.on("error", () => {});
  }));
  const big = uploadOf(new Uint8Array(256 * 1024 * 1024), [1024 * 1024]);
  await assert.rejects(
    apiStream(new ApiClient({ address: addr }), { method: "PUT", path: "/v1/snapshot" }, { upload: big }),
    (err: unknown) => err instanceof ApiError && err.status === 400 && /not gzip/.test(err.message),
  );
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(received > 0 && received < 128 * 1024 * 1024, `the upload stopped at the answer (${received} bytes sent)`);
  const short = { length: 100, next: (() => { let n = 0; return () => Promise.resolve(n++ === 0 ? new Uint8Array(10) : undefined); })() };
  const addr2 = await listen(createServer((req) => req.resume()));
  await assert.rejects(apiStream(new ApiClient({ address: addr2 }), { method: "PUT", path: "/v1/snapshot" }, { upload: short }), /ended after 10 of the 100 bytes/);
});

test("httpGet: a body cut short (the connection closes mid-chunk) rejects the read", async () => {
  const addr = await listen(createNetServer((s: Socket) => {
    s.once("data", () => {
      s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n");
      s.end(Buffer.alloc(1000, 1));
    });
  }));
  const answer = await httpGet(`http://${addr}/`);
  assert.equal(answer.status, 200);
  await assert.rejects(readAll(answer), (err: unknown) => err instanceof HttpProtocolError && /ended early.*1000 bytes of body/.test(err.message));
});

test("httpGet over TLS: the CA, a client certificate and -tls-server-name; another CA is refused", async () => {
  const body = randomBytes(5 * 1024 * 1024 + 17);
  let clientCn = "";
  const server = createHttpsServer({ key: pem("server-key.pem"), cert: pem("server.pem"), ca: pem("ca.pem"), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    clientCn = String((req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject?.CN ?? "");
    void chunkedHandler(body)(req, res);
  });
  const addr = await listen(server);
  const port = addr.split(":")[1];
  const tls = { caFile: join(certs, "ca.pem"), certFile: join(certs, "cli.pem"), keyFile: join(certs, "cli-key.pem") };
  // By IP (in the certificate), by name (SNI "localhost"), and with a server name that differs from the host.
  for (const [host, serverName] of [["127.0.0.1", undefined], ["localhost", undefined], ["127.0.0.1", "server.dc1.consul"]] as const) {
    const answer = await httpGet(`https://${host}:${port}/v1/snapshot`, { tls: { ...tls, serverName } });
    const got = await readAll(answer);
    assert.ok(got.bytes.equals(body), `the same bytes over TLS (${host}, ${serverName})`);
  }
  assert.match(clientCn, /cli/);
  await assert.rejects(httpGet(`https://127.0.0.1:${port}/`, { tls: { ...tls, serverName: "server.dc2.consul" } }), /does not match|altnames/i);
  await assert.rejects(httpGet(`https://127.0.0.1:${port}/`, { tls: { ...tls, caFile: join(certs, "other-ca.pem") } }), /certificate/i);
  const off = await httpGet(`https://127.0.0.1:${port}/`, { tls: { ...tls, caFile: join(certs, "other-ca.pem"), verify: false } });
  assert.ok((await readAll(off)).bytes.equals(body), "verification off");
});
