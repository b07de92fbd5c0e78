// /v1/snapshot (consul agent/snapshot_endpoint.go): GET saves the state as an
// archive (X-Consul-Index = its Raft index; `?stale` lets any server answer),
// PUT restores one sent as the body.
import type { Rpc } from "../rpc/mod.ts";
import { maxSnapshotStateBytes } from "../server/snapshot.ts";
import { parseWriteOptions } from "./blocking.ts";
import { hasFlag, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** The largest archive PUT /v1/snapshot takes: the archive is gzipped, so a restorable state always fits. */
export const snapshotMaxBodyBytes = maxSnapshotStateBytes;

/** GET (save) and PUT (restore) /v1/snapshot */
export function snapshotHandler(options: { rpc: Rpc }): Handler {
  return async (req: HttpRequest): Promise<HttpResponse> => {
    const routing = parseWriteOptions(req);
    if (req.method === "GET") {
      const r = await options.rpc.call("Snapshot.Save", { ...routing, allowStale: hasFlag(req, "stale") });
      return { status: 200, headers: { "Content-Type": "application/octet-stream", "X-Consul-Index": String(r.index) }, body: r.archive };
    }
    await options.rpc.call("Snapshot.Restore", { ...routing, archive: req.body });
    return { status: 200, headers: {}, body: "" };
  };
}
