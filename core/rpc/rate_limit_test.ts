import { test } from "node:test";
import assert from "node:assert/strict";
import { RateLimitedError, RpcRateExceededError } from "../errors.ts";
import { nullLogger } from "../log/logger.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { RpcRouter, type RemoteCaller } from "./forward.ts";
import { RateLimits, requestBurst, requestKind, TokenBucket, type RateLimitsConfig } from "./rate_limit.ts";
import { toWireError, fromWireError } from "./wire_error.ts";

function allowed(bucket: { allow(): boolean }, n: number): number {
  let ok = 0;
  for (let i = 0; i < n; i++) if (bucket.allow()) ok++;
  return ok;
}

test("token bucket: starts full, refills at the rate up to the burst", () => {
  const clock = new SimClock();
  const b = new TokenBucket(clock, { ratePerSec: 10, burst: 5 });
  assert.equal(allowed(b, 20), 5, "the burst at once");
  clock.advance(100);
  assert.equal(allowed(b, 20), 1, "one token per 100 ms at 10/s");
  clock.advance(50);
  assert.equal(allowed(b, 20), 0, "half a token is not a token");
  clock.advance(50);
  assert.equal(allowed(b, 20), 1);
  clock.advance(60_000);
  assert.equal(allowed(b, 20), 5, "never more than the burst");
});

test("token bucket: a negative or infinite rate lets everything through; rate 0 with burst 0 nothing", () => {
  const clock = new SimClock();
  assert.equal(allowed(new TokenBucket(clock, { ratePerSec: -1, burst: 0 }), 10_000), 10_000);
  assert.equal(allowed(new TokenBucket(clock, { ratePerSec: Infinity, burst: 1 }), 10_000), 10_000);
  const none = new TokenBucket(clock, { ratePerSec: 0, burst: 0 });
  clock.advance(10_000);
  assert.equal(allowed(none, 10), 0);
});

test("token bucket: update keeps the tokens earned, capped by the new burst", () => {
  const clock = new SimClock();
  const b = new TokenBucket(clock, { ratePerSec: 1, burst: 100 });
  assert.equal(allowed(b, 90), 90);
  b.update({ ratePerSec: 1000, burst: 5 });
  assert.equal(allowed(b, 20), 5);
  clock.advance(1);
  assert.equal(allowed(b, 20), 1, "the new rate applies from now");
  b.update({ ratePerSec: -1, burst: 5 });
  assert.equal(allowed(b, 50), 50);
});

test("request limits: reads and writes as Consul classifies them; Status, Operator and Snapshot exempt", () => {
  assert.equal(requestKind("KVS.Get"), "read");
  assert.equal(requestKind("Health.ServiceNodes"), "read");
  assert.equal(requestKind("KVS.Apply"), "write");
  assert.equal(requestKind("Catalog.Register"), "write");
  assert.equal(requestKind("Session.Renew"), "write");
  assert.equal(requestKind("Coordinate.Update"), "write");
  assert.equal(requestKind("Status.Leader"), "exempt");
  assert.equal(requestKind("Operator.RaftGetConfiguration"), "exempt");
  assert.equal(requestKind("Snapshot.Save"), "exempt");
  assert.equal(requestBurst(50), 500, "burst is 10 × the rate");
  assert.equal(requestBurst(0.5), 1);
  assert.equal(requestBurst(0), 0);
});

function config(over: Partial<RateLimitsConfig["requestLimits"]> & { rpcRate?: number; rpcMaxBurst?: number } = {}): RateLimitsConfig {
  return {
    rpcRate: over.rpcRate ?? -1,
    rpcMaxBurst: over.rpcMaxBurst ?? 1000,
    requestLimits: { mode: over.mode ?? "disabled", readRate: over.readRate ?? -1, writeRate: over.writeRate ?? -1 },
  };
}

function refusals(limits: RateLimits, method: string, n: number, isLeader: boolean): RateLimitedError[] {
  const out: RateLimitedError[] = [];
  for (let i = 0; i < n; i++) {
    try {
      limits.checkRequest(method, () => isLeader);
    } catch (err) {
      assert.ok(err instanceof RateLimitedError, String(err));
      out.push(err);
    }
  }
  return out;
}

test("request limits: enforcing refuses past 10 × the rate; a write on the leader is try-later, else elsewhere; counted", () => {
  const clock = new SimClock();
  const counts: string[] = [];
  const limits = new RateLimits(clock, config({ mode: "enforcing", writeRate: 2, readRate: 1 }));
  limits.countTo((name, labels) => counts.push(`${name} ${labels?.limit_type ?? ""} ${labels?.mode ?? ""}`));
  const w = refusals(limits, "KVS.Apply", 25, true);
  assert.equal(w.length, 5, "20 writes (burst 10 × 2) pass");
  assert.ok(w.every((e) => !e.elsewhere && e.code === "rate_limit_later"));
  assert.match(w[0]!.message, /only be performed by the leader/);
  const r = refusals(limits, "KVS.Get", 12, true);
  assert.equal(r.length, 2);
  assert.ok(r.every((e) => e.elsewhere && e.code === "rate_limit_elsewhere"), "a read may go to another server");
  assert.equal(refusals(new RateLimits(clock, config({ mode: "enforcing", writeRate: 0 })), "KVS.Apply", 3, false)[0]?.elsewhere, true, "a follower's refusal of a write: elsewhere");
  assert.equal(refusals(limits, "Status.Leader", 100, true).length, 0, "exempt");
  assert.deepEqual(limits.stats, { rpcExceeded: 0, readExceeded: 2, writeExceeded: 5, refused: 7 });
  assert.equal(counts.filter((c) => c === "rpc.rate_limit.exceeded global/write enforcing").length, 5);
  assert.equal(counts.filter((c) => c === "rpc.rate_limit.exceeded global/read enforcing").length, 2);
  clock.advance(1_000);
  assert.equal(refusals(limits, "KVS.Apply", 2, true).length, 0, "refilled");
});

test("request limits: permissive counts and lets through; disabled counts nothing; reload switches mode and rates", () => {
  const clock = new SimClock();
  const counts: string[] = [];
  const limits = new RateLimits(clock, config({ mode: "permissive", writeRate: 1 }));
  limits.countTo((name) => counts.push(name));
  assert.equal(refusals(limits, "KVS.Apply", 30, true).length, 0);
  assert.equal(limits.stats.writeExceeded, 20);
  assert.equal(counts.length, 20);
  limits.update(config({ mode: "disabled", writeRate: 1 }));
  assert.equal(refusals(limits, "KVS.Apply", 30, true).length, 0);
  assert.equal(limits.stats.writeExceeded, 20, "disabled does not even count");
  limits.update(config({ mode: "enforcing", writeRate: 1 }));
  assert.equal(refusals(limits, "KVS.Apply", 5, true).length, 5, "the bucket emptied under permissive is still empty");
});

test("rpc_rate: the agent's own bucket, one token per try; reload applies new values", () => {
  const clock = new SimClock();
  const counts: string[] = [];
  const limits = new RateLimits(clock, config({ rpcRate: 1, rpcMaxBurst: 3 }));
  limits.countTo((name) => counts.push(name));
  let refused = 0;
  for (let i = 0; i < 5; i++) {
    try {
      limits.checkOutgoing();
    } catch (err) {
      assert.ok(err instanceof RpcRateExceededError);
      assert.equal(err.message, "RPC rate limit exceeded");
      refused++;
    }
  }
  assert.equal(refused, 2);
  assert.equal(counts.filter((c) => c === "client.rpc").length, 5);
  assert.equal(counts.filter((c) => c === "client.rpc.exceeded").length, 2);
  limits.update(config({ rpcRate: -1 }));
  for (let i = 0; i < 100; i++) limits.checkOutgoing();
});

test("rate limit errors cross the RPC wire as themselves", () => {
  for (const err of [new RateLimitedError(true), new RateLimitedError(false), new RpcRateExceededError()]) {
    const back = fromWireError(toWireError(err));
    assert.equal(back.constructor, err.constructor);
    assert.equal(back.message, err.message);
  }
});

function remoteOf(answer: (address: string) => unknown): RemoteCaller & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    call(address) {
      calls.push(address);
      try {
        return Promise.resolve(answer(address));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  };
}

test("rpc router: a client over rpc_rate fails at once, without sending", async () => {
  const clock = new SimClock();
  const remote = remoteOf(() => "ok");
  const r = new RpcRouter({ remote, servers: () => ["s1"], clock, rng: new Rng(1), logger: nullLogger(), limits: new RateLimits(clock, config({ rpcRate: 1, rpcMaxBurst: 2 })) });
  assert.equal(await r.callRaw("KVS.Get", { key: "a" }), "ok");
  assert.equal(await r.callRaw("KVS.Get", { key: "a" }), "ok");
  await assert.rejects(r.callRaw("KVS.Get", { key: "a" }), RpcRateExceededError);
  assert.equal(remote.calls.length, 2);
});

test("rpc router: a client sends a request another server may take elsewhere; try-later is the answer", async () => {
  const clock = new SimClock();
  const remote = remoteOf((address) => {
    if (address === "busy") throw new RateLimitedError(true);
    if (address === "leader") throw new RateLimitedError(false);
    return "ok";
  });
  const r = new RpcRouter({ remote, servers: () => ["busy", "idle"], clock, rng: new Rng(3), logger: nullLogger() });
  let result: unknown;
  for (let i = 0; i < 6; i++) {
    const p = r.callRaw("KVS.Get", { key: "a" }).then((v) => (result = v));
    await clock.runFor(1_000);
    await p;
    assert.equal(result, "ok");
  }
  assert.ok(remote.calls.includes("busy"), "the busy server was asked, and its refusal sent the call elsewhere");
  const onlyLeader = new RpcRouter({ remote, servers: () => ["leader"], clock, rng: new Rng(3), logger: nullLogger() });
  await assert.rejects(onlyLeader.callRaw("KVS.Apply", { op: "set" }), (e: unknown) => e instanceof RateLimitedError && !e.elsewhere);
});

test("rpc router: a server refuses another agent's call over request_limits before its endpoint runs; exempt calls pass", async () => {
  const clock = new SimClock();
  let handled = 0;
  const r = new RpcRouter({
    local: { handle: () => (handled++, Promise.resolve("ok")) },
    remote: remoteOf(() => "x"),
    servers: () => [],
    clock,
    rng: new Rng(1),
    logger: nullLogger(),
    limits: new RateLimits(clock, config({ mode: "enforcing", writeRate: 0.5 })),
    isLeader: () => true,
  });
  assert.equal(await r.serve("KVS.Apply", {}), "ok");
  await assert.rejects(r.serve("KVS.Apply", {}), (e: unknown) => e instanceof RateLimitedError && e.code === "rate_limit_later");
  await assert.rejects(r.callRaw("Catalog.Register", {}), RateLimitedError, "the server's own agent's calls count too");
  assert.equal(await r.serve("Status.Leader", {}), "ok");
  assert.equal(await r.serve("KVS.Get", {}), "ok", "reads have their own (unlimited) bucket");
  assert.equal(handled, 3);
});

test("http: rate limit refusals answer 429 or 503 with Consul's text, and are not logged as failures", async () => {
  const { errorResponse } = await import("../http/http_error.ts");
  const { CaptureSink, createLogger } = await import("../log/logger.ts");
  const sink = new CaptureSink();
  const logger = createLogger({ sink, level: "info" });
  const text = (b: unknown) => (typeof b === "string" ? b : new TextDecoder().decode(b as Uint8Array));
  const later = errorResponse(new RateLimitedError(false), logger);
  assert.equal(later.status, 503);
  assert.equal(text(later.body), "rate limit exceeded for operation that can only be performed by the leader, try again later");
  const elsewhere = errorResponse(fromWireError(toWireError(new RateLimitedError(true))), logger);
  assert.equal(elsewhere.status, 429);
  assert.equal(text(elsewhere.body), "rate limit exceeded, try again later or against a different server");
  const rpc = errorResponse(new RpcRateExceededError(), logger);
  assert.deepEqual([rpc.status, text(rpc.body)], [429, "RPC rate limit exceeded"]);
  assert.equal(sink.records.length, 0);
  errorResponse(new Error("boom"), logger);
  assert.equal(sink.records.length, 1, "other server errors still warn");
});
