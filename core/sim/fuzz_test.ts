import assert from "node:assert/strict";
import { test } from "node:test";
import { fuzzSeeds, mutateBytes, mutateText, mutateValue, replayHint } from "./fuzz.ts";
import { Rng } from "./rng.ts";

test("fuzzSeeds: FUZZ_SEED replays one seed, FUZZ_SEEDS sets the count", () => {
  assert.deepEqual(fuzzSeeds(3, {}), [1, 2, 3]);
  assert.deepEqual(fuzzSeeds(3, { FUZZ_SEED: "77" }), [77]);
  assert.deepEqual(fuzzSeeds(3, { FUZZ_SEEDS: "2", FUZZ_SEED_BASE: "10" }), [10, 11]);
  assert.match(replayHint(77, 4), /seed 77 iteration 4 \(replay: FUZZ_SEED=77\)/);
});

test("mutations are a function of the seed and leave the input alone", () => {
  const input = new TextEncoder().encode("a valid input, more or less");
  const run = (seed: number) => {
    const rng = new Rng(seed);
    return Array.from({ length: 50 }, () => [mutateBytes(rng, input), mutateText(rng, "text"), mutateValue(rng, { a: [1, "b"], c: input })]);
  };
  assert.deepEqual(run(5), run(5));
  assert.notDeepEqual(run(5), run(6));
  assert.equal(new TextDecoder().decode(input), "a valid input, more or less");
});
