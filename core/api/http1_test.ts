import assert from "node:assert/strict";
import { test } from "node:test";
import { type Http1Head, Http1ResponseParser, HttpProtocolError } from "./http1.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

interface Parsed {
  head?: Http1Head;
  body: string;
  done: boolean;
}

/** Parse `wire` fed in the given pieces, then end the connection. */
function parse(pieces: Uint8Array[], options: { end?: boolean } = {}): Parsed {
  const out: Parsed = { body: "", done: false };
  const parts: Uint8Array[] = [];
  const p = new Http1ResponseParser({
    head(h) {
      assert.equal(out.head, undefined, "one head");
      assert.equal(parts.length, 0, "the head comes before any body");
      out.head = h;
    },
    body(c) {
      assert.ok(c.length > 0, "no empty body pieces");
      parts.push(c.slice());
    },
  });
  for (const piece of pieces) p.push(piece);
  if (options.end !== false) p.end();
  out.done = p.done;
  out.body = dec.decode(Buffer.concat(parts));
  return out;
}

/** Every way to cut `bytes` in two, and byte by byte. */
function cuts(bytes: Uint8Array): Uint8Array[][] {
  const all: Uint8Array[][] = [[bytes]];
  for (let i = 1; i < bytes.length; i++) all.push([bytes.subarray(0, i), bytes.subarray(i)]);
  all.push(Array.from(bytes, (_, i) => bytes.subarray(i, i + 1)));
  return all;
}

const chunked = enc.encode(
  "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nX-Consul-Index: 42\r\nSet-Thing: a\r\nSet-Thing: b\r\nTransfer-Encoding: chunked\r\n\r\n" +
    "5\r\nhello\r\n" +
    "1;ext=1\r\n,\r\n" +
    "A \r\n0123456789\r\n" + // 10 bytes, whitespace before CRLF
    "0\r\nX-Trailer: t\r\n\r\n",
);

test("http1: a chunked answer cut at every byte gives the same head and body", () => {
  for (const pieces of cuts(chunked)) {
    const r = parse(pieces);
    assert.equal(r.head?.status, 200);
    assert.equal(r.head?.reason, "OK");
    assert.equal(r.head?.headers.get("x-consul-index"), "42");
    assert.equal(r.head?.headers.get("set-thing"), "a, b");
    assert.equal(r.body, "hello,0123456789");
    assert.ok(r.done);
  }
});

test("http1: body pieces are views of the bytes pushed, not copies", () => {
  const views: Uint8Array[] = [];
  const p = new Http1ResponseParser({ head() {}, body: (c) => views.push(c) });
  p.push(chunked);
  assert.ok(p.done);
  assert.ok(views.length >= 3);
  for (const v of views) assert.equal(v.buffer, chunked.buffer);
});

test("http1: Content-Length and read-to-close bodies, cut at every byte", () => {
  const cl = enc.encode("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 21\r\n\r\nNo path to datacenter");
  for (const pieces of cuts(cl)) {
    const r = parse(pieces);
    assert.equal(r.head?.status, 500);
    assert.equal(r.body, "No path to datacenter");
    assert.ok(r.done);
  }
  const close = enc.encode("HTTP/1.0 200 OK\nServer: old\n\nall of it");
  for (const pieces of cuts(close)) {
    const r = parse(pieces);
    assert.equal(r.head?.status, 200);
    assert.equal(r.head?.headers.get("server"), "old");
    assert.equal(r.body, "all of it");
  }
});

test("http1: 100 Continue is skipped, 204 has no body, Content-Length 0 is done at once", () => {
  const r = parse([enc.encode("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")]);
  assert.equal(r.head?.status, 200);
  assert.equal(r.body, "ok");
  const p = new Http1ResponseParser({ head() {}, body() {} });
  p.push(enc.encode("HTTP/1.1 204 No Content\r\n\r\n"));
  assert.ok(p.done);
  const z = new Http1ResponseParser({ head() {}, body() {} });
  z.push(enc.encode("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
  assert.ok(z.done);
});

function refused(wire: string, pattern: RegExp, options: { end?: boolean } = {}): void {
  const bytes = enc.encode(wire);
  for (const pieces of [[bytes], Array.from(bytes, (_, i) => bytes.subarray(i, i + 1))]) {
    assert.throws(() => parse(pieces, options), (err: unknown) => err instanceof HttpProtocolError && pattern.test(err.message), `${JSON.stringify(wire)} is refused with ${pattern}`);
  }
}

const te = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

test("http1: bad chunk sizes and framing are refused", () => {
  refused(`${te}zz\r\nab\r\n0\r\n\r\n`, /Bad chunk size/);
  refused(`${te}\r\nab\r\n0\r\n\r\n`, /Bad chunk size/);
  refused(`${te}-1\r\nab\r\n0\r\n\r\n`, /Bad chunk size/);
  refused(`${te}2x\r\nab\r\n0\r\n\r\n`, /Bad chunk size/);
  refused(`${te}10000000000000\r\n`, /too large/);
  refused(`${te}2\rab\r\n0\r\n\r\n`, /CR without LF/);
  refused(`${te}2\r\nabc\r\n0\r\n\r\n`, /not followed by CRLF/);
  refused(`${te}2\r\nab\n\n0\r\n\r\n`, /not followed by CRLF/);
  refused(`${te}${"1".padEnd(5000, " ")}\r\n`, /too long/);
  refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", /transfer coding/);
  refused("HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", /Bad Content-Length/);
  refused("SSH-2.0-OpenSSH\r\n\r\n", /not HTTP\/1/);
  refused("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", /Bad header line/);
  refused("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", /after its end/);
});

test("http1: an answer that ends early is an error, wherever it stops", () => {
  refused("", /without answering/);
  refused("HTTP/1.1 200 OK\r\nContent-Le", /middle of the answer's headers/);
  refused(`${te}5\r\nhel`, /ended early.*3 bytes of body, before its last chunk/);
  refused(`${te}5\r\nhello\r\n`, /ended early.*5 bytes of body/);
  refused(`${te}5\r\nhello\r\n0\r\n`, /ended early/);
  refused("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", /ended early.*7 of its bytes missing/);
  // Every prefix of a complete chunked answer is refused at EOF; the whole one is not.
  for (let i = 0; i < chunked.length; i++) {
    assert.throws(() => parse([chunked.subarray(0, i)]), HttpProtocolError, `cut after ${i} bytes`);
  }
  assert.ok(parse([chunked]).done);
});

test("http1: a head too large is refused", () => {
  const big = `HTTP/1.1 200 OK\r\n${"X-Pad: yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\r\n".repeat(3000)}\r\n`;
  assert.throws(() => parse([enc.encode(big)], { end: false }), /too long/);
});
