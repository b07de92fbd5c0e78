// `cairn snapshot save` against a stand-in agent that serves a known
// archive: the file is byte for byte what was sent, however the answer is
// cut; a damaged or cut-off archive is an error and leaves no file; the
// agent's error answers print as before.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo, Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { snapshotArchiveStream } from "../core/server/snapshot_archive_node.ts";
import { testIo } from "./_testing.ts";
import { runCli } from "./run.ts";

const dir = mkdtempSync(join(tmpdir(), "cairn-snapshot-save-test-"));
let archive: Buffer;
let server: Server;
let addr = "";
/** What the stand-in agent answers next. */
let answer: (res: ServerResponse) => Promise<void> | void = () => {};

before(async () => {
  // Random bytes (stored blocks) and JSON-ish text (deflated): both kinds of gzip piece.
  const text = Buffer.from(JSON.stringify(Array.from({ length: 40_000 }, (_, i) => ({ key: `app/${i}`, value: "x".repeat(i % 50) }))));
  const state = [randomBytes(2 * 1024 * 1024 + 5), text, randomBytes(777_777)];
  const parts: Uint8Array[] = [];
  for await (const c of snapshotArchiveStream(state, { index: 99, term: 3, nowMs: 1_700_000_000_000 })) parts.push(c);
  archive = Buffer.concat(parts);
  server = createServer((_req, res) => void answer(res));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  addr = `127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `bytes` chunked, cut into writes of the sizes given in turn. */
function chunked(bytes: Uint8Array, sizes: number[]) {
  return async (res: ServerResponse) => {
    res.writeHead(200, { "Content-Type": "application/octet-stream", "X-Consul-Index": "99" });
    for (let off = 0, i = 0; off < bytes.length; i++) {
      const n = Math.min(sizes[i % sizes.length]!, bytes.length - off);
      if (!res.write(bytes.subarray(off, off + n))) await new Promise((r) => res.once("drain", r));
      off += n;
    }
    res.end();
  };
}

async function save(file: string, ...flags: string[]) {
  const io = testIo({ env: { CONSUL_HTTP_ADDR: addr } });
  const code = await runCli(["snapshot", "save", ...flags, file], io);
  return { code, out: io.stdoutText, err: io.stderrText };
}

test("snapshot save: the file is the archive as sent, however the answer is cut", async () => {
  for (const sizes of [[4 * 1024 * 1024], [1, 513, 65_536, 1_000_003], [16_385]]) {
    answer = chunked(archive, sizes);
    const file = join(dir, `ok-${sizes.join("-")}.snap`);
    const r = await save(file);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out, "Saved and verified snapshot to index 99\n");
    assert.ok(readFileSync(file).equals(archive), `byte for byte (${sizes.join(",")})`);
  }
  answer = (res) => {
    res.writeHead(200, { "Content-Length": String(archive.length) });
    res.end(archive);
  };
  const file = join(dir, "ok-length.snap");
  assert.equal((await save(file)).code, 0);
  assert.ok(readFileSync(file).equals(archive));
});

test("snapshot save: a damaged or cut-off archive is an error and leaves no file", async () => {
  const flipped = Buffer.from(archive);
  flipped[flipped.length >> 1]! ^= 0x40;
  for (const [name, bytes, why] of [
    ["flipped", flipped, /^Error verifying snapshot file: /],
    ["short", archive.subarray(0, archive.length - 100), /^Error verifying snapshot file: Snapshot archive is truncated/],
  ] as const) {
    answer = chunked(bytes, [65_536]);
    const file = join(dir, `${name}.snap`);
    const r = await save(file);
    assert.equal(r.code, 1, name);
    assert.match(r.err, why);
    assert.equal(existsSync(file), false);
    assert.equal(existsSync(`${file}.tmp`), false, "the temporary file is removed");
  }
  // The connection drops in the middle of the body (no last chunk).
  answer = (res) => {
    res.writeHead(200, {});
    res.write(archive.subarray(0, 1_500_000));
    setTimeout(() => res.socket?.destroy(), 20);
  };
  const file = join(dir, "cut.snap");
  const r = await save(file);
  assert.equal(r.code, 1);
  assert.match(r.err, /^Error verifying snapshot file: The answer ended early/);
  assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith("cut")), []);
});

test("snapshot save: the agent's error answer and an unreachable agent print as before", async () => {
  answer = (res) => {
    res.writeHead(500, { "Content-Type": "text/plain; charset=utf-8" });
    res.end("No path to datacenter");
  };
  const r = await save(join(dir, "err.snap"), "-datacenter=nope");
  assert.equal(r.code, 1);
  assert.equal(r.err, "Error saving snapshot: Unexpected response code: 500 (No path to datacenter)\n");
  const refused = await save(join(dir, "err.snap"), "-http-addr=127.0.0.1:1");
  assert.equal(refused.err, 'Error saving snapshot: Cannot reach the agent at "http://127.0.0.1:1": connection refused\n');
  const badCert = await save(join(dir, "err.snap"), "-client-cert=/nonexistent.pem");
  assert.equal(badCert.err, "Error saving snapshot: -client-cert and -client-key must be given together\n");
  assert.equal(existsSync(join(dir, "err.snap")), false);
});
