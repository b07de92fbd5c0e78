// Fuzz: every server RPC method with arguments of the wrong shape. Valid
// arguments are mutated (fields of other types, dropped or extra keys, odd
// strings, huge numbers, long arrays), sent through the msgpack frame codec
// as a peer's would be, and handed to the dev server's handlers. Each call
// must settle, and a rejection must be one of our errors (BadRequestError and
// friends), never a TypeError from deep inside; the FSM must not halt; a
// rejected write must leave the state as it was. FUZZ_SEED=n replays one seed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError, CairnError, CorruptionError, errorMessage } from "../errors.ts";
import { encodeFrame, FrameDecoder, FrameKind } from "../rpc/frame.ts";
import type { RpcMethod, RpcMethods } from "../rpc/methods.ts";
import { fuzzSeeds, mutateBytes, mutateValue, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { drainMicrotasks, SimClock } from "../sim/sim_clock.ts";
import { tableList } from "../state/schema.ts";
import { createDevServer, type DevServer } from "./dev.ts";
import { readSnapshotArchive, writeSnapshotArchive } from "./snapshot_archive.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const q = { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: false };
const agent = { node: "n1", datacenter: "dc1" };
const query = {
  id: "",
  name: "web-q",
  session: "",
  token: "",
  template: { type: "", regexp: "", removeEmptyTags: false },
  service: {
    service: "web",
    failover: { nearestN: 0, datacenters: [] },
    ignoreCheckIds: [],
    onlyPassing: false,
    near: "",
    tags: ["v1"],
    nodeMeta: {},
    serviceMeta: {},
    connect: false,
  },
  dns: { ttl: "10s" },
};

/** Valid arguments for every method (some name things `seed()` creates). */
function corpus(archive: Uint8Array): { [M in RpcMethod]: RpcMethods[M]["args"][] } {
  return {
    "ACL.Bootstrap": [{}],
    "ACL.Write": [{ kind: "policy", op: "create", item: { name: "p1", rules: `key_prefix "" { policy = "read" }` } }, { kind: "token", op: "create", item: { description: "t" } }],
    "ACL.Read": [{ kind: "policy", op: "list", query: q }, { kind: "token", op: "self", query: q }],
    "ACL.Resolve": [{ secret: "anonymous" }],
    "ACL.ReplicationStatus": [{ query: q }],
    "KVS.Apply": [
      { op: "set", entry: { key: "app/a", value: bytes("1"), flags: 3 } },
      { op: "cas", entry: { key: "app/b", value: bytes("2"), modifyIndex: 0 } },
      { op: "lock", entry: { key: "app/lock", value: bytes("x"), session: "s" } },
      { op: "delete-tree", entry: { key: "app/" } },
    ],
    "KVS.Get": [{ key: "app/a", query: q }, { key: "app/a", query: { ...q, minQueryIndex: 5, maxQueryTimeMs: 1000 } }],
    "KVS.List": [{ prefix: "app/", query: q }],
    "KVS.ListKeys": [{ prefix: "app/", separator: "/", query: q }],
    "Txn.Apply": [
      { ops: [{ kv: { verb: "set", key: "t/a", value: bytes("v"), flags: 1 } }, { kv: { verb: "get", key: "app/a" } }] },
      { ops: [{ kv: { verb: "check-index", key: "app/a", index: 1 } }, { kv: { verb: "delete", key: "t/a" } }], query: q },
      { ops: [{ kv: { verb: "get-tree", key: "app/" } }], query: q },
      {
        ops: [
          { node: { verb: "set", node: { node: "t1", address: "10.0.0.7", meta: { a: "b" } } } },
          { service: { verb: "cas", node: "t1", service: { service: "db", id: "db1", port: 5432, modifyIndex: 0 } } },
          { check: { verb: "set", check: { node: "t1", checkId: "c1", name: "c1", status: "passing", serviceId: "db1" } } },
          { node: { verb: "delete-cas", node: { node: "n1", modifyIndex: 3 } } },
        ],
      },
      { ops: [{ node: { verb: "get", node: { node: "n1" } } }, { service: { verb: "get", node: "n1", service: { service: "web", id: "web-1" } } }, { check: { verb: "get", check: { node: "n1", checkId: "c0" } } }], query: q },
    ],
    "Status.Leader": [{}],
    "Status.Peers": [{ datacenter: "dc1" }],
    "Catalog.Register": [
      {
        node: "n2",
        address: "10.0.0.2",
        id: "5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c45",
        taggedAddresses: { lan: "10.0.0.2" },
        nodeMeta: { rack: "r1" },
        service: { service: "web", id: "web-2", tags: ["v1"], port: 80, meta: { m: "1" }, weights: { passing: 1, warning: 1 }, address: "", taggedAddresses: { lan: { address: "10.0.0.2", port: 80 } } },
        checks: [{ name: "c1", checkId: "c1", status: "passing", serviceId: "web-2", definition: { http: "http://x", intervalMs: 1000 } }],
      },
      { node: "n2", address: "10.0.0.2", check: { name: "node-check", status: "warning", output: "o" } },
    ],
    "Catalog.Deregister": [{ node: "n2", serviceId: "web-2" }, { node: "n2", checkId: "c1" }, { node: "gone" }],
    "Catalog.ListDatacenters": [{}],
    "Catalog.ListNodes": [{ query: q }, { query: q, filter: "Node == \"n1\"", nodeMetaFilters: { rack: "r1" } }],
    "Catalog.ListServices": [{ query: q, nodeMetaFilters: { rack: "r1" } }],
    "Catalog.ServiceNodes": [{ query: q, serviceName: "web", serviceTags: ["v1"], filter: "ServicePort > 1" }],
    "Catalog.NodeServices": [{ query: q, node: "n1" }],
    "Health.NodeChecks": [{ query: q, node: "n1" }],
    "Health.ServiceChecks": [{ query: q, serviceName: "web" }],
    "Health.ServiceNodes": [{ query: q, serviceName: "web", serviceTags: ["v1"], passingOnly: true, filter: "Checks.Status == passing" }],
    "Health.ChecksInState": [{ query: q, state: "any" }, { query: q, state: "critical" }],
    "Session.Apply": [
      { op: "create", session: { name: "s", node: "n1", lockDelayMs: 15_000, behavior: "release", ttl: "30s", nodeChecks: ["c0"], serviceChecks: [{ id: "c1" }] } },
      { op: "destroy", session: { id: "s" } },
    ],
    "Session.Get": [{ query: q, sessionId: "s" }],
    "Session.List": [{ query: q }],
    "Session.NodeSessions": [{ query: q, node: "n1" }],
    "Session.Renew": [{ sessionId: "s" }],
    "Snapshot.Save": [{ allowStale: true }],
    "Snapshot.Restore": [{ archive }],
    "PreparedQuery.Apply": [
      { op: "create", query },
      { op: "update", query: { ...query, id: "q" } },
      { op: "delete", query: { ...query, id: "q" } },
    ],
    "PreparedQuery.Get": [{ query: q, queryId: "q" }],
    "PreparedQuery.List": [{ query: q }],
    "PreparedQuery.Explain": [{ queryIdOrName: "web-q", agent, query: q }],
    "PreparedQuery.Execute": [{ queryIdOrName: "web-q", limit: 2, near: "_agent", agent, query: q }],
    "PreparedQuery.ExecuteRemote": [{ definition: { ...query, id: "q1", createIndex: 1, modifyIndex: 1 }, limit: 1, query: q }],
    "Coordinate.Update": [{ node: "n1", segment: "", coord: { vec: [0.001, 0, 0, 0, 0, 0, 0, -0.002], error: 0.5, adjustment: 0, height: 0.00001 } }],
    "Coordinate.ListNodes": [{ query: q }],
    "Coordinate.Node": [{ node: "n1", query: q }],
  };
}

const undeliverable = Symbol("undeliverable");

/** Arguments exactly as a peer's frame would deliver them (msgpack: no undefined, bins as Uint8Array), or `undeliverable`. */
function overTheWire(args: unknown): unknown {
  let frame: Uint8Array;
  try {
    frame = encodeFrame({ t: FrameKind.Request, id: 1, method: "m", body: args });
  } catch {
    return args; // Not encodable: the in-process path could still pass it.
  }
  // The decoder refuses some (a "__proto__" key): the server never sees those.
  const { frames, error } = new FrameDecoder().push(frame);
  return error ? undeliverable : (frames[0] as { body: unknown }).body;
}

/** Every row of every table (not the table indexes: a rejected write may still take a Raft index). */
function stateDigest(d: DevServer): string {
  const rows = tableList(d.fsm.state.tables).map((t) => [t.name, t.all()]);
  return JSON.stringify(rows, (_k, v: unknown) => (v instanceof Uint8Array ? Array.from(v) : v));
}

async function seedState(d: DevServer): Promise<void> {
  const h = d.server.handlers;
  await h["Catalog.Register"]({ node: "n1", address: "10.0.0.1", nodeMeta: { rack: "r1" }, check: { name: "c0", checkId: "c0", status: "passing" } });
  await h["Catalog.Register"]({ node: "n1", address: "10.0.0.1", service: { service: "web", id: "web-1", tags: ["v1"], port: 8080 } });
  await h["KVS.Apply"]({ op: "set", entry: { key: "app/a", value: bytes("1") } });
}

/** Writes whose rejection must leave no trace (every other method only reads). */
const writes: ReadonlySet<string> = new Set(["KVS.Apply", "Txn.Apply", "Catalog.Register", "Catalog.Deregister", "Session.Apply", "Snapshot.Restore", "PreparedQuery.Apply", "Session.Renew", "Coordinate.Update"]);

test("server fuzz: mutated arguments to every RPC method are refused with our errors, never a crash or a hang", async () => {
  const findings: string[] = [];
  for (const seed of fuzzSeeds(4)) {
    const rng = new Rng(seed);
    const clock = new SimClock();
    const d = await createDevServer({ clock, rng: rng.fork() });
    await seedState(d);
    const archive = (await d.server.handlers["Snapshot.Save"]({ allowStale: true })).archive;
    const valid = corpus(archive);
    const methods = Object.keys(valid) as RpcMethod[];
    assert.deepEqual(methods.slice().sort(), Object.keys(d.server.handlers).sort(), "the corpus covers every method");
    for (let i = 0; i < 400 && findings.length < 20; i++) {
      const method = rng.pick(methods);
      const base = rng.pick(valid[method] as unknown[]);
      const args = overTheWire(rng.chance(0.1) ? rng.pick([undefined, null, 7, "x", [], bytes("x")]) : mutateValue(rng, base));
      if (args === undeliverable) continue;
      // Coordinate updates queued by an earlier call land with the leader's next batch: apply them now, so
      // that a batch landing while this call waits is not taken for this call's change.
      await d.server.coordinateBatcher.flush();
      const before = stateDigest(d);
      let outcome: { ok: true } | { ok: false; err: unknown } | undefined;
      let call: Promise<unknown>;
      try {
        call = d.server.handle(method, args as never);
      } catch (err) {
        findings.push(`${replayHint(seed, i)}: ${method} threw synchronously: ${errorMessage(err)}`);
        continue;
      }
      call.then(() => (outcome = { ok: true }), (err: unknown) => (outcome = { ok: false, err }));
      // Most calls settle at once (a write once the lone voter has stored it);
      // blocking reads may wait up to ten minutes (plus jitter) of virtual time.
      for (let t = 0; t < 5 && outcome === undefined; t++) await drainMicrotasks();
      for (let t = 0; t < 12 && outcome === undefined; t++) await clock.runFor(60_000);
      const what = `${replayHint(seed, i)}: ${method}(${describe(args)})`;
      if (outcome === undefined) findings.push(`${what} never settled`);
      else if (!outcome.ok && !(outcome.err instanceof CairnError)) {
        const e = outcome.err;
        findings.push(`${what} rejected with ${e instanceof Error ? `${e.name}: ${e.message}\n${e.stack?.split("\n").slice(1, 4).join("\n")}` : String(e)}`);
      }
      if (d.raft.failure) {
        findings.push(`${what} halted the Raft node: ${d.raft.failure.message}`);
        break;
      }
      if (outcome && !outcome.ok && writes.has(method) && stateDigest(d) !== before) findings.push(`${what} was refused but changed the state`);
    }
    // Still serving after all that.
    if (!d.raft.failure) {
      const put = await d.server.handlers["KVS.Apply"]({ op: "set", entry: { key: "after/fuzz", value: bytes("ok") } });
      assert.equal(put.ok, true, `seed ${seed}: a write after the fuzzing`);
      const got = await d.server.handlers["KVS.Get"]({ key: "after/fuzz", query: q });
      assert.equal(new TextDecoder().decode(got.entries[0]?.value), "ok");
    }
    await d.stop();
  }
  assert.deepEqual(findings, []);
});

function describe(v: unknown): string {
  const text = JSON.stringify(v, (_k, x: unknown) => (x instanceof Uint8Array ? `<${x.length} bytes>` : x === undefined ? "<undefined>" : typeof x === "number" && !Number.isFinite(x) ? String(x) : x));
  return text === undefined ? String(v) : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

test("server: arguments of the wrong shape are a BadRequestError naming the field (cases the fuzzer found)", async () => {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(1) });
  const cases: [RpcMethod, unknown, string][] = [
    ["KVS.Get", 0, 'Invalid arguments to "KVS.Get": the arguments must be an object'],
    ["KVS.Get", { key: "a" }, 'Invalid arguments to "KVS.Get": "query" must be an object'],
    ["KVS.List", { prefix: "a", query: { ...q, allowStale: "yes" } }, 'Invalid arguments to "KVS.List": "query.allowStale" must be true or false'],
    ["Catalog.NodeServices", undefined, 'Invalid arguments to "Catalog.NodeServices": the arguments must be an object'],
    ["Catalog.ListServices", { query: q, filter: [3, "a", null] }, 'Invalid arguments to "Catalog.ListServices": "filter" must be a string'],
    ["Session.List", null, 'Invalid arguments to "Session.List": the arguments must be an object'],
    ["PreparedQuery.Apply", { op: "create", query: { ...query, service: undefined } }, 'Invalid arguments to "PreparedQuery.Apply": "query.service" must be an object'],
    ["PreparedQuery.Execute", { queryIdOrName: "x", agent, query: { ...q, minQueryIndex: -1 } }, 'Invalid arguments to "PreparedQuery.Execute": "query.minQueryIndex" must be a non-negative number'],
    ["Catalog.Register", { node: "n", address: "a", service: { service: "web", tags: ["a", 1] } }, 'Invalid arguments to "Catalog.Register": "service.tags[1]" must be a string'],
  ];
  for (const [method, args, message] of cases) {
    await assert.rejects(d.server.handle(method, args as never), (err: unknown) => {
      assert.ok(err instanceof BadRequestError, `${method}: ${String(err)}`);
      assert.equal(err.message, message);
      return true;
    });
  }
  await d.stop();
});

async function gzip(data: Uint8Array, on: "gzip" | "gunzip"): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(on === "gzip" ? new CompressionStream("gzip") : new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

test("snapshot archive fuzz: a damaged archive (gzip or the tar inside) is a CorruptionError, or opens to exactly the state saved", async () => {
  const state = new TextEncoder().encode("state bytes ".repeat(100));
  const archive = await writeSnapshotArchive(state, { index: 42, nowMs: 1_700_000_000_000 });
  const tar = await gzip(archive, "gunzip");
  for (const seed of fuzzSeeds(3)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 40; i++) {
      const damaged = rng.chance(0.5) ? mutateBytes(rng, archive) : await gzip(mutateBytes(rng, tar, { rounds: 1 }), "gzip");
      let opened: Awaited<ReturnType<typeof readSnapshotArchive>>;
      try {
        opened = await readSnapshotArchive(damaged);
      } catch (err) {
        assert.ok(err instanceof CorruptionError, `${replayHint(seed, i)}: ${err instanceof Error ? err.stack : String(err)}`);
        continue;
      }
      assert.deepEqual(opened.state, state, `${replayHint(seed, i)}: a damaged archive opened to other state`);
      assert.equal(opened.meta.Index, 42, replayHint(seed, i));
    }
  }
});
