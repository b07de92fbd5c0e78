// KV flags are Consul's uint64: Terraform's consul backend locks its state
// with flags 0x2ddccbc058a50c18 and reads them back to check the lock is its
// own, so the digits must survive HTTP, Raft, the FSM and the JSON answer.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalRpc } from "../rpc/local.ts";
import { createDevServer } from "../server/dev.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { StateStore } from "../state/store.ts";
import { testBackends } from "./_test_env.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest } from "./types.ts";

const terraformLockFlags = BigInt("0x2ddccbc058a50c18").toString(); // 3304740253564472344

async function setup() {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(1), id: "node-1", addr: "127.0.0.1:8300" });
  const router = createRoutes(testBackends({ clock, rpc: createLocalRpc(d.server) }));
  const req = async (method: string, target: string, body?: string) => {
    const r = await router.handle(makeRequest(method, target, { body: body === undefined ? new Uint8Array(0) : new TextEncoder().encode(body) }));
    return { status: r.status, text: typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body as Uint8Array) };
  };
  return { d, req };
}

test("KV flags above 2^53: PUT ?flags= and GET give back the exact uint64, as Go's client reads it", async () => {
  const { d, req } = await setup();
  try {
    assert.equal((await req("PUT", `/v1/kv/tf/state/.lock?flags=${terraformLockFlags}`, "lock")).text, "true");
    const got = await req("GET", "/v1/kv/tf/state/.lock");
    assert.equal(got.status, 200);
    assert.match(got.text, new RegExp(`"Flags":${terraformLockFlags}[,}]`), "written bare, digit for digit");
    assert.equal((await req("PUT", "/v1/kv/max?flags=18446744073709551615", "x")).text, "true");
    assert.match((await req("GET", "/v1/kv/max")).text, /"Flags":18446744073709551615[,}]/);
    assert.match((await req("GET", "/v1/kv/?recurse")).text, new RegExp(`"Flags":${terraformLockFlags}`));
    const small = await req("PUT", "/v1/kv/small?flags=42", "x");
    assert.equal(small.text, "true");
    assert.match((await req("GET", "/v1/kv/small")).text, /"Flags":42[,}]/);
    for (const bad of ["18446744073709551616", "-1", "1.5", "0x10"]) {
      const r = await req("PUT", `/v1/kv/bad?flags=${bad}`, "x");
      assert.equal(r.status, 400, bad);
      assert.match(r.text, /Invalid flags/);
    }
  } finally {
    await d.stop();
  }
});

test("KV flags above 2^53 in /v1/txn: set and get keep the digits", async () => {
  const { d, req } = await setup();
  try {
    const body = `[{"KV":{"Verb":"set","Key":"tf/x","Value":"eA==","Flags":${terraformLockFlags}}},{"KV":{"Verb":"get","Key":"tf/x"}}]`;
    const r = await req("PUT", "/v1/txn", body);
    assert.equal(r.status, 200, r.text);
    const flags = [...r.text.matchAll(/"Flags":(\d+)/g)].map((m) => m[1]);
    assert.deepEqual(flags, [terraformLockFlags, terraformLockFlags]);
    const bad = await req("PUT", "/v1/txn", `[{"KV":{"Verb":"set","Key":"y","Value":"eA==","Flags":18446744073709551616}}]`);
    assert.equal(bad.status, 400, bad.text);
  } finally {
    await d.stop();
  }
});

test("KV flags above 2^53 survive a snapshot and restore of the state store", async () => {
  const { d, req } = await setup();
  try {
    await req("PUT", `/v1/kv/tf/lock?flags=${terraformLockFlags}`, "x");
    const chunks = [...d.fsm.state.snapshot()];
    const restored = StateStore.restoreSync(Uint8Array.from(chunks.flatMap((c) => [...c])), {});
    const e = restored.kvsGet("tf/lock").value;
    assert.equal(e?.flags, terraformLockFlags);
  } finally {
    await d.stop();
  }
});
