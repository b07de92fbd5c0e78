// Fuzz: server RPC frames. Streams of valid frames (marker, requests,
// one-way messages) are damaged (bit flips, truncation, splices, huge length
// prefixes) and re-chunked. The decoder must never throw and must read the
// same frames whatever the chunking; a real RPC server in front of the dev
// server's handlers must answer every request frame before the damage
// exactly once, with a well-formed response and never an "internal" error,
// close the connection at the damage, and keep serving other clients.
// FUZZ_SEED=n replays one seed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { connect } from "node:net";
import { nullLogger } from "../log/logger.ts";
import { fuzzSeeds, hex, mutateBytes, mutateValue, replayHint } from "../sim/fuzz.ts";
import { Rng } from "../sim/rng.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { createDevServer } from "../server/dev.ts";
import { defaultMaxFrameBytes, encodeFrame, FrameDecoder, FrameKind, rpcProtocolV1, validateFrame } from "./frame.ts";
import type { Frame, ResponseFrame } from "./frame.ts";
import { createRpcServer, RpcClientPool, serveRpcHandlers } from "./transport_node.ts";

const bytes = (s: string) => new TextEncoder().encode(s);
const q = { minQueryIndex: 0, maxQueryTimeMs: 0, allowStale: false, requireConsistent: false };

/** Requests a server sees every day, and a few one-way messages. */
const sampleFrames: Frame[] = [
  { t: FrameKind.Request, id: 1, method: "KVS.Apply", body: { op: "set", entry: { key: "a/b", value: bytes("v"), flags: 2 } } },
  { t: FrameKind.Request, id: 2, method: "KVS.Get", body: { key: "a/b", query: q } },
  { t: FrameKind.Request, id: 3, method: "KVS.List", body: { prefix: "a/", query: { ...q, allowStale: true } } },
  { t: FrameKind.Request, id: 4, method: "Catalog.Register", body: { node: "n1", address: "10.0.0.1", service: { service: "web", port: 80, tags: ["x"] } } },
  { t: FrameKind.Request, id: 5, method: "Health.ServiceNodes", body: { serviceName: "web", query: q, passingOnly: true } },
  { t: FrameKind.Request, id: 6, method: "Txn.Apply", body: { ops: [{ kv: { verb: "get", key: "a/b" } }], query: q } },
  { t: FrameKind.Request, id: 7, method: "Status.Leader", body: {} },
  { t: FrameKind.Request, id: 8, method: "No.Such", body: null },
  { t: FrameKind.OneWay, method: "Raft.Message", body: { type: "app", term: 3, entries: [{ index: 1, data: bytes("x") }] } },
  { t: FrameKind.OneWay, method: "KVS.Apply", body: { op: "delete", entry: { key: "a/b" } } },
];

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** A stream of 1-6 frames, some with mutated bodies (still valid msgpack), then byte-level damage. */
function damagedStream(rng: Rng, corpus: Uint8Array[]): Uint8Array {
  const frames: Uint8Array[] = [];
  for (let n = rng.range(1, 6); n > 0; n--) {
    const f = structuredClone(rng.pick(sampleFrames)) as Frame;
    if (f.t !== FrameKind.Response && rng.chance(0.3)) f.body = mutateValue(rng, f.body);
    if (f.t === FrameKind.Request && rng.chance(0.1)) f.id = rng.pick([0, 2 ** 32, Number.MAX_SAFE_INTEGER]);
    try {
      frames.push(encodeFrame(f));
    } catch {
      // Not encodable after mutation: leave it out.
    }
  }
  const stream = concat(frames);
  return rng.chance(0.8) ? mutateBytes(rng, stream, { corpus }) : stream;
}

/** Cut bytes into 1-5 random pieces. */
function chunks(rng: Rng, b: Uint8Array): Uint8Array[] {
  const cuts = Array.from({ length: rng.int(5) }, () => rng.int(b.length + 1)).sort((x, y) => x - y);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of [...cuts, b.length]) {
    out.push(b.subarray(from, c));
    from = c;
  }
  return out;
}

function decodeAll(pieces: Uint8Array[], maxFrameBytes = defaultMaxFrameBytes): { frames: Frame[]; error?: string } {
  const d = new FrameDecoder({ maxFrameBytes });
  const frames: Frame[] = [];
  for (const p of pieces) {
    const r = d.push(p);
    frames.push(...r.frames);
    if (r.error) return { frames, error: r.error.reason };
  }
  return { frames };
}

test("rpc fuzz: the frame decoder never throws and reads the same frames however the bytes are chunked", () => {
  const corpus = sampleFrames.map(encodeFrame);
  for (const seed of fuzzSeeds(10)) {
    const rng = new Rng(seed);
    for (let i = 0; i < 300; i++) {
      const stream = damagedStream(rng, corpus);
      const what = `${replayHint(seed, i)}: ${hex(stream)}`;
      const maxFrameBytes = rng.pick([64, 4096, defaultMaxFrameBytes]);
      let whole: ReturnType<typeof decodeAll>, split: ReturnType<typeof decodeAll>;
      try {
        whole = decodeAll([stream], maxFrameBytes);
        split = decodeAll(chunks(rng, stream), maxFrameBytes);
      } catch (err) {
        assert.fail(`${what}: the decoder threw: ${String(err)}`);
      }
      assert.deepEqual(split, whole, what);
      for (const f of whole.frames) assert.deepEqual(validateFrame(f), f, `${what}: a frame that does not validate came out`);
    }
  }
});

interface Exchange {
  responses: ResponseFrame[];
  closedByServer: boolean;
}

/**
 * Write the pieces, collect response frames until `want` have come or the
 * server closes (or, with `untilClosed`, only until it closes), then hang up.
 */
function exchange(port: number, pieces: Uint8Array[], want: number, untilClosed: boolean, what: string): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const decoder = new FrameDecoder();
    const responses: ResponseFrame[] = [];
    let done = false;
    const finish = (closedByServer: boolean): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ responses, closedByServer });
    };
    const timer = setTimeout(() => {
      done = true;
      socket.destroy();
      reject(new Error(`${what}: ${untilClosed ? "the server kept the connection open" : `${responses.length} of ${want} responses`} after 5 s`));
    }, 5_000);
    socket.on("error", () => {});
    socket.on("close", () => finish(true));
    socket.on("data", (chunk: Uint8Array) => {
      const r = decoder.push(chunk);
      for (const f of r.frames) {
        if (f.t !== FrameKind.Response) reject(new Error(`${what}: the server sent a non-response frame`));
        else responses.push(f);
      }
      if (r.error) reject(new Error(`${what}: the server sent a bad frame: ${r.error.message}`));
      if (!untilClosed && responses.length >= want && want > 0) setTimeout(() => finish(false), 20); // Any extra response would show up by then.
    });
    socket.on("connect", async () => {
      for (const p of pieces) {
        if (done) return;
        socket.write(p);
        await new Promise((r) => setImmediate(r));
      }
      // Nothing to wait for: give the server a moment to act on the bytes.
      if (!untilClosed && want === 0) setTimeout(() => finish(false), 50);
    });
  });
}

test("rpc fuzz: a real RPC server answers every request before the damage once, closes at the damage, and keeps serving", { timeout: 60_000 }, async () => {
  const clock = new SimClock();
  const d = await createDevServer({ clock, rng: new Rng(1) });
  const server = await createRpcServer({ host: "127.0.0.1", port: 0, handlers: serveRpcHandlers(d.server.handlers), logger: nullLogger() });
  // Blocking reads (a mutated minQueryIndex) wait on the sim clock: keep it moving.
  const ticker = setInterval(() => void clock.runFor(120_000), 5);
  const pool = new RpcClientPool({ logger: nullLogger() });
  const corpus = sampleFrames.map(encodeFrame);
  try {
    for (const seed of fuzzSeeds(3)) {
      const rng = new Rng(seed);
      for (let i = 0; i < 40; i++) {
        const body = damagedStream(rng, corpus);
        const marker = rng.chance(0.9) ? [rpcProtocolV1] : [rng.int(256)];
        const stream = concat([new Uint8Array(marker), body]);
        const what = `${replayHint(seed, i)}: ${hex(stream)}`;
        // What the server's decoder will see.
        const seen = marker[0] === rpcProtocolV1 ? decodeAll([body]) : { frames: [], error: "marker" };
        const stopAt = seen.frames.findIndex((f) => f.t === FrameKind.Response);
        const dispatched = stopAt < 0 ? seen.frames : seen.frames.slice(0, stopAt);
        const requests = dispatched.filter((f) => f.t === FrameKind.Request);
        const mustClose = seen.error !== undefined || stopAt >= 0;
        const r = await exchange(server.port, chunks(rng, stream), requests.length, mustClose, what);
        // Every response answers a request that was sent, at most once per request.
        const pending = requests.map((f) => f.id);
        for (const resp of r.responses) {
          const k = pending.indexOf(resp.id);
          assert.ok(k >= 0, `${what}: a response to id ${resp.id}, which was not asked (or twice)`);
          pending.splice(k, 1);
          assert.notEqual(resp.error?.code, "internal", `${what}: an internal error: ${resp.error?.message}`);
        }
        if (mustClose) assert.ok(r.closedByServer, `${what}: the server kept a connection open after ${seen.error ?? "a response frame"}`);
        else assert.equal(pending.length, 0, `${what}: requests ${pending.join(",")} were never answered`);
      }
    }
    // Still serving.
    assert.equal(await pool.call(server.address, "Status.Leader", {}), "127.0.0.1:8300");
  } finally {
    clearInterval(ticker);
    pool.close();
    await server.close();
    await d.stop();
  }
});
