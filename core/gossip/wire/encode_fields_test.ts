import { test } from "node:test";
import assert from "node:assert/strict";
import { Rng, seeds } from "../../sim/rng.ts";
import { encodeAlive, encodePushNodeState } from "./memberlist.ts";
import { MessageType } from "./messages.ts";
import { MpWriter } from "./msgpack_go.ts";

// encodeAlive and encodePushNodeState write their fields one by one; the reference is
// MpWriter.struct, which sorts the names and leaves empty byte fields nil, as Go's codec does.
function bytesOrNil(w: MpWriter, b: Uint8Array): void {
  if (b.length === 0) w.nil();
  else w.raw(b);
}

function randomBytes(rng: Rng, max: number): Uint8Array {
  return Uint8Array.from({ length: rng.int(max + 1) }, () => rng.int(256));
}

function randomName(rng: Rng): string {
  const chars = "abcdefghijklmnopqrstuvwxyz0123456789-.\u00e9\u4e2d";
  return Array.from({ length: rng.int(40) }, () => chars[rng.int(chars.length)]).join("");
}

test("encodeAlive and encodePushNodeState give MpWriter.struct's bytes for random fields", () => {
  for (const seed of seeds(200)) {
    const rng = new Rng(seed);
    const incarnation = [0, 1, 127, 128, 255, 65535, 65536, 2 ** 32 - 1][rng.int(8)]!;
    const a = { incarnation, node: randomName(rng), addr: randomBytes(rng, 16), port: rng.int(65536), meta: randomBytes(rng, 300), vsn: randomBytes(rng, 6) };
    const ref = new MpWriter();
    ref.byte(MessageType.alive).struct({
      Incarnation: (w) => w.int(a.incarnation),
      Node: (w) => w.str(a.node),
      Addr: (w) => bytesOrNil(w, a.addr),
      Port: (w) => w.int(a.port),
      Meta: (w) => bytesOrNil(w, a.meta),
      Vsn: (w) => bytesOrNil(w, a.vsn),
    });
    assert.deepEqual(encodeAlive(a), ref.bytes(), `alive, seed=${seed}`);
    const n = { name: a.node, addr: a.addr, port: a.port, meta: a.meta, incarnation, state: rng.int(4), vsn: a.vsn };
    const refN = new MpWriter();
    refN.struct({
      Name: (w) => w.str(n.name),
      Addr: (w) => bytesOrNil(w, n.addr),
      Port: (w) => w.int(n.port),
      Meta: (w) => bytesOrNil(w, n.meta),
      Incarnation: (w) => w.int(n.incarnation),
      State: (w) => w.int(n.state),
      Vsn: (w) => bytesOrNil(w, n.vsn),
    });
    assert.deepEqual(encodePushNodeState(n), refN.bytes(), `push node state, seed=${seed}`);
  }
});
