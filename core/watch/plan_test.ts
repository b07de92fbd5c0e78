// The watch plan loop against a fake client on a SimClock: the handler runs
// once at start, once per change, never for an unchanged index or the same
// data; errors back off 5 s × n²; an index that went backwards starts over.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RawRequest, RawResponse } from "../api/client.ts";
import { uuidToIndex } from "../http/event.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { runWatchPlan, watchQuery, watchRetryMs, type WatchClient, type WatchParams } from "./plan.ts";

class FakeClient implements WatchClient {
  readonly paths: string[] = [];
  readonly requests: RawRequest[] = [];
  #waiting: Array<{ resolve: (r: RawResponse) => void; reject: (e: unknown) => void }> = [];

  request(req: RawRequest): Promise<RawResponse> {
    this.paths.push(req.path);
    this.requests.push(req);
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      req.query?.signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
    });
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  answer(index: string, body: unknown, status = 200): void {
    const w = this.#waiting.shift();
    assert.ok(w, "no request is waiting");
    w.resolve({ status, text: JSON.stringify(body), meta: { lastIndex: Number(index), lastIndexText: index, knownLeader: true, lastContactMs: 0 } });
  }

  fail(message: string): void {
    const w = this.#waiting.shift();
    assert.ok(w, "no request is waiting");
    w.reject(new Error(message));
  }
}

function start(params: WatchParams) {
  const clock = new SimClock();
  const client = new FakeClient();
  const q = watchQuery(params);
  assert.ok(typeof q !== "string", String(q));
  const runs: Array<{ index: string; data: unknown }> = [];
  const errors: Array<{ failures: number; retryMs: number }> = [];
  const ctl = new AbortController();
  const done = runWatchPlan({
    client,
    query: q,
    clock,
    signal: ctl.signal,
    onChange: (index, data) => void runs.push({ index, data }),
    onError: (_err, info) => void errors.push({ failures: info.failures, retryMs: info.retryMs }),
  });
  return { clock, client, runs, errors, ctl, done };
}

test("watch plan: runs once at start, then only when the index and the data change", async () => {
  const w = start({ type: "key", key: "app/cfg", stale: true, datacenter: "dc2", token: "tok" });
  await drainMicrotasks();
  assert.equal(w.client.paths[0], "/v1/kv/app/cfg", "the first query does not block");
  assert.deepEqual(w.client.requests[0]!.query && { dc: w.client.requests[0]!.query.datacenter, token: w.client.requests[0]!.query.token, stale: w.client.requests[0]!.query.allowStale }, { dc: "dc2", token: "tok", stale: true });
  w.client.answer("5", [{ Key: "app/cfg", Value: "MQ==" }]);
  await drainMicrotasks(3);
  assert.deepEqual(w.runs, [{ index: "5", data: { Key: "app/cfg", Value: "MQ==" } }]);
  assert.equal(w.client.paths[1], "/v1/kv/app/cfg?index=5&wait=300s");

  // The wait timed out: same index, no run.
  w.client.answer("5", [{ Key: "app/cfg", Value: "MQ==" }]);
  await drainMicrotasks(3);
  assert.equal(w.runs.length, 1);
  // Another key moved the index, this one is unchanged: no run.
  w.client.answer("7", [{ Key: "app/cfg", Value: "MQ==" }]);
  await drainMicrotasks(3);
  assert.equal(w.runs.length, 1);
  assert.equal(w.client.paths.at(-1), "/v1/kv/app/cfg?index=7&wait=300s");
  // A change: one run.
  w.client.answer("9", [{ Key: "app/cfg", Value: "Mg==" }]);
  await drainMicrotasks(3);
  assert.deepEqual(w.runs.map((r) => r.index), ["5", "9"]);
  // Deleted: the key watch hands null.
  w.client.answer("11", null, 404);
  await drainMicrotasks(3);
  assert.deepEqual(w.runs.at(-1), { index: "11", data: null });

  w.ctl.abort();
  assert.equal(await w.done, "stopped");
});

test("watch plan: errors back off 5 s × failures², at most 180 s, and a success resets the count", async () => {
  assert.deepEqual([1, 2, 3, 6, 7, 100].map(watchRetryMs), [5_000, 20_000, 45_000, 180_000, 180_000, 180_000]);
  const w = start({ type: "nodes" });
  await drainMicrotasks();
  w.client.fail("connection refused");
  await drainMicrotasks(3);
  assert.deepEqual(w.errors, [{ failures: 1, retryMs: 5_000 }]);
  w.clock.advance(4_999);
  await drainMicrotasks(3);
  assert.equal(w.client.waiting, 0, "no retry before the backoff");
  w.clock.advance(1);
  await drainMicrotasks(3);
  assert.equal(w.client.waiting, 1);
  w.client.fail("connection refused");
  await drainMicrotasks(3);
  assert.deepEqual(w.errors.at(-1), { failures: 2, retryMs: 20_000 });
  w.clock.advance(20_000);
  await drainMicrotasks(3);
  w.client.answer("3", [{ Node: "a" }]);
  await drainMicrotasks(3);
  assert.equal(w.runs.length, 1, "the first success runs the handler");
  w.client.fail("500");
  await drainMicrotasks(3);
  assert.deepEqual(w.errors.at(-1), { failures: 1, retryMs: 5_000 }, "a success resets the count");
  w.ctl.abort();
  assert.equal(await w.done, "stopped", "stop ends the backoff wait");
});

test("watch plan: an index that went backwards starts over without a run for the same data", async () => {
  const w = start({ type: "services" });
  await drainMicrotasks();
  w.client.answer("50", { consul: [] });
  await drainMicrotasks(3);
  w.client.answer("10", { consul: [] });
  await drainMicrotasks(3);
  assert.equal(w.client.paths.at(-1), "/v1/catalog/services", "starts over from index 0");
  w.client.answer("10", { consul: [] });
  await drainMicrotasks(3);
  assert.equal(w.runs.length, 1);
  assert.equal(w.client.paths.at(-1), "/v1/catalog/services?index=10&wait=300s");
  w.client.answer("12", { consul: [], web: ["v1"] });
  await drainMicrotasks(3);
  assert.deepEqual(w.runs.map((r) => r.index), ["50", "12"]);
  w.ctl.abort();
  await w.done;
});

test("watch plan: the event watch hands only the events after the last one seen", async () => {
  const ids = ["00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b", "00000000-0000-0000-0000-00000000000c"];
  const ev = (id: string) => ({ ID: id, Name: "deploy" });
  const w = start({ type: "event", name: "deploy", stale: true });
  await drainMicrotasks();
  assert.equal(w.client.paths[0], "/v1/event/list?name=deploy");
  assert.equal(w.client.requests[0]!.query?.allowStale, false, "stale does not apply to events");
  w.client.answer(uuidToIndex(ids[0]!), [ev(ids[0]!)]);
  await drainMicrotasks(3);
  w.client.answer(uuidToIndex(ids[2]!), [ev(ids[0]!), ev(ids[1]!), ev(ids[2]!)]);
  await drainMicrotasks(3);
  assert.deepEqual(w.runs.map((r) => (r.data as Array<{ ID: string }>).map((e) => e.ID)), [[ids[0]], [ids[1], ids[2]]]);
  w.ctl.abort();
  await w.done;
});

test("watch plan: each type's query, and Consul's messages for bad parameters", () => {
  const paths = (p: WatchParams) => {
    const q = watchQuery(p);
    return typeof q === "string" ? q : `${q.path} ${JSON.stringify(q.params)}`;
  };
  assert.equal(paths({ type: "keyprefix", prefix: "/app/" }), '/v1/kv/app/ [["recurse",""]]');
  assert.equal(paths({ type: "service", service: "web", tag: ["a", "b"], passingonly: true }), '/v1/health/service/web [["tag","a"],["tag","b"],["passing",""]]');
  assert.equal(paths({ type: "checks", service: "web" }), "/v1/health/checks/web []");
  assert.equal(paths({ type: "checks" }), "/v1/health/state/any []");
  assert.equal(paths({ type: "checks", state: "critical" }), "/v1/health/state/critical []");
  const tagged = watchQuery({ type: "checks", state: "passing", tag: ["v1"] });
  assert.ok(typeof tagged !== "string");
  const checks = [{ CheckID: "a", ServiceTags: ["v1", "x"] }, { CheckID: "b", ServiceTags: ["v2"] }, { CheckID: "serfHealth", ServiceTags: [] }];
  assert.deepEqual(tagged.data(200, JSON.stringify(checks), "0"), [checks[0]], "tag keeps the checks of instances with that tag");
  assert.equal(paths({ type: "key" }), "Must specify a single key to watch");
  assert.equal(paths({ type: "keyprefix" }), "Must specify a single prefix to watch");
  assert.equal(paths({ type: "service" }), "Must specify a single service to watch");
  assert.equal(paths({ type: "bogus" as "key" }), "Unsupported watch type: bogus");
});
