import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { decodeBase64, encodeBase64 } from "./base64.ts";
import { ApiClient, ApiConnectionError, ApiError, normalizeAddress } from "./client.ts";
import { FakeAgent } from "./fake_agent.ts";
import { escapeKey } from "./kv.ts";

const text = (b: Uint8Array | null) => (b ? new TextDecoder().decode(b) : null);

test("normalizeAddress and escapeKey", () => {
  assert.equal(normalizeAddress("127.0.0.1:8500"), "http://127.0.0.1:8500");
  assert.equal(normalizeAddress("http://h:1/"), "http://h:1");
  assert.equal(normalizeAddress("https://h:1"), "https://h:1");
  assert.equal(normalizeAddress("h:1", true), "https://h:1");
  assert.equal(normalizeAddress(""), "http://127.0.0.1:8500");
  assert.equal(escapeKey("a b/c?d#e"), "a%20b/c%3Fd%23e");
});

test("base64 round trip, including binary and large values", () => {
  const bytes = new Uint8Array(100_000).map((_, i) => (i * 7) % 256);
  assert.deepEqual(decodeBase64(encodeBase64(bytes)), bytes);
  assert.equal(encodeBase64(new TextEncoder().encode("test")), "dGVzdA==");
  assert.equal(decodeBase64("not base64!"), undefined);
});

test("kv get/list/keys/put/delete against the fake agent", async () => {
  const fake = new FakeAgent();
  const api = new ApiClient({ token: "secret", datacenter: "dc9", fetch: fake.fetch });
  assert.equal(await api.kv.put("a/b", "one", { flags: 42 }), true);
  assert.equal(await api.kv.put("a/c/d", new Uint8Array([0, 255])), true);
  const { pair, meta } = await api.kv.get("a/b");
  assert.equal(pair?.Key, "a/b");
  assert.equal(text(pair!.Value), "one");
  assert.equal(pair?.Flags, 42);
  assert.ok(meta.lastIndex > 0);
  assert.equal(meta.knownLeader, true);
  assert.equal((await api.kv.get("missing")).pair, null);
  assert.deepEqual((await api.kv.list("a/")).pairs.map((p) => p.Key), ["a/b", "a/c/d"]);
  assert.deepEqual((await api.kv.list("zzz")).pairs, []);
  assert.deepEqual((await api.kv.keys("a/", "/")).keys, ["a/b", "a/c/"]);
  // CAS: 0 means "only if absent"; a stale index fails.
  assert.equal(await api.kv.put("a/b", "two", { cas: 0 }), false);
  assert.equal(await api.kv.put("a/b", "two", { cas: pair!.ModifyIndex }), true);
  assert.equal(await api.kv.put("a/b", "three", { cas: pair!.ModifyIndex }), false);
  assert.equal(await api.kv.delete("a/", { recurse: true }), true);
  assert.equal(fake.kv.size, 0);
  const first = fake.requests[0]!;
  assert.equal(first.token, "secret");
  assert.equal(first.params.get("dc"), "dc9");
  assert.equal(first.params.get("flags"), "42");
  await api.kv.get("x", { allowStale: true, waitIndex: 5, waitTimeMs: 1000 });
  const last = fake.requests.at(-1)!;
  assert.equal(last.params.get("stale"), "");
  assert.equal(last.params.get("index"), "5");
  assert.equal(last.params.get("wait"), "1000ms");
});

test("kv txn: ok and rolled back", async () => {
  const fake = new FakeAgent();
  const api = new ApiClient({ fetch: fake.fetch });
  const ok = await api.kv.txn([
    { Verb: "set", Key: "x", Value: new TextEncoder().encode("1") },
    { Verb: "set", Key: "y", Value: new TextEncoder().encode("2"), Flags: 3 },
  ]);
  assert.equal(ok.ok, true);
  assert.deepEqual(ok.results.map((r) => r.Key), ["x", "y"]);
  const bad = await api.kv.txn([
    { Verb: "set", Key: "z", Value: new Uint8Array([1]) },
    { Verb: "check-not-exists", Key: "x" },
  ]);
  assert.equal(bad.ok, false);
  assert.equal(bad.errors[0]?.OpIndex, 1);
  assert.equal(fake.kv.has("z"), false);
});

test("status and agent self", async () => {
  const fake = new FakeAgent();
  const api = new ApiClient({ fetch: fake.fetch });
  assert.equal(await api.status.leader(), "127.0.0.1:8300");
  assert.deepEqual(await api.status.peers(), ["127.0.0.1:8300"]);
  assert.equal((await api.agent.self()).Config?.NodeName, "fake");
});

test("HTTP errors become ApiError with the server's message", async () => {
  const fake = new FakeAgent();
  fake.failWith = { status: 403, body: "Permission denied" };
  const api = new ApiClient({ fetch: fake.fetch });
  await assert.rejects(api.kv.get("k"), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 403);
    assert.equal(err.body, "Permission denied");
    assert.equal(err.message, "Unexpected response code: 403 (Permission denied)");
    return true;
  });
});

test("real fetch over loopback, and a refused connection", async () => {
  const fake = new FakeAgent();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const r = await fake.fetch(`http://x${req.url}`, {
      method: req.method,
      headers: req.headers as Record<string, string>,
      body: req.method === "GET" || req.method === "DELETE" ? undefined : (new Uint8Array(Buffer.concat(chunks)) as BodyInit),
    });
    const headers: Record<string, string> = {};
    r.headers.forEach((v, k) => (headers[k] = v));
    res.writeHead(r.status, headers);
    res.end(Buffer.from(await r.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    const api = new ApiClient({ address: `127.0.0.1:${port}` });
    assert.equal(await api.kv.put("hello", "world"), true);
    assert.equal(text((await api.kv.get("hello")).pair!.Value), "world");
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  // A port that was listening and is closed now, never connected to.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const deadPort = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const dead = new ApiClient({ address: `http://127.0.0.1:${deadPort}` });
  await assert.rejects(dead.kv.get("x"), (err: unknown) => {
    assert.ok(err instanceof ApiConnectionError);
    assert.match(err.message, /Cannot reach the agent at "http:\/\/127\.0\.0\.1:\d+": connection refused/);
    return true;
  });
});
