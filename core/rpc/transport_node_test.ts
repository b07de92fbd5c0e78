import { test } from "node:test";
import assert from "node:assert/strict";
import { getEventListeners } from "node:events";
import { connect } from "node:net";
import type { Socket } from "node:net";
import { NotLeaderError, RpcError, RpcTimeoutError, TooLargeError } from "../errors.ts";
import { CaptureSink, createLogger } from "../log/logger.ts";
import type { Logger } from "../log/logger.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { until } from "../testing/until.ts";
import { encodeFrame, FrameKind, rpcProtocolV1 } from "./frame.ts";
import { createRpcServer, parseAddress, RpcClientPool, rpcHandlers, serveRpcHandlers } from "./transport_node.ts";
import type { RpcServerHandler, RpcServer } from "./transport_node.ts";
import type { Rpc, RpcHandlers } from "./methods.ts";

function logger(sink = new CaptureSink()): Logger {
  return createLogger({ sink, level: "debug" });
}

/** Poll on every event-loop turn (I/O), failing after 5 s. */
const eachTurn = { intervalMs: 0 };

async function server(handlers: Record<string, RpcServerHandler>, options: { port?: number; maxFrameBytes?: number } = {}): Promise<RpcServer> {
  return createRpcServer({ host: "127.0.0.1", port: options.port ?? 0, handlers, logger: logger(), maxFrameBytes: options.maxFrameBytes });
}

/** A raw socket to the server; resolves when the server closes it. */
function rawClient(port: number, bytes: Uint8Array): { socket: Socket; closed: Promise<void> } {
  const socket = connect({ host: "127.0.0.1", port });
  socket.on("error", () => {});
  socket.on("data", () => {});
  const closed = new Promise<void>((r) => socket.on("close", () => r()));
  socket.write(bytes);
  return { socket, closed };
}

test("parseAddress", () => {
  assert.deepEqual(parseAddress("10.0.0.1:8300"), { host: "10.0.0.1", port: 8300 });
  assert.deepEqual(parseAddress("[::1]:8300"), { host: "::1", port: 8300 });
  assert.equal(parseAddress("nohost"), undefined);
  assert.equal(parseAddress("a:0"), undefined);
  assert.equal(parseAddress("a:99999"), undefined);
});

test("rpc: many calls in flight on one connection, answered out of order", async () => {
  const waiting: { n: number; resolve: (v: unknown) => void }[] = [];
  const s = await server({
    "Test.Echo": (body) => new Promise((resolve) => waiting.push({ n: (body as { n: number }).n, resolve })),
  });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    const calls = Array.from({ length: 50 }, (_, n) => pool.call(s.address, "Test.Echo", { n }));
    await until(() => waiting.length === 50, "all 50 requests to arrive", eachTurn);
    for (const w of waiting.reverse()) w.resolve({ n: w.n, doubled: w.n * 2 });
    const replies = (await Promise.all(calls)) as { n: number; doubled: number }[];
    replies.forEach((r, n) => assert.deepEqual(r, { n, doubled: n * 2 }));
    assert.equal(s.stats.accepted, 1, "one connection carried every call");
    assert.equal(pool.size, 1);
    assert.ok(pool.stats.writes < 50, `requests were batched into ${pool.stats.writes} writes`);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: handler errors come back as the caller's error classes", async () => {
  const s = await server({
    "Test.NotLeader": () => {
      throw new NotLeaderError("10.0.0.9:8300");
    },
    "Test.Boom": async () => {
      throw new Error("boom");
    },
    "Test.Null": () => null,
  });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    await assert.rejects(pool.call(s.address, "Test.NotLeader", {}), (e: unknown) => e instanceof NotLeaderError && e.leader === "10.0.0.9:8300");
    await assert.rejects(pool.call(s.address, "Test.Boom", {}), (e: unknown) => e instanceof RpcError && e.remoteCode === "internal" && e.message === "boom");
    await assert.rejects(pool.call(s.address, "Nope.Nope", {}), (e: unknown) => e instanceof RpcError && e.remoteCode === "unknown_method");
    assert.equal(await pool.call(s.address, "Test.Null", {}), null);
    assert.equal(s.stats.unknownMethods, 1);
    assert.equal(s.stats.accepted, 1, "errors do not close the connection");
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: a call times out with RpcTimeoutError; the late reply is counted and ignored", async () => {
  let release: ((v: unknown) => void) | undefined;
  const s = await server({ "Test.Slow": () => new Promise((r) => (release = r)), "Test.Fast": () => "fast" });
  const clock = new SimClock();
  const pool = new RpcClientPool({ logger: logger(), clock });
  try {
    const call = pool.call(s.address, "Test.Slow", {}, { timeoutMs: 1_000 });
    await until(() => release !== undefined, "the request to arrive", eachTurn);
    clock.advance(999);
    clock.advance(1);
    await assert.rejects(call, (e: unknown) => e instanceof RpcTimeoutError && /Test\.Slow.*timed out after 1000 ms/.test(e.message));
    assert.equal(pool.stats.timeouts, 1);
    release!("too late");
    await until(() => pool.stats.lateResponses === 1, "the late reply", eachTurn);
    assert.equal(await pool.call(s.address, "Test.Fast", {}), "fast", "the connection still works");
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: an aborted call rejects at once", async () => {
  const s = await server({ "Test.Never": () => new Promise(() => {}) });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    const ac = new AbortController();
    const call = pool.call(s.address, "Test.Never", {}, { signal: ac.signal });
    ac.abort(new Error("stop"));
    await assert.rejects(call, /stop/);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: the pool reconnects after the server restarts", async () => {
  let s = await server({ "Test.Ping": () => "pong-1" });
  const port = s.port;
  const pool = new RpcClientPool({ logger: logger(), reconnectBackoffMs: 0 });
  try {
    assert.equal(await pool.call(s.address, "Test.Ping", {}), "pong-1");
    const address = s.address;
    await s.close();
    await until(() => pool.size === 0, "the pool to notice the closed connection", eachTurn);
    await assert.rejects(pool.call(address, "Test.Ping", {}), RpcError);
    s = await server({ "Test.Ping": () => "pong-2" }, { port });
    assert.equal(await pool.call(address, "Test.Ping", {}), "pong-2");
    assert.equal(pool.stats.connects, 2);
    assert.ok(pool.stats.connectFailures >= 1);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: calls in flight when the connection drops fail with RpcError", async () => {
  const s = await server({ "Test.Never": () => new Promise(() => {}) });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    const call = pool.call(s.address, "Test.Never", {});
    const failed = assert.rejects(call, (e: unknown) => e instanceof RpcError && /closed/.test(e.message));
    await until(() => s.stats.requests === 1, "the request to arrive", eachTurn);
    await s.close();
    await failed;
  } finally {
    pool.close();
  }
});

test("rpc: garbage bytes to the port are counted and the connection dropped; the server keeps serving", async () => {
  const sink = new CaptureSink();
  const s = await createRpcServer({ host: "127.0.0.1", port: 0, handlers: { "Test.Ping": () => "pong" }, logger: logger(sink) });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    // Not our protocol at all (an HTTP request).
    await rawClient(s.port, new TextEncoder().encode("GET / HTTP/1.1\r\n\r\n")).closed;
    assert.equal(s.stats.badProtocol, 1);
    // Our marker, then a frame that is not msgpack.
    await rawClient(s.port, new Uint8Array([rpcProtocolV1, 0, 0, 0, 2, 0xc1, 0xc1])).closed;
    // Our marker, then msgpack that is not a frame.
    await rawClient(s.port, new Uint8Array([rpcProtocolV1, 0, 0, 0, 1, 0x07])).closed;
    // A response frame sent to the server.
    await rawClient(s.port, new Uint8Array([rpcProtocolV1, ...encodeFrame({ t: FrameKind.Response, id: 1, body: 1 })])).closed;
    assert.equal(s.stats.badFrames, 3);
    assert.ok(sink.records.some((r) => r.level === "warn" && r.message.includes("bad frame")));
    assert.equal(await pool.call(s.address, "Test.Ping", {}), "pong");
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: an oversized frame is refused: the server closes that connection, the client never sends one", async () => {
  const s = await server({ "Test.Echo": (b) => b }, { maxFrameBytes: 1024 });
  const pool = new RpcClientPool({ logger: logger(), maxFrameBytes: 1024 });
  try {
    const header = new Uint8Array([rpcProtocolV1, 0x7f, 0xff, 0xff, 0xff]);
    await rawClient(s.port, header).closed;
    assert.equal(s.stats.oversizedFrames, 1);
    await assert.rejects(pool.call(s.address, "Test.Echo", new Uint8Array(2000)), TooLargeError);
    assert.deepEqual(await pool.call(s.address, "Test.Echo", new Uint8Array(10)), new Uint8Array(10));
    // A reply over the limit becomes an error reply, not a dead connection.
    const big = await server({ "Test.Big": () => new Uint8Array(5000) }, { maxFrameBytes: 1024 });
    const bigPool = new RpcClientPool({ logger: logger(), maxFrameBytes: 1024 });
    await assert.rejects(bigPool.call(big.address, "Test.Big", {}), (e: unknown) => e instanceof TooLargeError);
    bigPool.close();
    await big.close();
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: a client that never reads its replies is disconnected", async () => {
  const s = await createRpcServer({
    host: "127.0.0.1",
    port: 0,
    handlers: { "Test.Big": () => new Uint8Array(100_000) },
    logger: logger(),
    maxQueuedBytes: 1_000_000,
  });
  try {
    const requests: number[] = [rpcProtocolV1];
    for (let id = 1; id <= 100; id++) requests.push(...encodeFrame({ t: FrameKind.Request, id, method: "Test.Big", body: null }));
    const c = rawClient(s.port, new Uint8Array(requests));
    c.socket.pause();
    await c.closed;
    assert.equal(s.stats.slowConsumers, 1);
  } finally {
    await s.close();
  }
});

test("rpc: one-way messages sent in one turn share one socket write", async () => {
  const got: number[] = [];
  const s = await server({ "Test.Note": (b) => void got.push(b as number) });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    for (let i = 0; i < 200; i++) assert.ok(pool.send(s.address, "Test.Note", i));
    await until(() => got.length === 200, "200 one-way messages", eachTurn);
    assert.deepEqual(got, Array.from({ length: 200 }, (_, i) => i), "in order");
    assert.equal(pool.stats.writes, 1, "one write for the whole turn");
    assert.equal(s.stats.oneWay, 200);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: one-way sends to a dead address are dropped during the back-off, then retried", async () => {
  const s = await server({});
  const dead = s.address;
  await s.close();
  const clock = new SimClock();
  const pool = new RpcClientPool({ logger: logger(), clock, reconnectBackoffMs: 500 });
  try {
    assert.equal(pool.send(dead, "Test.Note", 1), true, "queued while connecting");
    await until(() => pool.stats.connectFailures === 1, "the connect to fail", eachTurn);
    assert.equal(pool.send(dead, "Test.Note", 2), false);
    assert.equal(pool.stats.oneWayDropped, 1);
    clock.advance(500);
    assert.equal(pool.send(dead, "Test.Note", 3), true, "tried again after the back-off");
    await until(() => pool.stats.connectFailures === 2, "the second connect to fail", eachTurn);
  } finally {
    pool.close();
  }
});

test("rpc: Family.Verb calls through rpcHandlers and remote()", async () => {
  const local: Rpc = {
    call: async (method, args) => {
      if (method === "Status.Leader") return "10.0.0.1:8300" as never;
      if (method === "Status.Peers") return [JSON.stringify(args)] as never;
      throw new Error(`unexpected ${method}`);
    },
  };
  const s = await server({});
  for (const [m, h] of rpcHandlers(local, ["Status.Leader", "Status.Peers"])) s.handle(m, h);
  const pool = new RpcClientPool({ logger: logger() });
  try {
    const remote = pool.remote(s.address);
    assert.equal(await remote.call("Status.Leader", {}), "10.0.0.1:8300");
    assert.deepEqual(await remote.call("Status.Peers", { datacenter: "dc1" }), ['{"datacenter":"dc1"}']);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: serveRpcHandlers serves a handler table; a caller's disconnect aborts the handler's signal", async () => {
  let aborted: unknown;
  let started = false;
  const table: Partial<RpcHandlers> = {
    "Status.Leader": async () => "10.0.0.7:8300",
    "Status.Peers": (_args, options) =>
      new Promise((_resolve, reject) => {
        started = true;
        options?.signal?.addEventListener("abort", () => {
          aborted = options.signal?.reason;
          reject(options.signal?.reason);
        });
      }),
  };
  const s = await createRpcServer({ host: "127.0.0.1", port: 0, handlers: serveRpcHandlers(table), logger: logger() });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    assert.equal(await pool.remote(s.address).call("Status.Leader", {}), "10.0.0.7:8300");
    const blocked = pool.call(s.address, "Status.Peers", {});
    const failed = assert.rejects(blocked, RpcError);
    await until(() => started, "the blocking handler to start", eachTurn);
    pool.closeAddress(s.address);
    await failed;
    await until(() => aborted !== undefined, "the handler's signal to abort", eachTurn);
    assert.ok(aborted instanceof RpcError);
  } finally {
    pool.close();
    await s.close();
  }
});

test("rpc: every call gets its own signal: concurrent handlers' abort listeners do not pile up on the connection, and a disconnect still aborts them", async () => {
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => {
    warnings.push(w);
  };
  process.on("warning", onWarning);
  const signals: AbortSignal[] = [];
  const release: (() => void)[] = [];
  let lateSignal: AbortSignal | undefined;
  let lateStarted = false;
  let finishLate: (() => void) | undefined;
  // Each handler listens for abort while it waits and stops listening when it
  // finishes, as blocking queries, Raft applies and read barriers do.
  const s = await server({
    "Test.Wait": (_body, ctx) =>
      new Promise<void>((resolve, reject) => {
        const signal = ctx.signal;
        const onAbort = (): void => reject(signal.reason);
        signal.addEventListener("abort", onAbort, { once: true });
        signals.push(signal);
        release.push(() => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        });
      }),
    // Reads its signal only after the connection is gone.
    "Test.Late": (_body, ctx) =>
      new Promise<void>((resolve) => {
        lateStarted = true;
        finishLate = () => {
          lateSignal = ctx.signal;
          resolve();
        };
      }),
  });
  const pool = new RpcClientPool({ logger: logger() });
  try {
    const calls = Array.from({ length: 50 }, () => pool.call(s.address, "Test.Wait", {}));
    await until(() => signals.length === 50, "all 50 handlers to start", eachTurn);
    assert.equal(s.stats.accepted, 1, "one connection carried every call");
    const most = Math.max(...signals.map((x) => getEventListeners(x, "abort").length));
    assert.equal(most, 1, `one signal carries ${most} abort listeners at once: the calls share it`);
    for (const r of release.splice(0)) r();
    await Promise.all(calls);
    for (const x of signals) assert.equal(getEventListeners(x, "abort").length, 0, "a finished call left a listener");

    // A disconnect aborts the calls still running, and only those.
    const done = signals.splice(0);
    const running = Array.from({ length: 20 }, () => pool.call(s.address, "Test.Wait", {}));
    const failed = Promise.all(running.map((c) => assert.rejects(c, RpcError)));
    const late = pool.call(s.address, "Test.Late", {});
    const lateFailed = assert.rejects(late, RpcError);
    await until(() => signals.length === 20 && lateStarted, "20 more handlers to start", eachTurn);
    pool.closeAddress(s.address);
    await failed;
    await lateFailed;
    await until(() => signals.every((x) => x.aborted), "the running calls' signals to abort", eachTurn);
    for (const x of signals) assert.ok(x.reason instanceof RpcError);
    assert.ok(done.every((x) => !x.aborted), "a finished call's signal was aborted by the disconnect");
    finishLate!();
    assert.ok(lateSignal?.aborted, "a signal first read after the disconnect is already aborted");
    assert.ok(lateSignal.reason instanceof RpcError);

    await new Promise((r) => setImmediate(r));
    const leaks = warnings.filter((w) => w.name === "MaxListenersExceededWarning");
    assert.deepEqual(leaks.map((w) => w.message), []);
  } finally {
    process.off("warning", onWarning);
    pool.close();
    await s.close();
  }
});
