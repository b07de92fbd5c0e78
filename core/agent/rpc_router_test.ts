import { test } from "node:test";
import assert from "node:assert/strict";
import { BadRequestError, NoLeaderError, NotLeaderError, RpcError } from "../errors.ts";
import { nullLogger } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { RpcRouter, type LocalHandler, type RemoteCaller } from "./rpc_router.ts";

interface Call {
  address: string;
  method: string;
  timeoutMs?: number;
}

function remoteOf(answer: (address: string, method: string) => unknown): RemoteCaller & { calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    call(address, method, _body, options) {
      calls.push({ address, method, timeoutMs: options?.timeoutMs });
      try {
        return Promise.resolve(answer(address, method));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

function router(o: { local?: LocalHandler; remote: RemoteCaller; servers?: string[]; clock: SimClock }): RpcRouter {
  return new RpcRouter({
    local: o.local,
    remote: o.remote,
    servers: () => o.servers ?? [],
    clock: o.clock,
    rng: new Rng(7),
    logger: nullLogger(),
    holdTimeoutMs: 7_000,
  });
}

test("rpc router: the leader answers locally; a follower forwards to the leader it names", async () => {
  const clock = new SimClock();
  const remote = remoteOf(() => "from-leader");
  const leader = router({ clock, remote, local: { handle: () => Promise.resolve("local") } });
  assert.equal(await leader.callRaw("KVS.Apply", {}), "local");
  assert.equal(remote.calls.length, 0);

  const follower = router({ clock, remote, local: { handle: () => Promise.reject(new NotLeaderError("10.0.0.1:8300")) } });
  assert.equal(await follower.callRaw("KVS.Get", { key: "a", query: { minQueryIndex: 5, maxQueryTimeMs: 16_000 } }), "from-leader");
  assert.equal(remote.calls[0]!.address, "10.0.0.1:8300");
  assert.equal(remote.calls[0]!.timeoutMs, 30_000 + 17_000, "blocking wait is added to the forward timeout");
});

test("rpc router: without a leader a call waits up to the hold timeout, then fails with No cluster leader", async () => {
  const clock = new SimClock();
  let tries = 0;
  const r = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => (tries++, Promise.reject(new NoLeaderError())) } });
  let outcome: unknown;
  const p = r.callRaw("KVS.Apply", {}).then((v) => (outcome = v), (e) => (outcome = e));
  await clock.runFor(6_900);
  assert.ok(outcome === undefined, "still holding before 7 s");
  await clock.runFor(500);
  await p;
  const err = outcome as unknown;
  assert.ok(err instanceof NoLeaderError, `got ${String(err)}`);
  assert.equal(err.message, "No cluster leader");
  assert.ok(tries > 5, `retried while holding (${tries} tries)`);
});

test("rpc router: a leader elected during the hold answers the held call", async () => {
  const clock = new SimClock();
  let leader = "";
  const r = router({
    clock,
    remote: remoteOf(() => "ok"),
    local: { handle: () => Promise.reject(leader === "" ? new NoLeaderError() : new NotLeaderError(leader)) },
  });
  let outcome: unknown;
  const p = r.callRaw("KVS.Apply", {}).then((v) => (outcome = v));
  await clock.runFor(2_000);
  leader = "10.0.0.2:8300";
  await clock.runFor(1_000);
  await p;
  assert.equal(outcome, "ok");
});

test("rpc router: errors the server answered with are not retried", async () => {
  const clock = new SimClock();
  let tries = 0;
  const r = router({ clock, remote: remoteOf(() => "x"), local: { handle: () => (tries++, Promise.reject(new BadRequestError("Must provide key"))) } });
  await assert.rejects(r.callRaw("KVS.Apply", {}), BadRequestError);
  assert.equal(tries, 1);
});

test("rpc router: a client tries another server when one is unreachable, and keeps the one that answered", async () => {
  const clock = new SimClock();
  const remote = remoteOf((address) => {
    if (address === "10.0.0.1:8300") throw new RpcError(`Cannot connect to "${address}": connection refused`);
    return `answer from ${address}`;
  });
  const r = router({ clock, remote, servers: ["10.0.0.1:8300", "10.0.0.2:8300"] });
  for (let i = 0; i < 5; i++) {
    const p = r.callRaw("Status.Leader", {});
    await clock.runFor(1_000);
    assert.equal(await p, "answer from 10.0.0.2:8300");
  }
  const dead = remote.calls.filter((c) => c.address === "10.0.0.1:8300").length;
  assert.ok(dead <= 1, `the dead server was tried ${dead} times`);
});

test("rpc router: a client with no known servers fails after the hold timeout with a clear error", async () => {
  const clock = new SimClock();
  const r = router({ clock, remote: remoteOf(() => "x"), servers: [] });
  let outcome: unknown;
  const p = r.callRaw("KVS.Get", {}).catch((e) => (outcome = e));
  await clock.runFor(8_000);
  await p;
  assert.ok(outcome instanceof RpcError);
  assert.match((outcome as Error).message, /No known Consul servers/);
});
