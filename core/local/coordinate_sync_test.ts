import assert from "node:assert/strict";
import { test } from "node:test";
import { nullLogger } from "../log/mod.ts";
import type { Rpc } from "../rpc/methods.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { CoordinateSync, rateScaledIntervalMs } from "./coordinate_sync.ts";

test("coordinate sync: the interval is sync_coordinate_interval_min, or members / rate target when larger (Consul RateScaledInterval)", () => {
  assert.equal(rateScaledIntervalMs(64, 15_000, 3), 15_000);
  assert.equal(rateScaledIntervalMs(64, 15_000, 1_920), 30_000);
  assert.equal(rateScaledIntervalMs(0, 15_000, 10_000), 15_000);
});

test("coordinate sync: sends the agent's coordinate every interval plus a stagger; errors are logged and it keeps going", async () => {
  const clock = new SimClock();
  const calls: Array<{ method: string; args: unknown }> = [];
  let fail = false;
  const rpc = {
    async call(method: string, args: unknown) {
      calls.push({ method, args });
      if (fail) throw new Error("No known Consul servers");
      return {};
    },
  } as unknown as Rpc;
  const coord = { vec: [0.001, 0, 0, 0, 0, 0, 0, 0], error: 0.4, adjustment: 0, height: 0.00001 };
  let current: typeof coord | undefined;
  const sync = new CoordinateSync({
    nodeName: "web-1", datacenter: "dc1", rpc, clock, rng: new Rng(9), logger: nullLogger(),
    coordinate: () => current, poolSize: () => 3, intervalMinMs: 1_000, rateTarget: 64,
  });
  sync.start();
  await clock.runFor(1_999 * 2);
  assert.equal(calls.length, 0, "nothing to send without a coordinate");
  current = coord;
  await clock.runFor(2_000);
  await drainMicrotasks();
  assert.ok(calls.length >= 1);
  assert.deepEqual(calls[0], { method: "Coordinate.Update", args: { node: "web-1", segment: "", coord, datacenter: "dc1" } });
  fail = true;
  const before = calls.length;
  await clock.runFor(4_000);
  await drainMicrotasks();
  assert.ok(calls.length > before, "a failed send does not stop the loop");
  fail = false;
  await clock.runFor(2_000);
  await drainMicrotasks();
  sync.stop();
  const stopped = calls.length;
  await clock.runFor(10_000);
  assert.equal(calls.length, stopped, "nothing after stop");
});
