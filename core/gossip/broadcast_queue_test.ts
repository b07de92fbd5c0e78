import { test } from "node:test";
import assert from "node:assert/strict";
import { BroadcastQueue, retransmitLimit } from "./broadcast_queue.ts";
import { Rng, seeds } from "../sim/rng.ts";

test("retransmitLimit: mult * ceil(log10(n + 1))", () => {
  const cases: [mult: number, n: number, want: number][] = [[4, 0, 0], [4, 1, 4], [4, 3, 4], [4, 9, 4], [4, 10, 8], [4, 99, 8], [4, 100, 12], [2, 5, 2]];
  for (const [mult, n, want] of cases) assert.equal(retransmitLimit(mult, n), want, `n=${n}`);
});

test("BroadcastQueue: fresher first, then largest that fits, then newest", () => {
  const q = new BroadcastQueue<string>();
  q.push("small-old", { sizeBytes: 10 });
  q.push("big", { sizeBytes: 100 });
  q.push("small-new", { sizeBytes: 10 });
  assert.deepEqual(q.take({ overheadBytes: 2, limitBytes: 1000, transmitLimit: 3 }), ["big", "small-new", "small-old"]);
  // Budget for only the big one plus one small one.
  assert.deepEqual(q.take({ overheadBytes: 2, limitBytes: 114, transmitLimit: 3 }), ["big", "small-new"]);
  // small-old now has fewer transmissions than the others, so it goes first.
  assert.deepEqual(q.take({ overheadBytes: 2, limitBytes: 12, transmitLimit: 3 }), ["small-old"]);
});

test("BroadcastQueue: a message is dropped after the transmit limit", () => {
  const q = new BroadcastQueue<string>();
  const id = q.push("m", { sizeBytes: 5 });
  for (let i = 0; i < 3; i++) {
    assert.ok(q.has(id));
    assert.deepEqual(q.take({ overheadBytes: 2, limitBytes: 100, transmitLimit: 3 }), ["m"]);
  }
  assert.equal(q.has(id), false);
  assert.deepEqual(q.take({ overheadBytes: 2, limitBytes: 100, transmitLimit: 3 }), []);
});

test("BroadcastQueue: same key replaces, no key never does", () => {
  const q = new BroadcastQueue<string>();
  const a = q.push("alive n1 #1", { sizeBytes: 5, key: "n1" });
  q.push("alive n1 #2", { sizeBytes: 5, key: "n1" });
  q.push("event", { sizeBytes: 5 });
  q.push("event", { sizeBytes: 5 });
  assert.equal(q.has(a), false);
  assert.equal(q.length, 3);
  const sized = q.takeSized({ overheadBytes: 2, limitBytes: 100, transmitLimit: 5 });
  assert.deepEqual(sized.msgs.sort(), ["alive n1 #2", "event", "event"]);
  assert.equal(sized.bytes, 21);
});

test("BroadcastQueue: prune drops the most transmitted first", () => {
  const q = new BroadcastQueue<string>();
  q.push("a", { sizeBytes: 5 });
  q.take({ overheadBytes: 0, limitBytes: 5, transmitLimit: 10 });
  q.push("b", { sizeBytes: 5 });
  q.push("c", { sizeBytes: 5 });
  assert.equal(q.prune(2), 1);
  assert.deepEqual(q.take({ overheadBytes: 0, limitBytes: 100, transmitLimit: 10 }).sort(), ["b", "c"]);
});

test("BroadcastQueue: random pushes, takes and prunes give what sorting the whole queue for each take gives", () => {
  // The reference is the plain reading of memberlist's order: sort a copy, fill from the front.
  interface Ref { id: number; key: string | undefined; msg: string; size: number; transmits: number }
  for (const seed of seeds(50)) {
    const rng = new Rng(seed);
    const q = new BroadcastQueue<string>();
    let ref: Ref[] = [];
    let next = 1;
    for (let step = 0; step < 400; step++) {
      const op = rng.int(10);
      if (op < 5) {
        const key = rng.int(3) === 0 ? undefined : `k${rng.int(8)}`;
        const size = 1 + rng.int(40);
        const msg = `m${next}`;
        if (key !== undefined) ref = ref.filter((r) => r.key !== key);
        ref.push({ id: next++, key, msg, size, transmits: 0 });
        q.push(msg, { sizeBytes: size, key });
      } else if (op < 9) {
        const opts = { overheadBytes: rng.int(4), limitBytes: rng.int(200), transmitLimit: 1 + rng.int(5) };
        const ordered = [...ref].sort((a, b) => a.transmits - b.transmits || b.size - a.size || b.id - a.id);
        let free = opts.limitBytes;
        const want: string[] = [];
        const done = new Set<Ref>();
        for (const r of ordered) {
          if (free - opts.overheadBytes <= 0) break;
          if (r.size + opts.overheadBytes > free) continue;
          free -= r.size + opts.overheadBytes;
          want.push(r.msg);
          r.transmits++;
          if (r.transmits >= opts.transmitLimit) done.add(r);
        }
        ref = ref.filter((r) => !done.has(r));
        const got = q.takeSized(opts);
        assert.deepEqual(got.msgs, want, `seed=${seed} step=${step}`);
        assert.equal(got.bytes, opts.limitBytes - free, `seed=${seed} step=${step}`);
      } else {
        const depth = rng.int(12);
        const excess = ref.length - depth;
        if (excess > 0) {
          const drop = new Set([...ref].sort((a, b) => b.transmits - a.transmits || a.id - b.id).slice(0, excess));
          ref = ref.filter((r) => !drop.has(r));
        }
        assert.equal(q.prune(depth), Math.max(0, excess), `seed=${seed} step=${step}`);
      }
      assert.equal(q.length, ref.length, `seed=${seed} step=${step}`);
      for (const r of ref) assert.ok(q.has(r.id), `seed=${seed} step=${step}: ${r.msg} still queued`);
    }
  }
});
