import assert from "node:assert/strict";
import { test } from "node:test";
import { byteLength, pieces } from "../bytes.ts";
import type { Rpc } from "../rpc/mod.ts";
import { snapshotChunkBytes } from "../server/snapshot.ts";
import { firstRestorePieceBytes, snapshotHandler } from "./snapshot.ts";
import { makeRequest } from "./types.ts";

async function* chunksOf(total: number, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < total; at += size) yield new Uint8Array(Math.min(size, total - at)).fill(at / size);
}

test("pieces: the first piece of its own size, then `size` each, the last shorter; cut chunks are views", async () => {
  const source = [new Uint8Array(5), new Uint8Array(7), new Uint8Array(9)];
  const got: Uint8Array[][] = [];
  for await (const p of pieces((async function* () { yield* source; })(), 8, 3)) got.push(p);
  assert.deepEqual(got.map(byteLength), [3, 8, 8, 2]);
  assert.equal(got[0]![0]!.buffer, source[0]!.buffer, "a view, not a copy");
  assert.deepEqual(got[1]!.map((c) => c.length), [2, 6]);
  const plain: number[] = [];
  for await (const p of pieces((async function* () { yield* source; })(), 8)) plain.push(byteLength(p));
  assert.deepEqual(plain, [8, 8, 5]);
});

test("PUT /v1/snapshot pushes a small first piece, then snapshotChunkBytes at a time, then done", async () => {
  const calls: { offset: number; bytes: number; done: boolean }[] = [];
  const rpc = {
    call: async (_method: string, args: { archive: Uint8Array | Uint8Array[]; offset: number; done: boolean }) => {
      calls.push({ offset: args.offset, bytes: byteLength(Array.isArray(args.archive) ? args.archive : [args.archive]), done: args.done });
      return { index: 7, streamId: "s1", server: "127.0.0.1:8300" };
    },
  } as unknown as Rpc;
  const total = firstRestorePieceBytes + snapshotChunkBytes + 1000;
  const req = { ...makeRequest("PUT", "/v1/snapshot"), bodyStream: chunksOf(total, 64 * 1024) };
  const res = await snapshotHandler({ rpc })(req);
  assert.equal(res.status, 200);
  assert.deepEqual(calls, [
    { offset: 0, bytes: firstRestorePieceBytes, done: false },
    { offset: firstRestorePieceBytes, bytes: snapshotChunkBytes, done: false },
    { offset: firstRestorePieceBytes + snapshotChunkBytes, bytes: 1000, done: false },
    { offset: total, bytes: 0, done: true },
  ]);
});
