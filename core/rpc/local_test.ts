import assert from "node:assert/strict";
import { test } from "node:test";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createLocalRpc } from "./local.ts";

async function dev() {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(1) });
  return { rpc: createLocalRpc(d.server), ...d };
}

test("local rpc: dispatches to the server's handlers", async () => {
  const { rpc } = await dev();
  const put = await rpc.call("KVS.Apply", { op: "set", entry: { key: "a", value: new Uint8Array([1]) } });
  assert.deepEqual(put, { ok: true, index: 3 }, "index 1 is the bootstrap configuration, 2 the leader's no-op");
  const got = await rpc.call("KVS.Get", {
    key: "a",
    query: { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: false },
  });
  assert.deepEqual([...got.entries[0]!.value], [1]);
  assert.equal(await rpc.call("Status.Leader", {}), "127.0.0.1:8300");
});

test("local rpc: unknown methods and pre-aborted signals reject", async () => {
  const { rpc } = await dev();
  await assert.rejects(rpc.call("Nope.Nope" as "Status.Leader", {}), TypeError);
  const ac = new AbortController();
  ac.abort();
  await assert.rejects(rpc.call("Status.Leader", {}, { signal: ac.signal }), (e: unknown) => (e as Error).name === "AbortError");
});
