import assert from "node:assert/strict";
import { test } from "node:test";
import { CaptureSink, createLogger, FanoutSink, RecentSink } from "../log/mod.ts";
import { testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

function setup() {
  const sink = new FanoutSink();
  const agentOut = new CaptureSink();
  const recent = new RecentSink(2);
  sink.add(agentOut, "info");
  sink.add(recent, "info");
  const logger = createLogger({ sink, level: sink.threshold, now: () => 0 });
  const router = createRoutes(testBackends({ monitor: { sink, recent } }));
  return { sink, agentOut, logger, router };
}

test("monitor: recent lines first, then new ones at the asked level, below the agent's; the level drops back when the client leaves", async () => {
  const { agentOut, logger, router } = setup();
  logger.info("one");
  logger.debug("not kept: below the agent's level");
  logger.info("two");
  logger.info("three");
  assert.equal(logger.isEnabled("debug"), false);
  const ac = new AbortController();
  const r = await router.handle(makeRequest("GET", "/v1/agent/monitor?loglevel=debug", { signal: ac.signal }));
  assert.equal(r.status, 200);
  const it = r.stream![Symbol.asyncIterator]();
  assert.equal((await it.next()).value, "1970-01-01T00:00:00.000Z [INFO]  two\n1970-01-01T00:00:00.000Z [INFO]  three\n", "the last two (the buffer's size)");
  assert.equal(logger.isEnabled("debug"), true, "a debug monitor lowers the threshold");
  logger.named("agent").debug("lookup", { key: "a b" });
  assert.equal((await it.next()).value, '1970-01-01T00:00:00.000Z [DEBUG] agent: lookup: key="a b"\n');
  assert.deepEqual(agentOut.records.map((x) => x.message), ["one", "two", "three"], "the agent's own output stays at info");
  ac.abort();
  assert.equal((await it.next()).done, true);
  assert.equal(logger.isEnabled("debug"), false, "back to the agent's level");
});

test("monitor: JSON lines with ?logjson; an unknown level is a 400", async () => {
  const { logger, router } = setup();
  const ac = new AbortController();
  const r = await router.handle(makeRequest("GET", "/v1/agent/monitor?loglevel=warn&logjson", { signal: ac.signal }));
  const it = r.stream![Symbol.asyncIterator]();
  logger.info("skipped: below warn");
  logger.warn("disk", { free: 3 });
  assert.deepEqual(JSON.parse((await it.next()).value as string), { "@level": "warn", "@message": "disk", "@module": "", "@timestamp": "1970-01-01T00:00:00.000Z", free: 3 });
  ac.abort();
  const bad = await router.handle(makeRequest("GET", "/v1/agent/monitor?loglevel=loud"));
  assert.equal(bad.status, 400);
  assert.equal(bad.body, "Unknown log level: loud");
});
