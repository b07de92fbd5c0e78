import { test } from "node:test";
import assert from "node:assert/strict";
import { encode } from "@msgpack/msgpack";
import { Rng, seeds } from "../sim/rng.ts";
import { encodeFrame, encodeFrameHeadForBin, encodeFrameWithBin, FrameDecoder, FrameKind, validateFrame } from "./frame.ts";
import type { Frame } from "./frame.ts";
import { fromWireError, toWireError } from "./wire_error.ts";
import { NotLeaderError, RpcError } from "../errors.ts";

function raw(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + body.length);
  new DataView(out.buffer).setUint32(0, body.length, false);
  out.set(body, 4);
  return out;
}

test("frames round trip, whole or split at every byte", () => {
  const frames: Frame[] = [
    { t: FrameKind.Request, id: 1, method: "KVS.Get", body: { key: "a", n: 3, bin: new Uint8Array([1, 2]) } },
    { t: FrameKind.Response, id: 1, body: { ok: true } },
    { t: FrameKind.Response, id: 2, error: { code: "not_leader", message: "Not the leader", leader: "10.0.0.1:8300" } },
    { t: FrameKind.OneWay, method: "Raft.Message", body: [1, "x"] },
  ];
  const bytes = frames.map(encodeFrame);
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of bytes) {
    all.set(b, at);
    at += b.length;
  }
  const whole = new FrameDecoder().push(all);
  assert.equal(whole.error, undefined);
  assert.deepEqual(whole.frames, frames);
  for (let cut = 0; cut <= all.length; cut++) {
    const d = new FrameDecoder();
    const a = d.push(all.subarray(0, cut));
    const b = d.push(all.subarray(cut));
    assert.deepEqual([...a.frames, ...b.frames], frames, `cut at ${cut}`);
    assert.equal(d.bufferedBytes, 0);
  }
});

test("undefined fields are left out, not sent as nil", () => {
  const d = new FrameDecoder();
  const { frames } = d.push(encodeFrame({ t: FrameKind.Request, id: 7, method: "m", body: { a: 1, b: undefined } }));
  assert.deepEqual(frames[0], { t: FrameKind.Request, id: 7, method: "m", body: { a: 1 } });
  assert.equal(Object.hasOwn((frames[0] as { body: object }).body, "b"), false);
});

test("an oversized length is refused before its body arrives", () => {
  const d = new FrameDecoder({ maxFrameBytes: 100 });
  const header = new Uint8Array([0, 0, 0, 101]);
  const r = d.push(header);
  assert.equal(r.error?.reason, "too_large");
  // The decoder stays failed.
  assert.equal(d.push(encodeFrame({ t: FrameKind.OneWay, method: "x", body: 1 })).error?.reason, "too_large");
});

test("garbage, empty frames and wrong shapes are errors, never throws", () => {
  assert.equal(new FrameDecoder().push(raw(new Uint8Array([0xc1]))).error?.reason, "bad_msgpack");
  assert.equal(new FrameDecoder().push(new Uint8Array([0, 0, 0, 0])).error?.reason, "empty");
  assert.equal(new FrameDecoder().push(raw(encode([1, 2, 3]))).error?.reason, "bad_frame");
  assert.equal(new FrameDecoder().push(raw(encode({ t: 9, id: 1 }))).error?.reason, "bad_frame");
  assert.equal(new FrameDecoder().push(raw(encode({ t: 0, id: -1, method: "x" }))).error?.reason, "bad_frame");
  assert.equal(new FrameDecoder().push(raw(encode({ t: 1, id: 1, error: { code: 5 } }))).error?.reason, "bad_frame");
  assert.equal(validateFrame(null), undefined);
  assert.equal(validateFrame({ t: 2, method: 5 }), undefined);
  // Frames before the bad one are still returned.
  const good = encodeFrame({ t: FrameKind.OneWay, method: "ok", body: null });
  const both = new Uint8Array([...good, 0, 0, 0, 1, 0xc1]);
  const r = new FrameDecoder().push(both);
  assert.equal(r.frames.length, 1);
  assert.equal(r.error?.reason, "bad_msgpack");
});

test("random bytes never throw out of the decoder", () => {
  for (const seed of seeds(20)) {
    const rng = new Rng(seed);
    const d = new FrameDecoder({ maxFrameBytes: 1 << 16 });
    for (let i = 0; i < 50; i++) {
      const chunk = new Uint8Array(rng.int(64)).map(() => rng.int(256));
      if (rng.chance(0.5) && chunk.length >= 4) chunk.set([0, 0, 0, rng.int(60)], 0);
      assert.doesNotThrow(() => d.push(chunk), `seed ${seed}`);
    }
  }
});

test("wire errors keep the classes callers act on", () => {
  const e = fromWireError(toWireError(new NotLeaderError("10.0.0.2:8300")));
  assert.ok(e instanceof NotLeaderError);
  assert.equal(e.leader, "10.0.0.2:8300");
  const other = fromWireError(toWireError(new Error("boom")));
  assert.ok(other instanceof RpcError);
  assert.equal(other.remoteCode, "internal");
  assert.equal(other.message, "boom");
});

test("a frame encoded with its last byte array filled in place decodes as the plain frame", () => {
  for (const n of [0, 1, 255, 256, 70_000]) {
    const chunk = new Uint8Array(n).map((_, i) => (i * 7 + n) & 0xff);
    const body = { type: "snapshot", term: 3, meta: { index: 9 }, offset: 12, done: false, chunk: new Uint8Array(0) };
    const { frame, bin } = encodeFrameWithBin({ t: FrameKind.OneWay, method: "Raft.Message", body }, n);
    assert.equal(bin.length, n);
    bin.set(chunk);
    const { frames, error } = new FrameDecoder().push(frame);
    assert.equal(error, undefined);
    assert.equal(frames.length, 1);
    assert.deepEqual(frames[0], { t: FrameKind.OneWay, method: "Raft.Message", body: { ...body, chunk } });
  }
  // The placeholder must be what the body ends with.
  assert.throws(() => encodeFrameHeadForBin({ t: FrameKind.OneWay, method: "m", body: { chunk: new Uint8Array(0), done: true } }, 4), TypeError);
  assert.throws(() => encodeFrameWithBin({ t: FrameKind.OneWay, method: "m", body: { chunk: new Uint8Array(0), done: true } }, 4), TypeError);
});

test("a frame sent as its head and then its last byte array's bytes, in parts, decodes as the plain frame", () => {
  for (const n of [0, 1, 70_000]) {
    const chunk = new Uint8Array(n).map((_, i) => (i * 11 + n) & 0xff);
    const body = { type: "prefetch", term: 3, id: "r1", offset: 4_000_000_000, chunk: new Uint8Array(0) };
    const head = encodeFrameHeadForBin({ t: FrameKind.OneWay, method: "Raft.Message", body }, n);
    const decoder = new FrameDecoder();
    const got = [head, chunk.subarray(0, n >> 1), chunk.subarray(n >> 1)].flatMap((p) => {
      const { frames, error } = decoder.push(p);
      assert.equal(error, undefined);
      return frames;
    });
    assert.deepEqual(got, [{ t: FrameKind.OneWay, method: "Raft.Message", body: { ...body, chunk } }]);
  }
});
