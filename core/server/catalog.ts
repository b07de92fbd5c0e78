// Catalog endpoints (Consul agent/consul/catalog_endpoint.go).
import { CairnError } from "../errors.ts";
import type { RpcHandlers } from "../rpc/methods.ts";
import type { ServerContext } from "./context.ts";

type CatalogMethods =
  | "Catalog.Register" | "Catalog.Deregister" | "Catalog.ListDatacenters" | "Catalog.ListNodes"
  | "Catalog.ListServices" | "Catalog.ServiceNodes" | "Catalog.NodeServices";

export function catalogEndpoints(_ctx: ServerContext): Pick<RpcHandlers, CatalogMethods> {
  const todo = () => Promise.reject(new CairnError("unimplemented", "Catalog endpoints are not implemented yet"));
  return {
    "Catalog.Register": todo,
    "Catalog.Deregister": todo,
    "Catalog.ListDatacenters": todo,
    "Catalog.ListNodes": todo,
    "Catalog.ListServices": todo,
    "Catalog.ServiceNodes": todo,
    "Catalog.NodeServices": todo,
  };
}
