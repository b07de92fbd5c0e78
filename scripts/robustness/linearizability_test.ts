import { test } from "node:test";
import assert from "node:assert/strict";
import type { KvInput, KvOperation, KvOutput } from "./history.ts";
import { checkOperations, kvModel, lostAcknowledgedWrites } from "./linearizability.ts";

// Builders: client, call, return, then the operation. An Infinity return means
// the outcome is unknown and the output is left undefined.

function finish(clientId: number, call: number, ret: number, input: KvInput, output: KvOutput): KvOperation {
  return { clientId, input, call, return: ret, output: ret === Infinity ? undefined : output };
}

function read(c: number, call: number, ret: number, key: string, value: string | null): KvOperation {
  return finish(c, call, ret, { op: "read", key }, { value });
}

function write(c: number, call: number, ret: number, key: string, value: string, ok = true): KvOperation {
  return finish(c, call, ret, { op: "write", key, value }, { ok });
}

function cas(c: number, call: number, ret: number, key: string, expect: string | null, value: string, ok: boolean): KvOperation {
  return finish(c, call, ret, { op: "cas", key, expect, value }, { ok });
}

function del(c: number, call: number, ret: number, key: string): KvOperation {
  return finish(c, call, ret, { op: "delete", key }, { ok: true });
}

function check(history: KvOperation[]): string {
  return checkOperations(kvModel, history).result;
}

/** A tiny seeded generator (mulberry32) so generated histories replay exactly. */
function prng(seed: number): { float(): number; int(n: number): number } {
  let s = seed >>> 0;
  function float(): number {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  return { float, int: (n) => Math.floor(float() * n) };
}

interface GenerateOptions {
  seed: number;
  ops: number;
  keys: number;
  clients: number;
  /** share of operations whose answer is lost (timeout), of which half took effect */
  unknownRate: number;
  /** values come from a small pool instead of being unique (for the brute-force comparison) */
  valuePool?: number;
  /** share of outputs replaced by random ones (makes most histories illegal) */
  noise?: number;
}

/**
 * A history of a real linearizable register per key: each client runs one
 * operation at a time, each operation takes effect at a random point inside
 * [call, return], and outputs are computed in that order.
 */
function generateHistory(o: GenerateOptions): KvOperation[] {
  const rng = prng(o.seed);
  const freeAt = Array.from({ length: o.clients }, () => rng.int(5));
  const planned: { op: KvOperation; at: number; kind: number; applies: boolean }[] = [];
  for (let i = 0; i < o.ops; i++) {
    let c = 0;
    for (let j = 1; j < o.clients; j++) if (freeAt[j]! < freeAt[c]!) c = j;
    const call = freeAt[c]! + rng.int(4);
    const durationMs = 1 + rng.int(20);
    const isUnknown = rng.float() < o.unknownRate;
    freeAt[c] = call + durationMs + (isUnknown ? 30 : 0);
    const key = `k${rng.int(o.keys)}`;
    const op: KvOperation = { clientId: c, input: { op: "read", key }, call, return: isUnknown ? Infinity : call + durationMs, output: undefined };
    planned.push({ op, at: call + rng.float() * durationMs, kind: rng.float(), applies: !isUnknown || rng.float() < 0.5 });
  }
  const current = new Map<string, string | null>();
  const seen = new Map<string, (string | null)[]>();
  const order = planned.map((_, i) => i).sort((a, b) => planned[a]!.at - planned[b]!.at || a - b);
  for (const i of order) {
    const { op, kind, applies } = planned[i]!;
    const key = op.input.key;
    const now = current.get(key) ?? null;
    const history = seen.get(key) ?? [null];
    seen.set(key, history);
    const value = o.valuePool ? `v${rng.int(o.valuePool)}` : `v${i}`;
    const known = op.return !== Infinity;
    if (kind < 0.5) {
      op.output = known ? { value: now } : undefined;
    } else if (kind < 0.75) {
      op.input = { op: "write", key, value };
      if (applies) current.set(key, value);
      op.output = known ? { ok: true } : undefined;
    } else if (kind < 0.9) {
      const expect = rng.float() < 0.6 ? now : history[rng.int(history.length)]!;
      op.input = { op: "cas", key, expect, value };
      const ok = expect === now;
      if (ok && applies) current.set(key, value);
      op.output = known ? { ok } : undefined;
    } else {
      op.input = { op: "delete", key };
      if (applies) current.set(key, null);
      op.output = known ? { ok: true } : undefined;
    }
    if (current.get(key) !== now) history.push(current.get(key) ?? null);
    if (known && o.noise && rng.float() < o.noise) {
      op.output = "value" in op.output! ? { value: history[rng.int(history.length)]! } : { ok: rng.float() < 0.5 };
    }
  }
  return planned.map((p) => p.op);
}

/**
 * The definition, by enumeration: some order of the operations that respects
 * real time (an operation may not go after one called after it returned)
 * takes every known-outcome operation through the model; unknown ones may be
 * left out.
 */
function bruteForceLinearizable(history: KvOperation[]): boolean {
  const isUnknown = (op: KvOperation) => op.return === Infinity || op.output === undefined;
  function search(state: string | null, rest: KvOperation[]): boolean {
    if (rest.every(isUnknown)) return true;
    for (const op of rest) {
      if (rest.some((p) => p !== op && !isUnknown(p) && p.return < op.call)) continue;
      const others = rest.filter((p) => p !== op);
      for (const next of kvModel.step(state, op.input, isUnknown(op) ? undefined : op.output)) {
        if (search(next, others)) return true;
      }
    }
    return false;
  }
  return search(kvModel.init(), history);
}

test("linearizability: a sequential history is ok", () => {
  assert.equal(
    check([
      read(1, 0, 1, "k", null),
      write(1, 2, 3, "k", "a"),
      read(2, 4, 5, "k", "a"),
      cas(2, 6, 7, "k", "a", "b", true),
      read(1, 8, 9, "k", "b"),
    ]),
    "ok",
  );
});

test("linearizability: overlapping operations may take effect in either order", () => {
  const history = [
    write(1, 0, 10, "k", "a"),
    write(2, 1, 11, "k", "b"),
    read(3, 2, 12, "k", "a"), // b, then a
    read(4, 13, 14, "k", "a"),
  ];
  assert.equal(check(history), "ok");
  // The read overlapping both writes may still see nothing, or either value.
  assert.equal(check([write(1, 0, 10, "k", "a"), read(2, 1, 2, "k", null), read(3, 3, 12, "k", "a")]), "ok");
});

test("linearizability: a stale read after an acknowledged newer write is illegal", () => {
  const history = [write(1, 0, 1, "k", "a"), write(1, 2, 3, "k", "b"), read(2, 4, 5, "k", "a")];
  const r = checkOperations(kvModel, history);
  assert.equal(r.result, "illegal");
  assert.ok(r.result === "illegal");
  assert.equal(r.longestPrefix.length, 2);
  assert.match(r.explanation, /read "k" -> "a" \(does not fit that state\)/);
  assert.match(r.explanation, /ends in state "b"/);
});

test("linearizability: a write applied twice (A, then B acknowledged, then A again) is illegal", () => {
  assert.equal(
    check([
      write(1, 0, 1, "k", "A"),
      read(2, 2, 3, "k", "A"),
      write(1, 4, 5, "k", "B"),
      read(2, 6, 7, "k", "B"),
      read(3, 8, 9, "k", "A"),
    ]),
    "illegal",
  );
});

test("linearizability: a cas answered false whose value is later read is illegal", () => {
  const history = [write(1, 0, 1, "k", "a"), cas(2, 2, 3, "k", "a", "b", false), read(3, 4, 5, "k", "b")];
  assert.equal(check(history), "illegal");
  // The same cas acknowledged is fine.
  assert.equal(check([history[0]!, cas(2, 2, 3, "k", "a", "b", true), history[2]!]), "ok");
});

test("linearizability: a cas answered false while the value matched is illegal", () => {
  assert.equal(check([write(1, 0, 1, "k", "a"), cas(2, 2, 3, "k", "a", "b", false), read(3, 4, 5, "k", "a")]), "illegal");
});

test("linearizability: an unknown-outcome write whose value is later read is ok", () => {
  assert.equal(
    check([write(1, 0, 1, "k", "a"), write(2, 2, Infinity, "k", "b"), read(3, 50, 51, "k", "a"), read(3, 52, 53, "k", "b")]),
    "ok",
  );
  // But not before it was called.
  assert.equal(check([write(2, 10, Infinity, "k", "b"), read(3, 0, 1, "k", "b")]), "illegal");
  // Likewise a cas, which can only have applied while its expected value was there.
  const unknownCas = cas(2, 2, Infinity, "k", "a", "b", true);
  assert.equal(check([write(1, 0, 1, "k", "a"), unknownCas, read(3, 50, 51, "k", "b")]), "ok");
  assert.equal(check([write(1, 0, 1, "k", "a"), unknownCas, write(1, 3, 4, "k", "c"), read(3, 50, 51, "k", "b")]), "illegal");
});

test("linearizability: an unknown-outcome write that is never seen is ok", () => {
  assert.equal(
    check([write(1, 0, 1, "k", "a"), write(2, 2, Infinity, "k", "b"), read(3, 50, 51, "k", "a"), read(3, 52, 53, "k", "a")]),
    "ok",
  );
  // Nor may it be applied twice. The report shows the operations as recorded.
  const unknownWrite = write(2, 0, Infinity, "k", "b");
  const r = checkOperations(kvModel, [unknownWrite, read(3, 10, 11, "k", "b"), write(1, 12, 13, "k", "a"), read(3, 14, 15, "k", "b")]);
  assert.equal(r.result, "illegal");
  assert.ok(r.result === "illegal");
  assert.ok(r.partition.includes(unknownWrite));
  assert.ok(r.longestPrefix.includes(unknownWrite));
  assert.match(r.explanation, /client 3 \[14\.000, 15\.000\] read "k" -> "b" \(does not fit that state\)/);
});

test("linearizability: an unknown-outcome write may be what made a cas fail", () => {
  const history = [
    write(1, 0, 1, "k", "a"),
    write(2, 2, Infinity, "k", "u"),
    cas(3, 10, 11, "k", "a", "b", false),
    write(1, 12, 13, "k", "c"),
    read(3, 14, 15, "k", "c"),
  ];
  assert.equal(check(history), "ok");
  assert.equal(check(history.filter((_, i) => i !== 1)), "illegal");
});

test("linearizability: alike unknown-outcome operations may each take effect once", () => {
  const unknownDelete = (c: number, call: number) => finish(c, call, Infinity, { op: "delete", key: "k" }, { ok: true });
  const reads = [read(3, 10, 11, "k", null), write(1, 12, 13, "k", "b"), read(3, 14, 15, "k", "b"), read(3, 16, 17, "k", null)];
  const first = [write(1, 0, 1, "k", "a"), unknownDelete(2, 2)];
  assert.equal(check([...first, unknownDelete(4, 3), ...reads]), "ok");
  assert.equal(check([...first, ...reads]), "illegal");
});

test("linearizability: delete empties the key", () => {
  assert.equal(check([write(1, 0, 1, "k", "a"), del(1, 2, 3, "k"), read(2, 4, 5, "k", null)]), "ok");
  assert.equal(check([write(1, 0, 1, "k", "a"), del(1, 2, 3, "k"), read(2, 4, 5, "k", "a")]), "illegal");
  // A delete that overlaps the read may land on either side of it.
  assert.equal(check([write(1, 0, 1, "k", "a"), del(1, 2, 10, "k"), read(2, 3, 4, "k", "a"), read(2, 11, 12, "k", null)]), "ok");
  // An unknown-outcome delete may explain an absent key.
  assert.equal(check([write(1, 0, 1, "k", "a"), finish(1, 2, Infinity, { op: "delete", key: "k" }, { ok: true }), read(2, 9, 10, "k", null)]), "ok");
});

test("linearizability: keys are checked independently; one illegal key fails the whole history", () => {
  const good = [write(1, 0, 10, "x", "a"), read(2, 1, 2, "x", null), write(3, 3, 4, "y", "b"), read(1, 11, 12, "x", "a")];
  assert.equal(check(good), "ok");
  assert.equal(kvModel.partition!(good).length, 2);
  // Same times, but on key y the write returned before the read of nothing was called.
  const bad = [...good, read(2, 5, 6, "y", null)];
  const r = checkOperations(kvModel, bad);
  assert.equal(r.result, "illegal");
  assert.ok(r.result === "illegal");
  assert.deepEqual(new Set(r.partition.map((op) => op.input.key)), new Set(["y"]));
  // A read of another, never written key at the same time is fine.
  assert.equal(check([...good, read(2, 5, 6, "z", null)]), "ok");
});

test("linearizability: cas expecting null succeeds only on an absent key", () => {
  assert.equal(check([cas(1, 0, 1, "k", null, "a", true), read(2, 2, 3, "k", "a")]), "ok");
  assert.equal(check([write(1, 0, 1, "k", "a"), cas(2, 2, 3, "k", null, "b", true)]), "illegal");
  assert.equal(check([write(1, 0, 1, "k", "a"), cas(2, 2, 3, "k", null, "b", false), read(2, 4, 5, "k", "a")]), "ok");
  assert.equal(check([write(1, 0, 1, "k", "a"), del(1, 2, 3, "k"), cas(2, 4, 5, "k", null, "b", true)]), "ok");
});

test("linearizability: operations must not end before they start", () => {
  assert.throws(() => check([read(1, 5, 4, "k", null)]), RangeError);
});

test("linearizability: agrees with brute force on small random histories", () => {
  // Unique values, as in the robustness suite: the full model.
  // Values from a pool of 3: the search alone (partitioning by key assumes
  // unique values), with and without the read-only and blind hints.
  const bare = { init: kvModel.init, step: kvModel.step, hash: kvModel.hash };
  const hinted = { ...bare, isReadOnly: kvModel.isReadOnly, isBlind: kvModel.isBlind };
  const cases = [
    { name: "unique values", model: kvModel, valuePool: undefined, noise: 0.3 },
    { name: "pooled values, hints", model: hinted, valuePool: 3, noise: 0.25 },
    { name: "pooled values, no hints", model: bare, valuePool: 3, noise: 0.25 },
  ];
  for (const { name, model, valuePool, noise } of cases) {
    let legal = 0;
    for (let seed = 1; seed <= 600; seed++) {
      const history = generateHistory({ seed, ops: 7, keys: 1, clients: 3, unknownRate: 0.25, valuePool, noise });
      const expected = bruteForceLinearizable(history);
      if (expected) legal++;
      assert.equal(checkOperations(model, history).result, expected ? "ok" : "illegal", `${name}, seed ${seed}: ${JSON.stringify(history)}`);
    }
    // Both answers were exercised.
    assert.ok(legal > 90 && legal < 510, `${name}: ${legal} of 600 legal`);
  }
});

const big = { seed: 20240611, ops: 3000, keys: 5, clients: 10, unknownRate: 0.01 };

test("linearizability: a generated 3000-operation history of a linearizable register is ok", (t) => {
  const history = generateHistory(big);
  assert.equal(history.length, 3000);
  const started = performance.now();
  const r = checkOperations(kvModel, history, { timeoutMs: 10_000 });
  t.diagnostic(`checked ${history.length} operations in ${(performance.now() - started).toFixed(0)} ms`);
  assert.deepEqual(r, { result: "ok" });
});

test("linearizability: the same history with one read made stale is illegal", (t) => {
  const history = generateHistory(big);
  // A read of the value of an acknowledged write W1 although a later W2 (called
  // after W1 returned) had returned before the read was called.
  const setters = history.filter((op) => op.return !== Infinity && op.output !== undefined && "ok" in op.output && op.output.ok);
  let index = -1;
  let stale: string | undefined;
  for (const [i, r] of history.entries()) {
    if (i < history.length / 2 || r.input.op !== "read" || r.return === Infinity) continue;
    const key = r.input.key;
    for (const w2 of setters) {
      if (w2.input.key !== key || w2.return >= r.call) continue;
      const w1 = setters.find((w) => w.input.key === key && w.return < w2.call && w.input.op !== "delete");
      if (w1 !== undefined && (w1.input.op === "write" || w1.input.op === "cas")) {
        index = i;
        stale = w1.input.value;
        break;
      }
    }
    if (stale !== undefined) break;
  }
  assert.ok(index >= 0 && stale !== undefined);
  const corrupted = history.map((op, i) => (i === index ? { ...op, output: { value: stale } } : op));
  const started = performance.now();
  const result = checkOperations(kvModel, corrupted, { timeoutMs: 10_000 });
  t.diagnostic(`found the stale read in ${(performance.now() - started).toFixed(0)} ms`);
  assert.equal(result.result, "illegal");
  assert.ok(result.result === "illegal");
  assert.ok(result.partition.includes(corrupted[index]!));
  assert.ok(!result.longestPrefix.includes(corrupted[index]!));
});

test("linearizability: a 1 ms budget on a big history is never illegal", () => {
  const r = checkOperations(kvModel, generateHistory({ ...big, keys: 1 }), { timeoutMs: 1 });
  assert.notEqual(r.result, "illegal");
  if (r.result === "unknown") assert.match(r.reason, /Time budget of 1 ms exceeded/);
});

test("lostAcknowledgedWrites: flags a write nothing overwrote that is missing at the end", () => {
  const lost = write(1, 0, 1, "k", "a");
  const history = [lost, read(2, 2, 3, "k", "a"), write(3, 10, 11, "j", "b")];
  assert.deepEqual(lostAcknowledgedWrites(history, new Map([["k", null], ["j", "b"]])), [lost]);
  // Reverting to an older value is a loss too.
  const older = write(1, 0, 1, "k", "a");
  const newer = write(1, 2, 3, "k", "b");
  assert.deepEqual(lostAcknowledgedWrites([older, newer], new Map([["k", "a"]])), [newer]);
});

test("lostAcknowledgedWrites: does not flag a write that a later or concurrent one replaced", () => {
  const history = [
    write(1, 0, 1, "k", "a"),
    write(2, 2, 3, "k", "b"), // replaced by c
    cas(1, 4, 20, "k", "b", "c", true),
    write(3, 5, 6, "k", "d"), // concurrent with the cas: c may have come after it
    write(4, 30, 31, "j", "x"),
    finish(4, 32, Infinity, { op: "write", key: "j", value: "y" }, { ok: true }),
    write(5, 40, 41, "m", "p"),
    del(5, 42, 43, "m"),
    write(6, 50, 51, "n", "q"),
  ];
  const finals = new Map<string, string | null>([["k", "c"], ["j", "y"], ["m", null]]); // n not read at the end: not judged
  assert.deepEqual(lostAcknowledgedWrites(history, finals), []);
  // A failed cas cannot have replaced anything.
  const failed = [write(1, 0, 1, "k", "a"), cas(2, 2, 3, "k", "z", "b", false)];
  assert.deepEqual(lostAcknowledgedWrites(failed, new Map([["k", "b"]])), [failed[0]]);
});
