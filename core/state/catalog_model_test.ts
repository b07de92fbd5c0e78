// Random register/deregister sequences against the catalog: indexes never go
// backwards, a reader of one service is woken whenever its answer changes,
// and the by-name index always mirrors the services table.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, seeds } from "../sim/rng.ts";
import { checkServiceNodesTxn, deregisterTxn, registerTxn, serviceMaxIndex } from "./catalog.ts";
import { serviceNamePrefix, serviceKey } from "./catalog_schema.ts";
import { StateStore } from "./store.ts";
import { WatchSet } from "./watch.ts";

const nodes = ["n1", "n2", "n3", "N1"];
const names = ["web", "db", "cache"];
const clock = { nowMs: 0 };

function randomOp(rng: Rng, s: StateStore, idx: number): void {
  const node = rng.pick(nodes);
  const r = rng.int(10);
  s.write(idx, (tx) => {
    try {
      if (r < 4) {
        const name = rng.pick(names);
        registerTxn(tx, idx, clock, {
          node,
          address: `10.0.0.${rng.int(3)}`,
          service: { service: name, id: `${name}-${rng.int(2)}`, tags: rng.chance(0.5) ? ["a"] : [], port: rng.int(3) },
        });
      } else if (r < 7) {
        const name = rng.pick(names);
        registerTxn(tx, idx, clock, {
          node,
          address: `10.0.0.${rng.int(3)}`,
          check: { name: "c", checkId: `chk-${rng.int(3)}`, serviceId: rng.chance(0.5) ? `${name}-${rng.int(2)}` : "", status: rng.pick(["passing", "warning", "critical"] as const) },
        });
      } else if (r < 8) {
        deregisterTxn(tx, idx, clock, { node });
      } else if (r < 9) {
        const name = rng.pick(names);
        deregisterTxn(tx, idx, clock, { node, serviceId: `${name}-${rng.int(2)}` });
      } else {
        const checkId = `chk-${rng.int(3)}`;
        deregisterTxn(tx, idx, clock, { node, checkId });
      }
    } catch {
      // Refused writes (missing node or service) roll back; that is part of the model.
      throw new Refused();
    }
  });
}

class Refused extends Error {}

test("catalog model: monotonic per-service indexes, wake on every change, consistent by-name index", () => {
  for (const seed of seeds(20)) {
    const rng = new Rng(seed);
    const s = new StateStore();
    const last = new Map<string, number>();
    let tableIdx = 0;
    for (let idx = 2; idx < 300; idx++) {
      const watches = names.map((name) => {
        const ws = new WatchSet();
        let fired = false;
        const before = JSON.stringify(checkServiceNodesTxn(s, ws, { name }).value);
        ws.onFire(() => (fired = true));
        return { name, ws, before, fired: () => fired };
      });
      try {
        randomOp(rng, s, idx);
      } catch (err) {
        if (!(err instanceof Refused)) throw err;
      }
      for (const w of watches) {
        const after = checkServiceNodesTxn(s, undefined, { name: w.name });
        const changed = JSON.stringify(after.value) !== w.before;
        if (changed) assert.ok(w.fired(), `seed ${seed} idx ${idx}: ${w.name} changed but its watcher slept`);
        const prev = last.get(w.name) ?? 0;
        assert.ok(after.index >= prev, `seed ${seed} idx ${idx}: ${w.name} index went back ${prev} → ${after.index}`);
        if (changed) assert.ok(after.index > prev || prev === 0, `seed ${seed} idx ${idx}: ${w.name} changed without a new index\n${w.before}\n${JSON.stringify(after.value)}`);
        last.set(w.name, after.index);
        assert.equal(after.index, serviceMaxIndex(s, w.name));
        w.ws.cancel();
      }
      const t = s.maxIndex("nodes", "services", "checks");
      assert.ok(t >= tableIdx, `seed ${seed}: table index went back`);
      tableIdx = t;
      // The by-name index mirrors the services table; every check's node and service exist.
      const refs = new Set(s.tables.services_by_name.all().map((r) => r.key));
      const rows = s.tables.services.all();
      assert.equal(refs.size, rows.length, `seed ${seed} idx ${idx}: by-name index size`);
      for (const row of rows) assert.ok(refs.has(serviceNamePrefix(row.service) + serviceKey(row.node, row.id)), `seed ${seed}: missing index row`);
      for (const c of s.tables.checks.all()) {
        assert.ok(s.tables.nodes.get(c.node.toLowerCase()), `seed ${seed}: orphan check`);
        if (c.serviceId) assert.ok(s.tables.services.get(serviceKey(c.node, c.serviceId)), `seed ${seed}: check of a missing service`);
      }
    }
  }
});
