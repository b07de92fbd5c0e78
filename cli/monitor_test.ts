import assert from "node:assert/strict";
import { test } from "node:test";
import { useDevAgent } from "./_test_agent.ts";
import { testIo } from "./_testing.ts";
import { runCli } from "./run.ts";
import { until } from "../core/testing/until.ts";

const dev = useDevAgent("monitored");

test("monitor: follows a real agent's log at trace until interrupted, then exits 0", async () => {
  const io = dev.io();
  const running = runCli(["monitor", "-log-level=trace"], io);
  await until(async () => {
    await dev.api.kv.get("monitor-probe").catch(() => {});
    return io.stdoutText.includes("request finished");
  }, "a request in the monitored log", { intervalMs: 50 });
  assert.match(io.stdoutText, /\[TRACE\] agent\.http: request finished: method=GET url=\/v1\/kv\/monitor-probe/);
  process.emit("SIGINT");
  assert.equal(await running, 0, io.stderrText);
});

test("monitor: the agent ending the stream is exit 1 with Consul's message; bad levels are refused", async () => {
  const io = testIo();
  io.fetch = (async () => new Response(new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode("line one\n"));
      c.close();
    },
  }))) as typeof fetch;
  assert.equal(await runCli(["monitor"], io), 1);
  assert.equal(io.stdoutText, "line one\n");
  assert.match(io.stderrText, /^Remote side ended the monitor!/);
  const bad = testIo();
  assert.equal(await runCli(["monitor", "-log-level=loud"], bad), 1);
  assert.match(bad.stderrText, /Unknown log level: loud/);
});
