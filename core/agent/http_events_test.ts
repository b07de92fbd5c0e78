// The agent's user events (UserEventStore over a gossip pool) behind the
// HTTP table: node, service and tag filters, plain Serf events, bad payloads,
// and the agent's input errors answered 400.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Clock } from "../clock/mod.ts";
import { statusForError } from "../http/http_error.ts";
import { createRoutes } from "../http/mod.ts";
import { fakeGossip } from "../http/_fake_gossip.ts";
import { testBackends } from "../http/_test_env.ts";
import { makeRequest } from "../http/types.ts";
import { nullLogger } from "../log/mod.ts";
import { KeyringInputError } from "../pool/mod.ts";
import { UserEventError, UserEventStore } from "../pool/user_events.ts";

// A real clock whose timers keep the test process alive (systemClock's are unref'd).
const clock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimer(ms, fn) {
    const h = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(h) };
  },
};

function setup() {
  const gossip = fakeGossip();
  const events = new UserEventStore({ pool: gossip.lan, nodeName: "n1", localServices: () => [{ service: "web", tags: ["v1"] }], clock, logger: nullLogger() });
  const router = createRoutes(testBackends({ gossip, events, clock }));
  const call = async (method: string, target: string, body?: string) => {
    const r = await router.handle(makeRequest(method, target, { body }));
    const text = typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
    return { status: r.status, text, headers: r.headers, json: () => JSON.parse(text) as unknown };
  };
  return { gossip, call, events };
}

test("events: fire returns Consul's JSON; list filters by name and blocks on the index", async () => {
  const { gossip, call } = setup();
  const fired = await call("PUT", "/v1/event/fire/deploy?node=^n", "v1");
  assert.equal(fired.status, 200);
  const e = fired.json() as Record<string, unknown>;
  assert.deepEqual(Object.keys(e), ["ID", "Name", "Payload", "NodeFilter", "ServiceFilter", "TagFilter", "Version", "LTime"]);
  assert.equal(e.Name, "deploy");
  assert.equal(e.Payload, Buffer.from("v1").toString("base64"));
  assert.equal(e.NodeFilter, "^n");
  assert.equal(gossip.lan.fired[0]!.name, "consul:event:deploy");
  assert.equal((await call("PUT", "/v1/event/fire/x?tag=v1")).status, 400, "tag filter needs a service filter");
  assert.equal((await call("PUT", "/v1/event/fire/x?node=(")).status, 400);
  // Filtered out here: another node, another service.
  await call("PUT", "/v1/event/fire/other?node=^zz$");
  await call("PUT", "/v1/event/fire/other?service=^db$");
  await call("PUT", "/v1/event/fire/svc?service=^web$&tag=^v1$");
  const list = await call("GET", "/v1/event/list");
  assert.deepEqual((list.json() as Array<{ Name: string }>).map((x) => x.Name), ["deploy", "svc"]);
  const index = list.headers["X-Consul-Index"]!;
  assert.match(index, /^\d+$/);
  const empty = await call("GET", "/v1/event/list?name=none");
  assert.equal(empty.headers["X-Consul-Index"], "1");
  // Blocking: same index waits until a new event arrives.
  const pending = call("GET", `/v1/event/list?index=${index}&wait=5s`);
  setTimeout(() => gossip.lan.deliver("plain", new TextEncoder().encode("p")), 30);
  const woke = await pending;
  assert.notEqual(woke.headers["X-Consul-Index"], index);
  assert.deepEqual((woke.json() as Array<{ Name: string }>).map((x) => x.Name), ["deploy", "svc", "plain"]);
  const timedOut = await call("GET", `/v1/event/list?index=${woke.headers["X-Consul-Index"]}&wait=50ms`);
  assert.equal(timedOut.headers["X-Consul-Index"], woke.headers["X-Consul-Index"]);
  // A bad Consul payload is dropped, not thrown.
  gossip.lan.deliver("consul:event:bad", new Uint8Array([0xc1]));
  assert.equal(((await call("GET", "/v1/event/list")).json() as unknown[]).length, 3);
});

test("agent input errors (bad event filters, bad keyring keys) are 400s", () => {
  assert.equal(statusForError(new UserEventError("Invalid node filter")), 400);
  assert.equal(statusForError(new KeyringInputError("Invalid key")), 400);
});
