// Fuzz: damaged state snapshots. A state with every table in use (nodes,
// services, checks, sessions, locked and deleted keys, prepared queries) is
// snapshotted by our own encoder, then damaged at the byte level (flips,
// cuts, splices, huge frame lengths) and at the record level (rows with
// fields of other types or extreme values, odd table names, headers and
// indexes). Restoring must either refuse with a CorruptionError or give a
// store whose every read works and which snapshots and restores again to
// the same content. Through the server, a valid archive around damaged
// state is refused with a BadRequestError or restored, and the server keeps
// answering every read without a TypeError. FUZZ_SEED=n replays one seed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Encoder } from "@msgpack/msgpack";
import { CairnError, CorruptionError, errorMessage } from "../errors.ts";
import { createDevServer, type DevServer } from "../server/dev.ts";
import { writeSnapshotArchive } from "../server/snapshot_archive.ts";
import { fuzzSeeds, mutateBytes, mutateLeaves, mutateValue, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { tableList } from "./schema.ts";
import { concatBytes } from "../bytes.ts";
import { decodeSnapshotSync, type SnapshotRecord } from "./snapshot.ts";
import { StateStore } from "./store.ts";

const q = { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: true, requireConsistent: false };
const bytes = (s: string) => new TextEncoder().encode(s);

async function seeded(): Promise<DevServer> {
  const d = await createDevServer({ clock: new SimClock(), rng: new Rng(3) });
  const h = d.server.handlers;
  for (let i = 0; i < 4; i++) {
    await h["Catalog.Register"]({
      node: `n${i}`, address: `10.0.0.${i}`, nodeMeta: { rack: `r${i % 2}` }, taggedAddresses: { wan: `1.2.3.${i}` },
      service: { service: i % 2 ? "web" : "db", id: `s${i}`, tags: ["v1", `t${i}`], port: 8000 + i, meta: { m: "1" }, weights: { passing: 2, warning: 1 } },
      checks: [{ name: "serfHealth", checkId: "serfHealth", status: "passing" }, { name: "c", checkId: `c${i}`, status: i === 3 ? "critical" : "passing", serviceId: `s${i}`, definition: { http: "http://x", intervalMs: 1000 } }],
    });
  }
  const { id: session } = await h["Session.Apply"]({ op: "create", session: { node: "n1", name: "lock", ttl: "30s", behavior: "release" } });
  for (let i = 0; i < 30; i++) await h["KVS.Apply"]({ op: "set", entry: { key: `app/${i % 5}/k${i}`, value: bytes(`v${i}`), flags: i } });
  await h["KVS.Apply"]({ op: "lock", entry: { key: "app/lock", value: bytes("held"), session } });
  await h["KVS.Apply"]({ op: "delete-tree", entry: { key: "app/4/" } });
  await h["PreparedQuery.Apply"]({
    op: "create",
    query: {
      id: "", name: "web-q", session: "", token: "", template: { type: "", regexp: "", removeEmptyTags: false }, dns: { ttl: "5s" },
      service: { service: "web", failover: { nearestN: 1, datacenters: [] }, ignoreCheckIds: [], onlyPassing: true, near: "", tags: ["v1"], nodeMeta: {}, serviceMeta: {}, connect: false },
    },
  });
  await h["PreparedQuery.Apply"]({
    op: "create",
    query: {
      id: "", name: "tpl-", session: "", token: "", template: { type: "name_prefix_match", regexp: "^tpl-(.*)$", removeEmptyTags: true }, dns: { ttl: "" },
      service: { service: "${match(1)}", failover: { nearestN: 0, datacenters: [] }, ignoreCheckIds: [], onlyPassing: false, near: "", tags: [], nodeMeta: {}, serviceMeta: {}, connect: false },
    },
  });
  return d;
}

const encoder = new Encoder({ ignoreUndefined: true });

function frame(record: unknown): Uint8Array {
  const body = encoder.encode(record);
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length);
  out.set(body, 4);
  return out;
}

/** The snapshot with one record changed (rows with odd fields, a renamed table, a bent header or index). */
function damageRecord(rng: Rng, records: SnapshotRecord[]): Uint8Array {
  const out = records.map((r) => structuredClone(r) as SnapshotRecord & Record<string, unknown>);
  const i = rng.int(out.length);
  const r = out[i]!;
  if (r.t === "rows" && r.rows.length > 0 && rng.chance(0.8)) {
    const k = rng.int(r.rows.length);
    r.rows[k] = rng.chance(0.7) ? mutateLeaves(rng, r.rows[k]) : mutateValue(rng, r.rows[k]);
    if (rng.chance(0.1)) r.rows.push(structuredClone(r.rows[k])); // a duplicate key
  } else if (rng.chance(0.2)) {
    out.splice(i, 1); // a record missing
  } else if (rng.chance(0.2)) {
    out.splice(i, 0, structuredClone(r)); // a record twice
  } else {
    out[i] = mutateLeaves(rng, r) as SnapshotRecord & Record<string, unknown>;
  }
  return concatBytes(out.map(frame));
}

/** Every read a server makes of a store, and a snapshot round trip; throws on the first failure. */
function exercise(s: StateStore): string {
  s.kvsList("");
  s.kvsListKeys("", "/");
  s.kvsGet("app/lock");
  for (const t of tableList(s.tables)) t.all();
  const again = StateStore.restoreSync(concatBytes(s.snapshot()));
  const dump = (x: StateStore) => JSON.stringify(tableList(x.tables).map((t) => [t.name, t.all()]), (_k, v: unknown) => (v instanceof Uint8Array ? [...v] : v));
  assert.equal(dump(again), dump(s), "a restored store snapshots and restores to the same content");
  return dump(s);
}

test("state snapshot fuzz: damaged streams restore to a working store or are refused with CorruptionError", async () => {
  const d = await seeded();
  const good = concatBytes(d.fsm.state.snapshot());
  const records = [...decodeSnapshotSync(good)];
  assert.ok(records.filter((r) => r.t === "rows").length >= 6, "every table has rows");
  await d.stop();
  let refused = 0;
  let restored = 0;
  for (const seed of fuzzSeeds(8)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 150; i++) {
      const input = rng.chance(0.5) ? mutateBytes(rng, good, { corpus: [good] }) : damageRecord(rng, records);
      const what = replayHint(seed, i);
      let s: StateStore;
      try {
        s = rng.chance(0.5) ? StateStore.restoreSync(input) : await StateStore.restore(chunks(rng, input));
      } catch (err) {
        assert.ok(err instanceof CorruptionError, `${what}: restore failed with ${err instanceof Error ? err.stack : String(err)}`);
        refused++;
        continue;
      }
      restored++;
      try {
        exercise(s);
      } catch (err) {
        assert.fail(`${what}: a restored store does not work: ${err instanceof Error ? err.stack : String(err)}`);
      }
    }
  }
  assert.ok(refused > 0 && restored > 0, `refused ${refused}, restored ${restored}`);
});

function chunks(rng: Rng, b: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let off = 0; off < b.length; ) {
    const n = 1 + rng.int(600);
    out.push(b.subarray(off, off + n));
    off += n;
  }
  return out;
}

test("Snapshot.Restore fuzz: an archive around damaged state is refused or restored, and every read still works", { timeout: 60_000 }, async () => {
  const d = await seeded();
  const good = concatBytes(d.fsm.state.snapshot());
  const records = [...decodeSnapshotSync(good)];
  const h = d.server.handlers;
  const reads: [string, () => Promise<unknown>][] = [
    ["Catalog.ListNodes", () => h["Catalog.ListNodes"]({ query: q })],
    ["Catalog.ListServices", () => h["Catalog.ListServices"]({ query: q, filter: "ServiceTags contains v1" })],
    ["Catalog.ServiceNodes", () => h["Catalog.ServiceNodes"]({ query: q, serviceName: "web", serviceTags: ["v1"] })],
    ["Catalog.NodeServices", () => h["Catalog.NodeServices"]({ query: q, node: "n1" })],
    ["Health.ServiceNodes", () => h["Health.ServiceNodes"]({ query: q, serviceName: "web", passingOnly: true })],
    ["Health.ChecksInState", () => h["Health.ChecksInState"]({ query: q, state: "any" })],
    ["Health.NodeChecks", () => h["Health.NodeChecks"]({ query: q, node: "n1" })],
    ["Session.List", () => h["Session.List"]({ query: q })],
    ["Session.NodeSessions", () => h["Session.NodeSessions"]({ query: q, node: "n1" })],
    ["KVS.List", () => h["KVS.List"]({ prefix: "", query: q })],
    ["KVS.ListKeys", () => h["KVS.ListKeys"]({ prefix: "app/", separator: "/", query: q })],
    ["Txn.Apply", () => h["Txn.Apply"]({ ops: [{ kv: { verb: "get-tree", key: "app/" } }], query: q })],
    ["PreparedQuery.List", () => h["PreparedQuery.List"]({ query: q })],
    ["PreparedQuery.Execute", () => h["PreparedQuery.Execute"]({ queryIdOrName: "web-q", agent: { node: "n1", datacenter: "dc1" }, query: q })],
    ["PreparedQuery.Execute (template)", () => h["PreparedQuery.Execute"]({ queryIdOrName: "tpl-web", agent: { node: "n1", datacenter: "dc1" }, query: q })],
    ["Snapshot.Save", () => h["Snapshot.Save"]({ allowStale: true })],
    ["KVS.Apply", () => h["KVS.Apply"]({ op: "set", entry: { key: "after", value: bytes("x") } })],
    ["Catalog.Register", () => h["Catalog.Register"]({ node: "n1", address: "10.0.0.1", service: { service: "web", id: "s1", port: 1 } })],
  ];
  try {
    for (const seed of fuzzSeeds(2)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 30; i++) {
        const state = rng.chance(0.3) ? mutateBytes(rng, good) : damageRecord(rng, records);
        const archive = await writeSnapshotArchive(state, { index: 10, nowMs: 1_700_000_000_000 });
        const what = replayHint(seed, i);
        try {
          await h["Snapshot.Restore"]({ archive });
        } catch (err) {
          assert.ok(err instanceof CairnError && err.code === "bad_request", `${what}: the restore failed with ${err instanceof Error ? err.stack : String(err)}`);
          continue;
        }
        assert.equal(d.raft.failure, undefined, `${what}: the Raft node halted`);
        for (const [name, call] of reads) {
          try {
            await call();
          } catch (err) {
            assert.ok(err instanceof CairnError, `${what}: after the restore ${name} failed with ${err instanceof Error ? err.stack : errorMessage(err)}`);
          }
        }
      }
    }
  } finally {
    await d.stop();
  }
});
