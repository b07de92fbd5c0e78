// Fuzz: HTTP requests. In process, valid requests to every /v1 family
// (paths, query strings, headers, JSON and raw bodies) are mutated and sent
// through the real route table over a dev server (real Raft, FSM and state
// store) and a real LocalAgent. Every answer must be a well-formed status
// with valid header values, never a 500 carrying a stack trace (a 500 only
// for our own errors, as Consul answers state errors); a refused write must
// leave the state as it was; nothing may hang. Over a real socket, a
// node:http server from serve_node.ts gets garbage request lines, broken
// chunked bodies, huge and conflicting headers and mutated raw requests:
// each gets a well-formed 4xx (or the connection closes), never a hang, and
// the server keeps serving. FUZZ_SEED=n replays one seed.

import assert from "node:assert/strict";
import { validateHeaderName, validateHeaderValue } from "node:http";
import { connect } from "node:net";
import { test } from "node:test";
import { CairnError } from "../errors.ts";
import { createHttpServer, createRoutes, type HttpRequest, type HttpResponse, type Router } from "../http/mod.ts";
import { bodyTooLargeResponse } from "../http/router.ts";
import { testAgent, testBackends } from "../http/_test_env.ts";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer, type DevServer } from "../server/dev.ts";
import { fuzzSeeds, hex, mutateBytes, mutateText, mutateValue, oddChars, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { tableList } from "../state/schema.ts";
import { LocalAgent } from "../local/local_agent.ts";

interface Sample {
  method: string;
  path: string;
  query?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

const session = { Name: "s", Node: "node-a", LockDelay: "15s", Behavior: "release", TTL: "30s", Checks: [] };
const query = { Name: "q", Service: { Service: "web", Tags: ["v1"], OnlyPassing: true, Failover: { NearestN: 1 } }, DNS: { TTL: "10s" } };

/** Valid requests, one or more per route family. */
const samples: Sample[] = [
  { method: "PUT", path: "/v1/kv/app/config", query: "flags=42", body: "value" },
  { method: "PUT", path: "/v1/kv/app/lock", query: "cas=0", body: "x" },
  { method: "GET", path: "/v1/kv/app/config", query: "raw" },
  { method: "GET", path: "/v1/kv/app/", query: "recurse&stale" },
  { method: "GET", path: "/v1/kv/app", query: "keys&separator=/&index=1&wait=1s" },
  { method: "DELETE", path: "/v1/kv/app/", query: "recurse" },
  { method: "DELETE", path: "/v1/kv/app/config", query: "cas=3" },
  { method: "PUT", path: "/v1/txn", body: [{ KV: { Verb: "set", Key: "t/a", Value: "dmFsdWU=" } }, { KV: { Verb: "get", Key: "app/config" } }] },
  { method: "PUT", path: "/v1/txn", body: [{ KV: { Verb: "check-index", Key: "t/a", Index: 5 } }, { KV: { Verb: "delete-tree", Key: "t/" } }] },
  { method: "GET", path: "/v1/status/leader" },
  { method: "GET", path: "/v1/status/peers", query: "dc=dc1" },
  { method: "GET", path: "/v1/agent/self" },
  {
    method: "PUT",
    path: "/v1/catalog/register",
    body: {
      Node: "n2", Address: "10.0.0.2", TaggedAddresses: { lan: "10.0.0.2" }, NodeMeta: { rack: "r1" },
      Service: { ID: "web-2", Service: "web", Tags: ["v1"], Port: 80, Meta: { m: "1" }, Weights: { Passing: 1, Warning: 1 } },
      Checks: [{ CheckID: "c1", Name: "c1", Status: "passing", ServiceID: "web-2", Definition: { HTTP: "http://x", Interval: "10s" } }],
    },
  },
  { method: "PUT", path: "/v1/catalog/deregister", body: { Node: "n2", ServiceID: "web-2" } },
  { method: "GET", path: "/v1/catalog/nodes", query: "near=_agent&node-meta=rack:r1&filter=Node%20%3D%3D%20%22n1%22" },
  { method: "GET", path: "/v1/catalog/services", query: "index=2&wait=5s" },
  { method: "GET", path: "/v1/catalog/service/web", query: "tag=v1&filter=ServicePort%20%3E%201" },
  { method: "GET", path: "/v1/catalog/node/n1" },
  { method: "GET", path: "/v1/catalog/node-services/n1" },
  { method: "GET", path: "/v1/catalog/datacenters" },
  { method: "GET", path: "/v1/health/node/n1" },
  { method: "GET", path: "/v1/health/checks/web" },
  { method: "GET", path: "/v1/health/service/web", query: "passing&tag=v1&near=n1" },
  { method: "GET", path: "/v1/health/state/critical", query: "filter=Status%20%3D%3D%20passing" },
  { method: "PUT", path: "/v1/session/create", body: session },
  { method: "PUT", path: "/v1/session/destroy/5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44" },
  { method: "PUT", path: "/v1/session/renew/5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44" },
  { method: "GET", path: "/v1/session/info/5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44" },
  { method: "GET", path: "/v1/session/node/n1" },
  { method: "GET", path: "/v1/session/list" },
  { method: "POST", path: "/v1/query", body: query },
  { method: "GET", path: "/v1/query" },
  { method: "GET", path: "/v1/query/q/execute", query: "limit=2&near=_agent" },
  { method: "GET", path: "/v1/query/q/explain" },
  { method: "GET", path: "/v1/snapshot", query: "stale" },
  {
    method: "PUT",
    path: "/v1/agent/service/register",
    body: { Name: "api", ID: "api1", Port: 9090, Tags: ["a"], Meta: { k: "v" }, Check: { TTL: "30s" }, Weights: { Passing: 2, Warning: 1 } },
  },
  { method: "PUT", path: "/v1/agent/check/register", body: { Name: "mem", ID: "mem", TTL: "15s", Notes: "n" } },
  { method: "PUT", path: "/v1/agent/check/pass/mem", query: "note=fine" },
  { method: "PUT", path: "/v1/agent/service/maintenance/api1", query: "enable=true&reason=r" },
  { method: "GET", path: "/v1/agent/services", query: "filter=Service%20%3D%3D%20api" },
  { method: "GET", path: "/v1/agent/health/service/name/api", query: "format=text" },
  { method: "PUT", path: "/v1/agent/service/deregister/api1" },
];

const queryKeys = ["index", "wait", "stale", "consistent", "recurse", "keys", "separator", "raw", "cas", "flags", "acquire", "release", "dc", "token", "filter", "near", "node-meta", "tag", "passing", "limit", "pretty", "note", "enable", "reason", "format"];
const oddQueryValues = ["", "-1", "0", "1e309", "18446744073709551616", "99999999999999999999999", "1.5", "NaN", "abc", "1s", "-5s", "9999h", "%", "%zz", "%00", "\u00e9", "a:b:c", ":", "!", "true", "x".repeat(5000)];

/** Percent-encoding that lets a lone surrogate through as the bytes a sloppy client would send. */
function enc(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return s.replace(/[\ud800-\udfff]/g, "%ED%A0%80").split("%").map((part, i) => (i === 0 ? encodeURIComponent(part) : part.slice(0, 2) + encodeURIComponent(part.slice(2)))).join("%");
  }
}

function encodeQuery(pairs: [string, string][]): string {
  return pairs.map(([k, v]) => (v === "" ? enc(k) : `${enc(k)}=${enc(v)}`)).join("&");
}

function mutateQuery(rng: Rng, raw: string): string {
  const pairs: [string, string][] = [...new URLSearchParams(raw)];
  for (let n = rng.range(1, 3); n > 0; n--) {
    switch (rng.int(5)) {
      case 0: // repeat a parameter, with another value
        if (pairs.length > 0) pairs.push([rng.pick(pairs)[0], rng.pick(oddQueryValues)]);
        break;
      case 1: // a known parameter with an odd value
        pairs.push([rng.pick(queryKeys), rng.pick(oddQueryValues)]);
        break;
      case 2:
        if (pairs.length > 0) pairs.splice(rng.int(pairs.length), 1);
        break;
      case 3:
        if (pairs.length > 0) {
          const i = rng.int(pairs.length);
          pairs[i] = [pairs[i]![0], mutateText(rng, pairs[i]![1], { rounds: 1 })];
        }
        break;
      default: // a raw, possibly badly encoded tail
        return `${encodeQuery(pairs)}&${rng.pick(["%", "%zz", "a=%", "==", "&&", "index=%FF", "filter=(((", "separator=%00", "dc=%E2%80%AE"])}`;
    }
  }
  return encodeQuery(pairs);
}

function mutatePath(rng: Rng, path: string): string {
  switch (rng.int(6)) {
    case 0:
      return path + rng.pick(["/", "//", "/.", "/..", "/%2e%2e", "/%00", "/\u00e9", "/\ud800", "/%F0%9F%98%80", "/" + "x".repeat(4000)]);
    case 1:
      return path.replace(/\/[^/]*$/, `/${rng.pick(oddChars)}`);
    case 2:
      return path.toUpperCase();
    case 3:
      return path.slice(0, rng.int(path.length + 1)) || "/";
    default:
      return mutateText(rng, path, { rounds: 1 });
  }
}

function bodyBytes(body: unknown): Uint8Array {
  if (body === undefined) return new Uint8Array(0);
  return new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** A mutated request, or undefined when serve_node would never pass its path on (bad percent-encoding is its own 400). */
function mutateRequest(rng: Rng, s: Sample, corpus: Uint8Array[]): HttpRequest | undefined {
  let { method, path } = s;
  let rawQuery = s.query ?? "";
  const headers: Record<string, string> = { ...s.headers };
  let body = bodyBytes(s.body);
  for (let n = rng.range(1, 2); n > 0; n--) {
    switch (rng.int(8)) {
      case 0:
        path = mutatePath(rng, path);
        break;
      case 1:
      case 2:
        rawQuery = mutateQuery(rng, rawQuery);
        break;
      case 3:
        method = rng.pick(["GET", "PUT", "POST", "DELETE", "HEAD", "OPTIONS", "PATCH"]);
        break;
      case 4:
        headers[rng.pick(["x-consul-token", "content-type", "accept", "authorization", "x-consul-namespace"])] = rng.pick(["", "Bearer ", "Bearer \u00ff", "application/json", "x".repeat(9000)]);
        break;
      default:
        if (s.body !== undefined && typeof s.body !== "string" && rng.chance(0.6)) body = bodyBytes(mutateValue(rng, s.body));
        else body = mutateBytes(rng, body, { corpus });
    }
  }
  let decoded: string;
  try {
    decoded = path.includes("%") ? decodeURIComponent(path) : path;
  } catch {
    return undefined;
  }
  // serve_node's paths come from latin1 bytes through decodeURIComponent: never a lone surrogate.
  if (loneSurrogate.test(decoded)) return undefined;
  return { method, path: decoded, query: new URLSearchParams(rawQuery), headers, body };
}

/** Router.handle, but also telling which error a handler threw (the answer alone cannot say whether a 500 was meant). */
async function handle(router: Router, req: HttpRequest): Promise<{ answer: HttpResponse; error?: unknown }> {
  const found = router.lookup(req.method, req.path, req.query.toString());
  if (found.kind === "response") return { answer: found.response };
  if (req.body.length > found.maxBodyBytes) return { answer: bodyTooLargeResponse(found.maxBodyBytes) };
  let error: unknown;
  const { handler } = found.route;
  const answer = await router.dispatch({
    ...found.route,
    handler: async (r) => {
      try {
        return await handler(r);
      } catch (err) {
        error = err;
        throw err;
      }
    },
  }, req);
  return { answer, error };
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === "AbortError";
}

function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}\n${err.stack?.split("\n").slice(1, 4).join("\n")}` : String(err);
}

function text(r: HttpResponse): string {
  return typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
}

function stateDigest(d: DevServer): string {
  const rows = tableList(d.fsm.state.tables).map((t) => [t.name, t.all()]);
  return JSON.stringify(rows, (_k, v: unknown) => (v instanceof Uint8Array ? Array.from(v) : v));
}

async function world(seed: number): Promise<{ clock: SimClock; dev: DevServer; router: Router; local: LocalAgent }> {
  const clock = new SimClock();
  const rng = new Rng(seed);
  const dev = await createDevServer({ clock, rng: rng.fork(), id: testAgent.nodeId });
  const rpc = createLocalRpc(dev.server);
  const local = new LocalAgent({
    node: { node: testAgent.nodeName, id: testAgent.nodeId, address: "127.0.0.1", taggedAddresses: {}, meta: {} },
    clock,
    rng: rng.fork(),
    rpc,
    probes: { http: () => async () => ({ status: "passing", output: "fake" }), tcp: () => async () => ({ status: "passing", output: "fake" }), script: () => async () => ({ status: "passing", output: "fake" }) },
  });
  local.start();
  const router = createRoutes(testBackends({ rpc, local, clock }));
  // Some state for reads to find.
  await router.handle({ method: "PUT", path: "/v1/catalog/register", query: new URLSearchParams(), headers: {}, body: bodyBytes({ Node: "n1", Address: "10.0.0.1", Service: { Service: "web", Port: 80, Tags: ["v1"] } }) });
  await router.handle({ method: "PUT", path: "/v1/kv/app/config", query: new URLSearchParams(), headers: {}, body: bodyBytes("v") });
  return { clock, dev, router, local };
}

test("http fuzz: mutated requests to every route get a well-formed answer, never a 500 stack trace or a hang, and refused writes change nothing", { timeout: 60_000 }, async () => {
  const corpus = samples.map((s) => bodyBytes(s.body));
  const findings: string[] = [];
  for (const seed of fuzzSeeds(3)) {
    const rng = new Rng(seed);
    const { clock, dev, router, local } = await world(seed);
    for (let i = 0; i < 250 && findings.length < 20; i++) {
      const req = mutateRequest(rng, rng.pick(samples), corpus);
      if (!req) continue;
      const what = `${replayHint(seed, i)}: ${req.method} ${JSON.stringify(req.path).slice(0, 200)}?${req.query.toString().slice(0, 200)} headers=${JSON.stringify(req.headers).slice(0, 200)} body=${hex(req.body, 120)}`;
      // Let earlier work land (a session's invalidation, the local agent's sync) before taking the state.
      await drainMicrotasks(3);
      await dev.raft.idle();
      const before = stateDigest(dev);
      let answer: HttpResponse | undefined;
      let thrown: unknown;
      handle(router, req).then((r) => {
        answer = r.answer;
        // Consul answers its own errors (state, session, no leader) with a 500 and their text; anything else is a bug.
        if (r.error !== undefined && !(r.error instanceof CairnError) && !isAbort(r.error)) findings.push(`${what}: a handler failed with ${describe(r.error)}`);
      }, (err: unknown) => (thrown = err ?? "undefined"));
      // Most answers come within a few turns of the event loop (snapshots go through
      // CompressionStream: real turns); blocking reads need virtual time (up to ten
      // minutes and jitter). A hang is no answer after both.
      const realDeadline = performance.now() + 3_000;
      let turns = 0;
      let virtualMs = 0;
      while (!answer && !thrown && performance.now() < realDeadline) {
        await drainMicrotasks();
        if (++turns > 20 && virtualMs < 12 * 60_000) {
          await clock.runFor(60_000);
          virtualMs += 60_000;
        }
      }
      const waited = virtualMs > 0;
      if (thrown !== undefined) {
        findings.push(`${what}: the router threw ${String(thrown)}`);
        continue;
      }
      if (!answer) {
        findings.push(`${what}: no answer after 3 s and ${virtualMs / 60_000} virtual minutes`);
        continue;
      }
      const body = text(answer);
      if (!Number.isInteger(answer.status) || answer.status < 200 || answer.status > 599) findings.push(`${what}: status ${answer.status}`);
      if (/\n\s+at /.test(body)) findings.push(`${what}: a stack trace in a ${answer.status}: ${body.slice(0, 400)}`);
      for (const [k, v] of Object.entries(answer.headers)) {
        try {
          validateHeaderName(k);
          validateHeaderValue(k, v);
        } catch (err) {
          findings.push(`${what}: header ${k}: ${String(err)}`);
        }
      }
      const writes = req.method !== "GET" && req.method !== "HEAD" && req.method !== "OPTIONS";
      // (Virtual time passing may expire sessions: only a prompt refusal must leave everything as it was.)
      if (writes && !waited && answer.status >= 400 && !req.path.startsWith("/v1/agent/") && stateDigest(dev) !== before) {
        findings.push(`${what}: refused with ${answer.status} (${body.slice(0, 200)}) but the state changed`);
      }
      if (dev.raft.failure) {
        findings.push(`${what}: the Raft node halted: ${dev.raft.failure.message}`);
        break;
      }
    }
    local.stop();
    await dev.stop();
  }
  assert.deepEqual(findings, []);
});

// ---------------------------------------------------------------- raw sockets

/** What a TypeError and friends say, should one leak into an answer. */
const jsEngineError = /Cannot read propert|is not a function|is not iterable|is not defined|Maximum call stack|Invalid array length|Unexpected token/;

/** Write raw bytes, half-close, and read until the server closes (or `timeoutMs`: a hang). */
function rawExchange(port: number, bytes: Uint8Array | string, timeoutMs = 5_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let out = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close after ${timeoutMs} ms; got ${JSON.stringify(out.slice(0, 300))}`));
    }, timeoutMs);
    socket.on("data", (d: Buffer) => (out += d.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on("connect", () => {
      socket.write(bytes);
      socket.end();
    });
  });
}

/** Status codes of the responses in a raw answer; fails on anything that is not an HTTP/1.1 status line. */
function statuses(answer: string, what: string): number[] {
  const out: number[] = [];
  let rest = answer;
  while (rest.length > 0) {
    const m = /^HTTP\/1\.1 (\d{3}) [^\r\n]*\r\n/.exec(rest);
    assert.ok(m, `${what}: not an HTTP response: ${JSON.stringify(rest.slice(0, 200))}`);
    out.push(Number(m[1]));
    const headEnd = rest.indexOf("\r\n\r\n");
    assert.ok(headEnd > 0, `${what}: headers never end`);
    const head = rest.slice(0, headEnd);
    const len = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (len) rest = rest.slice(headEnd + 4 + Number(len[1]));
    else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const end = rest.indexOf("\r\n0\r\n\r\n", headEnd);
      rest = end < 0 ? "" : rest.slice(end + 7);
    } else rest = "";
  }
  return out;
}

test("http fuzz: garbage, broken chunking, huge and conflicting headers over a real socket get a 4xx or a close, never a hang", { timeout: 60_000 }, async () => {
  const { dev, router, local } = await world(1);
  const server = createHttpServer({ router });
  const { port } = await server.listen({ host: "127.0.0.1", port: 0 });
  try {
    const cases: [string, string | Uint8Array, number | "close"][] = [
      ["not HTTP", "THIS IS NOT HTTP\r\n\r\n", 400],
      ["NUL in the request line", "GET /v1/kv/a\u0000b HTTP/1.1\r\nHost: x\r\n\r\n", 400],
      ["unknown version", "GET /v1/status/leader HTTP/9.9\r\nHost: x\r\n\r\n", 400],
      ["lower-case method", "get /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n", 400],
      ["space in the path", "GET /v1/kv/a b HTTP/1.1\r\nHost: x\r\n\r\n", 400],
      ["bad header name", "GET /v1/status/leader HTTP/1.1\r\nHo st: x\r\n\r\n", 400],
      ["header line without colon", "GET /v1/status/leader HTTP/1.1\r\nHost x\r\n\r\n", 400],
      ["bare LF line ends", "GET /v1/status/leader HTTP/1.1\nHost: x\n\n", 400],
      ["bad percent-encoding", "GET /v1/kv/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400],
      ["huge header", `GET /v1/status/leader HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(70_000)}\r\n\r\n`, 431],
      ["thousands of headers", `GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 4000 }, (_, i) => `X-H${i}: v\r\n`).join("")}\r\n`, 431],
      ["huge URL", `GET /v1/kv/${"k".repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
      ["Content-Length and chunked", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", 400],
      ["two Content-Lengths", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400],
      ["negative Content-Length", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400],
      ["Content-Length not a number", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400],
      ["chunk size not hex", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", 400],
      ["chunk size overflows", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nabc\r\n0\r\n\r\n", 400],
      ["chunk without its CRLF", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", 400],
      ["unknown transfer coding", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked, foo\r\n\r\n0\r\n\r\n", 400],
      ["chunked body cut off", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "close"],
      ["body shorter than Content-Length", "PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", "close"],
      ["request cut inside the headers", "GET /v1/status/leader HTTP/1.1\r\nHo", "close"],
      ["huge chunked body", `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${"100000\r\n" + "v".repeat(0x100000) + "\r\n"}0\r\n\r\n`, 413],
    ];
    for (const [what, bytes, want] of cases) {
      const answer = await rawExchange(port, bytes).catch((err: unknown) => assert.fail(`${what}: ${String(err)}`));
      if (want === "close") {
        if (answer !== "") assert.ok(statuses(answer, what).every((s) => s >= 400 && s < 500), `${what}: ${answer.slice(0, 200)}`);
        continue;
      }
      const got = statuses(answer, what);
      assert.equal(got[0], want, `${what}: ${answer.slice(0, 300)}`);
      assert.ok(!/\n\s+at /.test(answer), `${what}: a stack trace: ${answer.slice(0, 500)}`);
    }

    // Mutated raw requests: any answer is well-formed and not a 5xx; the connection always ends.
    const valid = [
      "GET /v1/kv/app/config?raw HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
      "PUT /v1/kv/app/x?flags=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello",
      "PUT /v1/txn HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2c\r\n[{\"KV\":{\"Verb\":\"set\",\"Key\":\"t\",\"Value\":\"\"}}]\r\n0\r\n\r\n",
      "GET /v1/catalog/service/web?tag=v1&stale HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Consul-Token: abc\r\n\r\n",
      "PUT /v1/session/create HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 19\r\n\r\n{\"Node\":\"node-a\"}\r\n",
    ].map((s) => new TextEncoder().encode(s));
    for (const seed of fuzzSeeds(2)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 40; i++) {
        const bytes = mutateBytes(rng, rng.pick(valid), { corpus: valid, only: ["flip-bit", "set-byte", "truncate", "insert-random", "delete-range", "duplicate-range", "splice"] });
        const what = `${replayHint(seed, i)}: ${JSON.stringify(new TextDecoder("latin1").decode(bytes))}`;
        const answer = await rawExchange(port, bytes).catch((err: unknown) => assert.fail(`${what}: ${String(err)}`));
        // A 500 may be Consul's own answer (a session for a node without serfHealth); the in-process test tells those apart.
        for (const s of statuses(answer, what)) assert.ok(s !== 500 || !jsEngineError.test(answer), `${what}: answered ${s}: ${answer.slice(0, 300)}`);
        assert.ok(!/\n\s+at /.test(answer), `${what}: a stack trace: ${answer.slice(0, 500)}`);
      }
    }
    // Still serving.
    const ok = await rawExchange(port, "GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.deepEqual(statuses(ok, "after the fuzzing"), [200]);
  } finally {
    await server.close({ graceMs: 100 });
    local.stop();
    await dev.stop();
  }
});
