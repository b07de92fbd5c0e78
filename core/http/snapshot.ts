// /v1/snapshot (consul agent/snapshot_endpoint.go): GET saves the state as an
// archive (X-Consul-Index = its Raft index; `?stale` lets any server answer),
// PUT restores one sent as the body.
import type { Rpc } from "../rpc/mod.ts";
import { maxSnapshotStateBytes } from "../server/snapshot.ts";
import { hasFlag, type HttpRequest, type HttpResponse } from "./types.ts";
import { parseWriteOptions } from "./blocking.ts";
import type { Route } from "./routes.ts";

export function snapshotRoutes(options: { rpc: Rpc }): Route[] {
  return [{
    pattern: "/v1/snapshot",
    methods: ["GET", "PUT"],
    // The archive is gzipped: a restorable state always fits.
    maxBodyBytes: maxSnapshotStateBytes,
    handler: async (req: HttpRequest): Promise<HttpResponse> => {
      const routing = parseWriteOptions(req);
      if (req.method === "GET") {
        const r = await options.rpc.call("Snapshot.Save", { ...routing, allowStale: hasFlag(req, "stale") });
        return { status: 200, headers: { "Content-Type": "application/octet-stream", "X-Consul-Index": String(r.index) }, body: r.archive };
      }
      await options.rpc.call("Snapshot.Restore", { ...routing, archive: req.body });
      return { status: 200, headers: {}, body: "" };
    },
  }];
}
