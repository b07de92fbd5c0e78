// The agent's watch handlers and manager: the script handler gets the JSON
// on stdin and CONSUL_INDEX (args without a shell, `handler` through one);
// the http handler sends the JSON with the method, headers and index, and
// gives up at its timeout; reload starts new watches, stops removed ones and
// leaves unchanged ones running.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { RawRequest, RawResponse } from "../api/client.ts";
import type { WatchConfig } from "../config/types.ts";
import { CaptureSink, createLogger } from "../log/mod.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { applyWatches, runHttpHandler, runScriptHandler, WatchManager } from "./agent_watches.ts";

function captureLogger(options: { level?: "debug" | "info" } = {}) {
  const sink = new CaptureSink();
  return { logger: createLogger({ sink, level: options.level ?? "info" }), lines: () => sink.records.map((r) => JSON.stringify(r)) };
}

test("script handler: args run without a shell, the JSON on stdin, CONSUL_INDEX set; `handler` runs through the shell", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-watch-"));
  try {
    const { logger } = captureLogger();
    const out = join(dir, "args.txt");
    await runScriptHandler({ args: ["/bin/sh", "-c", `cat > ${out}; echo "$CONSUL_INDEX" >> ${out}`] }, "42", { Key: "k" }, logger);
    assert.equal(readFileSync(out, "utf8"), '{"Key":"k"}\n42\n');
    const out2 = join(dir, "handler.txt");
    await runScriptHandler({ handler: `cat > ${out2} && echo "$CONSUL_INDEX" >> ${out2}` }, "7", [1, 2], logger);
    assert.equal(readFileSync(out2, "utf8"), "[1,2]\n7\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("script handler: a failing handler is logged as an error, its output at debug", async () => {
  const cap = captureLogger({ level: "debug" });
  await runScriptHandler({ args: ["/bin/sh", "-c", "echo oops; exit 3"] }, "1", null, cap.logger);
  const text = cap.lines().join("\n");
  assert.match(text, /Failed to run watch handler.*exit status 3/);
  assert.match(text, /watch handler output.*oops/);
});

test("http handler: method, headers, index and JSON body; a non-2xx answer and a timeout are logged", async () => {
  const seen: Array<{ method?: string; headers: IncomingMessage["headers"]; body: string }> = [];
  let delayMs = 0;
  let status = 200;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      seen.push({ method: req.method, headers: req.headers, body });
      setTimeout(() => {
        res.statusCode = status;
        res.end("ok");
      }, delayMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  try {
    const cap = captureLogger({ level: "debug" });
    const cfg = { path: `http://127.0.0.1:${port}/hook`, method: "PUT", header: { "X-Team": ["a", "b"] }, timeoutMs: 2_000, tlsSkipVerify: false };
    await runHttpHandler(cfg, "99", { Node: "n1" }, cap.logger);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.method, "PUT");
    assert.equal(seen[0]!.headers["content-type"], "application/json");
    assert.equal(seen[0]!.headers["x-consul-index"], "99");
    assert.equal(seen[0]!.headers["x-team"], "a, b");
    assert.equal(seen[0]!.body, '{"Node":"n1"}\n');
    status = 500;
    await runHttpHandler(cfg, "100", {}, cap.logger);
    assert.match(cap.lines().join("\n"), /not 2XX response code.*500/);
    status = 200;
    delayMs = 1_000;
    await runHttpHandler({ ...cfg, timeoutMs: 100 }, "101", {}, cap.logger);
    assert.match(cap.lines().join("\n"), /Failed to invoke http handler.*timeout/);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

/** Answers every query at once with index 1, then parks blocking ones until stopped. */
class ParkingClient {
  readonly paths: string[] = [];
  request(req: RawRequest): Promise<RawResponse> {
    this.paths.push(req.path);
    if (req.path.includes("index=")) {
      return new Promise((_resolve, reject) => req.query?.signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true }));
    }
    return Promise.resolve({ status: 200, text: "[]", meta: { lastIndex: 1, lastIndexText: "1", knownLeader: true, lastContactMs: 0 } });
  }
}

test("watch manager: reload starts new watches, stops removed ones, keeps unchanged ones; stop stops all", async () => {
  const client = new ParkingClient();
  const runs: string[] = [];
  const { logger } = captureLogger();
  const m = new WatchManager({
    client,
    clock: new SimClock(),
    logger,
    handler: (w) => async (index) => void runs.push(`${w.type}@${index}`),
  });
  const nodes: WatchConfig = { type: "nodes", handlerType: "script", args: ["h"] };
  const keys: WatchConfig = { type: "keyprefix", prefix: "a/", handlerType: "script", args: ["h"] };
  await m.reload([nodes]);
  await drainMicrotasks(5);
  assert.deepEqual(runs, ["nodes@1"]);
  await m.reload([nodes, keys]);
  await drainMicrotasks(5);
  assert.deepEqual(runs, ["nodes@1", "keyprefix@1"], "the unchanged watch does not run again");
  assert.equal(m.size, 2);
  await m.reload([keys]);
  assert.equal(m.size, 1);
  await m.stop();
  assert.equal(m.size, 0);
  const before = client.paths.length;
  await drainMicrotasks(5);
  assert.equal(client.paths.length, before, "stopped watches ask nothing more");
});

test("watches without an HTTP listener are refused, as Consul refuses them", async () => {
  await assert.rejects(applyWatches(undefined, [{ type: "nodes", handlerType: "script", args: ["h"] }]), /Watch plans require an HTTP or HTTPS endpoint/);
  await applyWatches(undefined, []);
});
