// The /v1/catalog, /v1/health and /v1/session routes (consul
// agent/http_register.go entries for these families), added by createRoutes.
import type { Rpc } from "../rpc/mod.ts";
import type { CoordinateSource, NearOptions } from "../gossip/near.ts";
import {
  catalogDatacentersHandler,
  catalogDeregisterHandler,
  catalogNodeHandler,
  catalogNodePrefix,
  catalogNodeServicesPrefix,
  catalogNodesHandler,
  catalogRegisterHandler,
  catalogServiceHandler,
  catalogServicePrefix,
  catalogServicesHandler,
} from "./catalog.ts";
import {
  healthChecksHandler,
  healthChecksPrefix,
  healthNodeHandler,
  healthNodePrefix,
  healthServiceHandler,
  healthServicePrefix,
  healthStateHandler,
  healthStatePrefix,
} from "./health.ts";
import type { Route } from "./routes.ts";
import {
  sessionCreateHandler,
  sessionDestroyHandler,
  sessionDestroyPrefix,
  sessionInfoHandler,
  sessionInfoPrefix,
  sessionListHandler,
  sessionNodeHandler,
  sessionNodePrefix,
  sessionRenewHandler,
  sessionRenewPrefix,
} from "./session.ts";

export function catalogRoutes(deps: { rpc: Rpc; nodeName: () => string; coordinates?: CoordinateSource }): Route[] {
  const { rpc } = deps;
  const near: NearOptions = { coordinates: deps.coordinates, agentNode: deps.nodeName };
  const get = ["GET"] as const;
  const put = ["PUT"] as const;
  return [
    { pattern: "/v1/catalog/register", methods: put, handler: catalogRegisterHandler({ rpc }) },
    { pattern: "/v1/catalog/deregister", methods: put, handler: catalogDeregisterHandler({ rpc }) },
    { pattern: "/v1/catalog/datacenters", methods: get, handler: catalogDatacentersHandler({ rpc }) },
    { pattern: "/v1/catalog/nodes", methods: get, handler: catalogNodesHandler({ rpc, near }) },
    { pattern: "/v1/catalog/services", methods: get, handler: catalogServicesHandler({ rpc }) },
    { pattern: catalogServicePrefix, methods: get, handler: catalogServiceHandler({ rpc, near }) },
    { pattern: catalogNodePrefix, methods: get, handler: catalogNodeHandler({ rpc, asList: false }) },
    { pattern: catalogNodeServicesPrefix, methods: get, handler: catalogNodeHandler({ rpc, asList: true }) },
    { pattern: healthNodePrefix, methods: get, handler: healthNodeHandler({ rpc }) },
    { pattern: healthChecksPrefix, methods: get, handler: healthChecksHandler({ rpc }) },
    { pattern: healthServicePrefix, methods: get, handler: healthServiceHandler({ rpc, near }) },
    { pattern: healthStatePrefix, methods: get, handler: healthStateHandler({ rpc }) },
    { pattern: "/v1/session/create", methods: put, handler: sessionCreateHandler({ rpc, nodeName: deps.nodeName }) },
    { pattern: sessionDestroyPrefix, methods: put, handler: sessionDestroyHandler({ rpc }) },
    { pattern: sessionRenewPrefix, methods: put, handler: sessionRenewHandler({ rpc }) },
    { pattern: sessionInfoPrefix, methods: get, handler: sessionInfoHandler({ rpc }) },
    { pattern: sessionNodePrefix, methods: get, handler: sessionNodeHandler({ rpc }) },
    { pattern: "/v1/session/list", methods: get, handler: sessionListHandler({ rpc }) },
  ];
}
