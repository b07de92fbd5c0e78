import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import { test } from "node:test";
import { CaptureSink, createLogger, nullLogger } from "../log/mod.ts";
import { Rng, seeds } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeCatalogRpc } from "../local/_fake_catalog_rpc.ts";
import { LocalState } from "../local/state.ts";
import type { HealthStatus } from "../service_defs/types.ts";
import { AliasCheck, aliasResult } from "./alias.ts";
import { httpProbe } from "./http.ts";
import { capOutput, IntervalRunner, StatusHandler, type CheckNotify } from "./runner.ts";
import { scriptProbe } from "./script.ts";
import { tcpProbe } from "./tcp.ts";
import { TtlCheck } from "./ttl.ts";

class Recorder implements CheckNotify {
  readonly updates: Array<{ id: string; status: HealthStatus; output: string }> = [];
  updateCheck(id: string, status: HealthStatus, output: string): void {
    this.updates.push({ id, status, output });
  }
  get last() {
    return this.updates.at(-1);
  }
}

const never = new AbortController().signal;

test("TTL: critical with \"TTL expired\" unless a report arrives in time; each report restarts the TTL", () => {
  const clock = new SimClock();
  const rec = new Recorder();
  const ttl = new TtlCheck({ checkId: "t", ttlMs: 10_000, clock, notify: rec, logger: nullLogger() });
  ttl.start();
  clock.advance(9_999);
  assert.equal(rec.updates.length, 0);
  clock.advance(1);
  assert.deepEqual(rec.last, { id: "t", status: "critical", output: "TTL expired" });
  ttl.setStatus("passing", "all good");
  assert.deepEqual(rec.last, { id: "t", status: "passing", output: "all good" });
  clock.advance(8_000);
  ttl.setStatus("warning", "hmm");
  clock.advance(8_000);
  assert.equal(rec.last?.status, "warning", "the second report restarted the TTL");
  clock.advance(2_000);
  assert.deepEqual(rec.last, { id: "t", status: "critical", output: "TTL expired (last output before timeout follows): hmm" });
  ttl.stop();
  ttl.setStatus("passing", "x");
  clock.advance(60_000);
  assert.equal(rec.last?.status, "passing", "a stopped TTL never expires");
});

test("capOutput: Consul's truncation note", () => {
  assert.equal(capOutput("abc", 5), "abc");
  assert.equal(capOutput("abcdefgh", 4), "abcd ... (captured 4 of 8 bytes)");
});

test("StatusHandler: success_before_passing, failures_before_warning, failures_before_critical", () => {
  const rec = new Recorder();
  const h = new StatusHandler(rec, { logger: nullLogger(), successBeforePassing: 2, failuresBeforeWarning: 1, failuresBeforeCritical: 3 });
  h.updateCheck("c", "passing", "1");
  assert.equal(rec.updates.length, 0);
  h.updateCheck("c", "passing", "2");
  assert.deepEqual(rec.last, { id: "c", status: "passing", output: "2" });
  h.updateCheck("c", "critical", "f1");
  assert.deepEqual(rec.last, { id: "c", status: "warning", output: "f1" });
  h.updateCheck("c", "critical", "f2");
  assert.equal(rec.last?.status, "warning");
  h.updateCheck("c", "critical", "f3");
  assert.deepEqual(rec.last, { id: "c", status: "critical", output: "f3" });
  h.updateCheck("c", "passing", "p1");
  assert.equal(rec.last?.status, "critical", "one success is below the threshold");
});

test("IntervalRunner: first run staggered within one interval, then every interval; timeouts are critical", async () => {
  for (const seed of seeds(5)) {
    const clock = new SimClock();
    const rec = new Recorder();
    let n = 0;
    const r = new IntervalRunner({
      checkId: "i", clock, rng: new Rng(seed), logger: nullLogger(), notify: rec, intervalMs: 10_000, timeoutMs: 2_000,
      probe: (signal) => {
        n++;
        if (n === 3) return new Promise((resolve) => signal.addEventListener("abort", () => resolve({ status: "passing", output: "late" })));
        return Promise.resolve({ status: "passing", output: `run ${n}` });
      },
    });
    r.start();
    await clock.runFor(10_000);
    assert.equal(r.runs, 1, `seed=${seed}: one run within the first interval`);
    await clock.runFor(10_000);
    assert.equal(r.runs, 2, `seed=${seed}`);
    await clock.runUntil(() => r.runs === 3, { maxMs: 12_001, what: `seed=${seed}` });
    assert.deepEqual(rec.last, { id: "i", status: "critical", output: "Timed out (2000ms) running check" }, `seed=${seed}`);
    r.stop();
    await clock.runFor(100_000);
    assert.equal(r.runs, 3, `seed=${seed}: stopped`);
  }
});

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

test("HTTP probe: 2xx passing, 429 warning, else critical; method, headers and body sent; output capped", async () => {
  const seen: Array<{ method?: string; ua?: string; x?: string; body: string }> = [];
  const server = createHttpServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      seen.push({ method: req.method, ua: req.headers["user-agent"], x: req.headers["x-test"] as string | undefined, body });
      if (req.url === "/moved") {
        res.writeHead(302, { Location: "/200" });
        res.end();
        return;
      }
      const code = Number(req.url!.slice(1)) || 200;
      res.writeHead(code);
      res.end(code === 201 ? "y".repeat(10_000) : `body ${code}`);
    });
  });
  const port = await listen(server);
  const base = { method: "", header: {}, body: "", tlsSkipVerify: false, tlsServerName: "", outputMaxSize: 0 };
  try {
    let r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/200` }, never);
    assert.deepEqual(r, { status: "passing", output: `HTTP GET http://127.0.0.1:${port}/200: 200 OK Output: body 200` });
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/429` }, never);
    assert.equal(r.status, "warning");
    assert.match(r.output, /429 Too Many Requests/);
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/500` }, never);
    assert.equal(r.status, "critical");
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/201`, outputMaxSize: 100 }, never);
    assert.equal(r.status, "passing");
    assert.ok(r.output.length < 400, `capped: ${r.output.length}`);
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/200`, method: "POST", header: { "X-Test": ["yes"] }, body: "ping" }, never);
    assert.equal(r.status, "passing");
    assert.deepEqual(seen.at(-1), { method: "POST", ua: "Consul Health Check", x: "yes", body: "ping" });
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/moved` }, never);
    assert.deepEqual(r, { status: "passing", output: `HTTP GET http://127.0.0.1:${port}/moved: 200 OK Output: body 200` });
    r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/moved`, disableRedirects: true }, never);
    assert.equal(r.status, "critical");
    assert.match(r.output, /302 Found/);
  } finally {
    server.close();
  }
  const r = await httpProbe({ ...base, http: `http://127.0.0.1:${port}/` }, never);
  assert.equal(r.status, "critical");
  assert.match(r.output, /^Get "http:\/\/127\.0\.0\.1:\d+\/": dial tcp 127\.0\.0\.1:\d+: connect: connection refused$/);
});

test("HTTPS probe: a self-signed certificate fails unless tls_skip_verify; tls_server_name is sent as SNI", async () => {
  const dir = new URL("./testdata/", import.meta.url);
  let sni: string | undefined;
  const server = createHttpsServer({ cert: readFileSync(new URL("self_signed_cert.pem", dir)), key: readFileSync(new URL("self_signed_key.pem", dir)) }, (req, res) => {
    sni = (req.socket as { servername?: string }).servername;
    res.end("secure");
  });
  const port = await listen(server as unknown as Server);
  const base = { method: "", header: {}, body: "", tlsSkipVerify: false, tlsServerName: "", outputMaxSize: 0, http: `https://127.0.0.1:${port}/` };
  try {
    let r = await httpProbe(base, never);
    assert.equal(r.status, "critical");
    assert.match(r.output, /^Get "https:\/\/127\.0\.0\.1:\d+\/": .*(self[- ]signed|certificate)/i);
    r = await httpProbe({ ...base, tlsSkipVerify: true, tlsServerName: "cairn-test" }, never);
    assert.deepEqual(r, { status: "passing", output: `HTTP GET https://127.0.0.1:${port}/: 200 OK Output: secure` });
    assert.equal(sni, "cairn-test");
  } finally {
    server.close();
  }
});

test("TCP probe: open port passing, closed port critical", async () => {
  const server = createTcpServer((s) => s.end());
  const port = await listen(server);
  try {
    assert.deepEqual(await tcpProbe(`127.0.0.1:${port}`, never), { status: "passing", output: `TCP connect 127.0.0.1:${port}: Success` });
  } finally {
    server.close();
  }
  const r = await tcpProbe(`127.0.0.1:${port}`, never);
  assert.equal(r.status, "critical");
  assert.equal(r.output, `dial tcp 127.0.0.1:${port}: connect: connection refused`);
});

test("script probe: exit 0 passing, 1 warning, else critical; output kept; killed on abort", async () => {
  const sh = (s: string) => ["/bin/sh", "-c", s];
  assert.deepEqual(await scriptProbe(sh("echo fine"), { signal: never }), { status: "passing", output: "fine\n" });
  assert.deepEqual(await scriptProbe(sh("echo meh >&2; exit 1"), { signal: never }), { status: "warning", output: "meh\n" });
  assert.equal((await scriptProbe(sh("exit 3"), { signal: never })).status, "critical");
  const big = await scriptProbe(sh("head -c 5000 /dev/zero | tr '\\0' a"), { signal: never, outputMaxSize: 100 });
  assert.match(big.output, /^Captured 100 of 5000 bytes\n\.\.\.\na{100}$/);
  const missing = await scriptProbe(["/no/such/binary"], { signal: never });
  assert.equal(missing.status, "critical");
  const abort = new AbortController();
  const running = scriptProbe(sh("sleep 30"), { signal: abort.signal, timeoutMs: 30_000 });
  setImmediate(() => abort.abort());
  assert.deepEqual(await running, { status: "critical", output: "Timed out (30s) running check" });
});

test("alias: result table (consul processChecks)", () => {
  const c = (serviceId: string, status: HealthStatus, name = "c") => ({ node: "n", name, status, output: "out", serviceId });
  const t = { node: "n", serviceId: "web" };
  assert.deepEqual(aliasResult([], t, () => true), { status: "passing", output: "No checks found." });
  assert.deepEqual(aliasResult([c("web", "passing")], t, () => true), { status: "passing", output: "All checks passing." });
  assert.deepEqual(aliasResult([c("web", "passing"), c("", "warning", "disk")], t, () => true), { status: "warning", output: `Aliased check "disk" failing: out` });
  assert.deepEqual(aliasResult([c("web", "critical", "h"), c("web", "warning")], t, () => true).status, "critical");
  assert.equal(aliasResult([c("other", "critical")], t, () => true).status, "passing", "other services do not count");
  assert.deepEqual(aliasResult([], t, () => false), { status: "critical", output: "Service web could not be found on node n" });
});

test("alias: a local service is mirrored from local state as it changes", async () => {
  const clock = new SimClock();
  const state = new LocalState({ node: { node: "n1", id: "", address: "", taggedAddresses: {}, meta: {} }, clock });
  state.addService({ kind: "", id: "web", service: "web", tags: [], meta: {}, address: "", port: 80, taggedAddresses: {}, weights: { passing: 1, warning: 1 }, enableTagOverride: false });
  const mk = (id: string, serviceId: string, status: HealthStatus) => ({ node: "n1", checkId: id, name: id, status, notes: "", output: "", serviceId, serviceName: "", serviceTags: [], type: "ttl" });
  state.addCheck(mk("web-ttl", "web", "passing"));
  state.addCheck(mk("alias", "proxy", "critical"));
  const alias = new AliasCheck({ checkId: "alias", aliasNode: "", aliasService: "web", localNode: "n1", state, clock, notify: { updateCheck: (id, s, o) => state.updateCheck(id, s, o) }, logger: nullLogger() });
  alias.start();
  await clock.runFor(1);
  assert.equal(state.check("alias")?.status, "passing");
  state.updateCheck("web-ttl", "critical", "down");
  await clock.runFor(1);
  assert.equal(state.check("alias")?.status, "critical");
  assert.equal(state.check("alias")?.output, `Aliased check "web-ttl" failing: down`);
  state.updateCheck("web-ttl", "passing", "");
  await clock.runFor(1);
  assert.equal(state.check("alias")?.status, "passing");
  alias.stop();
});

test("alias: another node's service is watched through Health.NodeChecks, retrying after errors", async () => {
  const clock = new SimClock();
  const rpc = new FakeCatalogRpc();
  rpc.nodes.set("n2", { id: "", node: "n2", address: "", datacenter: "dc1", taggedAddresses: {}, meta: {}, createIndex: 1, modifyIndex: 1 });
  rpc.putService("n2", { id: "db", service: "db" });
  rpc.putCheck("n2", { checkId: "db-check", serviceId: "db", status: "warning", output: "slow" });
  rpc.failCalls = 1;
  const rec = new Recorder();
  const sink = new CaptureSink();
  const state = new LocalState({ node: { node: "n1", id: "", address: "", taggedAddresses: {}, meta: {} }, clock });
  const alias = new AliasCheck({
    checkId: "a", aliasNode: "n2", aliasService: "db", localNode: "n1", state, rpc, clock, notify: rec,
    logger: createLogger({ sink, level: "debug" }), blockMs: 5_000,
  });
  alias.start();
  await clock.runUntil(() => rec.updates.length > 0, { maxMs: 5_000 });
  assert.deepEqual(rec.last, { id: "a", status: "warning", output: `Aliased check "db-check" failing: slow` });
  assert.ok(sink.records.some((r) => r.message === "alias check failed to query the catalog"));
  alias.stop();
});
