import { test } from "node:test";
import assert from "node:assert/strict";
import { CaptureSink, createLogger } from "../log/logger.ts";
import { Closers } from "./closers.ts";

test("closers: close in reverse order, all of them even when one fails, once", async () => {
  const sink = new CaptureSink();
  const c = new Closers(createLogger({ sink, level: "debug" }));
  const closed: string[] = [];
  c.add("gossip", () => void closed.push("gossip"));
  c.add("server", async () => {
    closed.push("server");
    throw new Error("disk gone");
  });
  c.add("http", () => void closed.push("http"));
  assert.deepEqual(c.order, ["http", "server", "gossip"]);
  await assert.rejects(c.closeAll(), /disk gone/);
  assert.deepEqual(closed, ["http", "server", "gossip"]);
  assert.match(sink.text(), /failed to stop a component.*server/);
  await c.closeAll();
  assert.equal(closed.length, 3, "a second call closes nothing again");
  assert.throws(() => c.add("late", () => {}), TypeError);
});
