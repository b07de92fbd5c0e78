// /v1/snapshot (consul agent/snapshot_endpoint.go): GET saves the state as an
// archive (X-Consul-Index = its Raft index; `?stale` lets any server answer),
// PUT restores one sent as the body. Both stream: the archive is pulled from
// (or pushed to) the server in chunks over RPC (core/server/snapshot.ts) and
// never held whole here, so a snapshot of any size passes through.
import { byteLength, pieces } from "../bytes.ts";
import { BadRequestError } from "../errors.ts";
import type { Rpc } from "../rpc/mod.ts";
import { maxSnapshotStateBytes, snapshotChunkBytes } from "../server/snapshot.ts";
import { parseWriteOptions } from "./blocking.ts";
import { hasFlag, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** The largest archive PUT /v1/snapshot takes (streamed to the leader's disk: bounded by it, not by memory). */
export const snapshotMaxBodyBytes = maxSnapshotStateBytes;

/** The first push of an upload to the leader (the rest go snapshotChunkBytes at a time). */
export const firstRestorePieceBytes = 256 * 1024;

/** How much of a refused upload is read and dropped before answering. */
const drainLimitBytes = 1024 * 1024 * 1024;

async function drain(source: AsyncIterator<Uint8Array[]>, limit: number): Promise<void> {
  let n = 0;
  try {
    for (;;) {
      const next = await source.next();
      if (next.done) return;
      n += byteLength(next.value);
      if (n > limit) return;
    }
  } catch {
    // The client went away, or the body broke the route's limit: the answer is the error we have.
  }
}

/** GET (save) and PUT (restore) /v1/snapshot */
export function snapshotHandler(options: { rpc: Rpc }): Handler {
  const { rpc } = options;
  return async (req: HttpRequest): Promise<HttpResponse> => {
    const routing = parseWriteOptions(req);
    if (req.method === "GET") {
      const first = await rpc.call("Snapshot.Save", { ...routing, allowStale: hasFlag(req, "stale") });
      const signal = req.signal;
      async function* rest(): AsyncGenerator<Uint8Array> {
        yield first.archive;
        let done = first.done !== false;
        let offset = first.archive.length;
        while (!done) {
          if (signal?.aborted) return;
          // Pulls go to the server holding the stream (`server`), wherever they land first.
          const r = await rpc.call("Snapshot.Save", { ...routing, allowStale: true, streamId: first.streamId, server: first.server, offset }, { signal });
          if (r.offset !== undefined && r.offset !== offset) throw new Error(`Snapshot stream answered byte ${r.offset}, not ${offset}`);
          yield r.archive;
          offset += r.archive.length;
          done = r.done !== false;
        }
      }
      return {
        status: 200,
        headers: { "Content-Type": "application/octet-stream", "X-Consul-Index": String(first.index) },
        body: "",
        stream: first.streamId === undefined ? [first.archive] as unknown as AsyncIterable<Uint8Array> : rest(),
      };
    }
    const body: AsyncIterable<Uint8Array> = req.bodyStream ?? (async function* () {
      yield req.body;
    })();
    let streamId: string | undefined;
    let server: string | undefined;
    let offset = 0;
    // Iterated by hand: leaving a for-await on an error would close the upload (see drain).
    // The first piece is small: the leader starts checking, writing and
    // sending ahead as soon as it has one, not after the first 4 MiB.
    const source = pieces(body, snapshotChunkBytes, firstRestorePieceBytes)[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await source.next();
        if (next.done) break;
        const parts = next.value;
        const r = await rpc.call("Snapshot.Restore", { ...routing, archive: parts, streamId, server, offset, done: false });
        streamId = r.streamId;
        server = r.server;
        offset += byteLength(parts);
        if (streamId === undefined) throw new BadRequestError("The server does not take snapshots in chunks");
      }
      if (offset === 0) throw new BadRequestError("Invalid snapshot: the request body is empty");
      await rpc.call("Snapshot.Restore", { ...routing, archive: new Uint8Array(0), streamId, server, offset, done: true });
    } catch (err) {
      // Refused early (a bad archive shows in its first piece): read the rest
      // of the upload, within reason, so the client gets the answer rather
      // than a connection cut in the middle of its request.
      if (req.bodyStream) await drain(source, drainLimitBytes);
      throw err;
    }
    return { status: 200, headers: {}, body: "" };
  };
}
