import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng } from "../sim/rng.ts";
import { defaultVivaldiConfig, distanceSeconds, newCoordinate, VivaldiClient } from "./coordinate.ts";

const cfg3 = { ...defaultVivaldiConfig, dimensionality: 3 };

test("vivaldi: a node right above with a long RTT pushes the client down", () => {
  const client = new VivaldiClient(new Rng(1), cfg3);
  assert.deepEqual(client.coordinate.vec, [0, 0, 0]);
  const other = { ...newCoordinate(cfg3), vec: [0, 0, 0.001] };
  const c = client.update("node", other, 2 * 0.001 * 1000);
  assert.ok(typeof c !== "string" && c.vec[2]! < 0, `z should be < 0: ${JSON.stringify(c)}`);
});

test("vivaldi: distance of a raw coordinate is its Euclidean distance plus heights", () => {
  const cfg = { ...cfg3, heightMin: 0 };
  const a = newCoordinate(cfg);
  const b = { ...newCoordinate(cfg), vec: [0, 0, 12.345] };
  assert.equal(distanceSeconds(a, b), 12.345);
  const h = { ...newCoordinate(cfg), vec: [3, 4, 0], height: 0.5 };
  assert.equal(distanceSeconds(a, h), 5.5);
  // Adjustments apply only while the result stays positive.
  assert.equal(distanceSeconds({ ...a, adjustment: -1 }, h), 4.5);
  assert.equal(distanceSeconds({ ...a, adjustment: -10 }, h), 5.5);
});

test("vivaldi: bad observations are rejected and change nothing", () => {
  const client = new VivaldiClient(new Rng(1));
  const before = client.coordinate;
  assert.equal(typeof client.update("x", newCoordinate(cfg3), 10), "string", "dimension mismatch");
  assert.equal(typeof client.update("x", newCoordinate(), -1), "string", "negative rtt");
  assert.equal(typeof client.update("x", newCoordinate(), 10_001), "string", "rtt over 10 s");
  assert.equal(typeof client.update("x", { ...newCoordinate(), error: Number.NaN }, 10), "string", "NaN");
  assert.equal(client.coordinate, before);
});

test("vivaldi: two nodes converge to their true RTT", () => {
  for (const rttMs of [5, 50, 200]) {
    const rng = new Rng(rttMs);
    const a = new VivaldiClient(rng.fork());
    const b = new VivaldiClient(rng.fork());
    for (let i = 0; i < 200; i++) {
      const jitter = rng.range(-1, 1) * rttMs * 0.02;
      a.update("b", b.coordinate, rttMs + jitter);
      b.update("a", a.coordinate, rttMs + jitter);
    }
    const est = a.distanceTo(b.coordinate) * 1000;
    assert.ok(Math.abs(est - rttMs) < rttMs * 0.1, `rtt ${rttMs} ms estimated ${est} ms`);
    assert.ok(a.coordinate.error < 0.5, `error ${a.coordinate.error}`);
  }
});
