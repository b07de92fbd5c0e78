// tlsFetch (the CLI's fetch through node:http/https): a ReadableStream
// request body goes out as it is read, chunked, not gathered first.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tlsFetch } from "./tls_fetch_node.ts";

test("tlsFetch: a stream body is sent while it is read (chunked), and arrives whole", { timeout: 10_000 }, async () => {
  const piece = new Uint8Array(64 * 1024).fill(7);
  let firstSeen!: () => void;
  const firstArrived = new Promise<void>((r) => (firstSeen = r));
  const received = new Promise<{ bytes: number; chunked: boolean; length: string | undefined }>((resolve) => {
    const server = createServer((req, res) => {
      let bytes = 0;
      req.on("data", (c: Buffer) => {
        if (bytes === 0) firstSeen();
        bytes += c.length;
      });
      req.on("end", () => {
        resolve({ bytes, chunked: req.headers["transfer-encoding"] === "chunked", length: req.headers["content-length"] });
        res.end("ok");
        server.close();
      });
    });
    server.listen(0, "127.0.0.1");
    server.once("listening", () => {
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          // The second half waits until the server saw the first: a fetch that read the body whole waits forever here.
          if (sent === 16) await firstArrived;
          if (sent === 32) return controller.close();
          sent++;
          controller.enqueue(piece);
        },
      });
      const port = (server.address() as AddressInfo).port;
      void tlsFetch({})(`http://127.0.0.1:${port}/upload`, { method: "PUT", body }).then((r) => r.text());
    });
  });
  const r = await received;
  assert.deepEqual(r, { bytes: 32 * piece.length, chunked: true, length: undefined });
});
