// GET /v1/internal/ui/services: the web UI's services list in one request,
// at the path Consul's UI uses (agent/ui_endpoint.go UIServices). Each
// service with its tags and its number of instances, counted by the server
// in the same scan as Catalog.ListServices (?filter, ?node-meta, ?dc and
// blocking as there; ACLs leave out what the token may not read). Of
// Consul's summary fields cairn fills Name, Datacenter, Tags and
// InstanceCount; the UI counts checks from /v1/health/state/any.
import type { Rpc } from "../rpc/mod.ts";
import { callOptions, listArgs, readResponse } from "./catalog.ts";
import type { Handler } from "./types.ts";

export interface UiServiceSummary {
  Name: string;
  Datacenter: string;
  Tags: string[];
  /** Absent when the answering server does not count (an older cairn in another datacenter). */
  InstanceCount?: number;
}

export function uiServicesHandler(options: { rpc: Rpc; datacenter: string }): Handler {
  return async (req) => {
    const reply = await options.rpc.call("Catalog.ListServices", { ...listArgs(req), withInstanceCounts: true }, callOptions(req));
    const datacenter = req.query.get("dc") || options.datacenter;
    const body: UiServiceSummary[] = Object.entries(reply.services).map(([name, tags]) => {
      const s: UiServiceSummary = { Name: name, Datacenter: datacenter, Tags: tags ?? [] };
      const n = reply.instances?.[name];
      if (n !== undefined) s.InstanceCount = n;
      return s;
    });
    return readResponse(req, reply.meta, body);
  };
}
