import { test } from "node:test";
import assert from "node:assert/strict";
import { sleep, until, within } from "./until.ts";

test("until: returns the first truthy value; a throwing call counts as not yet", async () => {
  let n = 0;
  const v = await until(() => {
    n++;
    if (n < 3) throw new Error("not yet");
    return n === 4 ? "four" : undefined;
  }, "four calls", { intervalMs: 0 });
  assert.equal(v, "four");
});

test("until: times out naming what it waited for and the last error", async () => {
  await assert.rejects(until(() => { throw new Error("refused"); }, "the agent", { timeoutMs: 30, intervalMs: 5 }),
    { message: "Timed out waiting for the agent after 30 ms: refused" });
});

test("until: failOn ends the wait at once", async () => {
  const t0 = performance.now();
  await assert.rejects(until(() => false, "a leader", { timeoutMs: 5_000, failOn: Promise.reject(new Error("agent exited")) }), { message: "agent exited" });
  await assert.rejects(until(() => false, "a leader", { timeoutMs: 5_000, failOn: sleep(5) }), { message: "Gone before a leader" });
  assert.ok(performance.now() - t0 < 1_000);
});

test("within: the promise's value, or a timeout", async () => {
  assert.equal(await within(Promise.resolve(1), "one"), 1);
  await assert.rejects(within(new Promise(() => {}), "never", { timeoutMs: 10 }), { message: "Timed out waiting for never after 10 ms" });
});
