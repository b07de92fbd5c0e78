import assert from "node:assert/strict";
import { test } from "node:test";
import { Rng, seeds } from "../sim/rng.ts";
import { SortedKeys } from "./sorted_keys.ts";

function collect(s: SortedKeys, prefix: string): string[] {
  const out: string[] = [];
  s.scan(prefix, (k) => { out.push(k); });
  return out;
}

test("sorted keys: random inserts and deletes match a sorted model, prefix scans included", () => {
  for (const seed of seeds(5)) {
    const rng = new Rng(seed);
    const s = new SortedKeys();
    const model = new Set<string>();
    for (let step = 0; step < 6_000; step++) {
      const key = `${rng.pick(["a", "b", "ab", "b/", ""])}${rng.int(2_000)}`;
      if (rng.chance(0.65)) {
        if (!model.has(key)) {
          model.add(key);
          s.insert(key);
        }
      } else {
        assert.equal(s.delete(key), model.delete(key), `seed ${seed} step ${step}`);
      }
    }
    const sorted = [...model].sort();
    assert.equal(s.size, model.size, `seed ${seed}`);
    assert.deepEqual(collect(s, ""), sorted, `seed ${seed}`);
    for (const p of ["a", "ab", "b/", "b/1", "1", "zz"]) {
      assert.deepEqual(collect(s, p), sorted.filter((k) => k.startsWith(p)), `seed ${seed} prefix ${p}`);
    }
    const loaded = new SortedKeys();
    loaded.load(rng.shuffle([...model]));
    assert.deepEqual(collect(loaded, "b"), sorted.filter((k) => k.startsWith("b")), `seed ${seed}`);
  }
});
