// Every /v1 route in one table (consul agent/http_register.go): pattern,
// methods, handler, body limit, and what the caller's token needs. A pattern
// ending in "/" serves every path under it (router.ts). Handlers come from
// the family files; what they need from the agent comes in as HttpBackends.
import type { NearOptions } from "../gossip/near.ts";
import { nullLogger } from "../log/mod.ts";
import { agentSelfHandler, agentVersionHandler } from "./agent.ts";
import { aclBootstrapHandler, aclCreateHandler, aclItemHandler, aclListHandler, aclReplicationHandler, agentTokenHandler } from "./acl.ts";
import {
  agentCheckDeregisterHandler,
  agentCheckRegisterHandler,
  agentChecksHandler,
  agentCheckStatusHandler,
  agentCheckUpdateHandler,
  agentHealthServiceByIdHandler,
  agentHealthServiceByNameHandler,
  agentNodeMaintenanceHandler,
  agentReloadHandler,
  agentServiceDeregisterHandler,
  agentServiceHandler,
  agentServiceMaintenanceHandler,
  agentServiceRegisterHandler,
  agentServicesHandler,
  type AgentServicesDeps,
} from "./agent_services.ts";
import { agentDebugHeapHandler, agentDebugProfileHandler, agentHostHandler, unavailableDebug } from "./agent_debug.ts";
import type { HttpBackends } from "./backends.ts";
import {
  catalogDatacentersHandler,
  catalogDeregisterHandler,
  catalogNodeHandler,
  catalogNodesHandler,
  catalogRegisterHandler,
  catalogServiceHandler,
  catalogServicesHandler,
} from "./catalog.ts";
import { coordinateDatacentersHandler, coordinateNodeHandler, coordinateNodesHandler, coordinateUpdateHandler } from "./coordinate.ts";
import { eventFireHandler, eventListHandler } from "./event.ts";
import { healthChecksHandler, healthNodeHandler, healthServiceHandler, healthStateHandler } from "./health.ts";
import { keyringHandler } from "./keyring.ts";
import { kvMaxValueBytes, kvsHandler } from "./kvs.ts";
import { forceLeaveHandler, joinHandler, leaveHandler, membersHandler } from "./members.ts";
import { metricsHandler } from "./metrics.ts";
import { monitorHandler } from "./monitor.ts";
import { operatorAutopilotConfigurationHandler, operatorAutopilotHealthHandler, operatorAutopilotStateHandler } from "./operator_autopilot.ts";
import { operatorRaftConfigurationHandler, operatorRaftPeerHandler, operatorRaftTransferLeaderHandler } from "./operator_raft.ts";
import { queryGeneralHandler, querySpecificHandler } from "./prepared_query.ts";
import { Router, type AuthzAccess, type AuthzRequirement, type AuthzResource, type RouteAuthz } from "./router.ts";
import {
  sessionCreateHandler,
  sessionDestroyHandler,
  sessionInfoHandler,
  sessionListHandler,
  sessionNodeHandler,
  sessionRenewHandler,
} from "./session.ts";
import { snapshotHandler, snapshotMaxBodyBytes } from "./snapshot.ts";
import { statusLeaderHandler, statusPeersHandler } from "./status.ts";
import { txnHandler, txnMaxRequestBytes } from "./txn.ts";
import { uiContentPath, uiHandler, uiRootMethods, uiRootRedirectHandler } from "./ui.ts";
import { uiServicesHandler } from "./ui_services.ts";
import { hasFlag, type Handler } from "./types.ts";
import { HttpError } from "./http_error.ts";
import { withMaxStale } from "./blocking.ts";

const GET = ["GET"] as const;
const PUT = ["PUT"] as const;

/** No route-level requirement: public, or the endpoint checks each item it touches. */
const none: AuthzRequirement = { resource: "none" };

/** On the whole family (or on names the endpoint finds in the body). */
function on(resource: AuthzResource, access: AuthzAccess): AuthzRequirement {
  return { resource, access };
}

/** On the resource the rest of the path names: /v1/catalog/service/<name>. */
function onPath(resource: AuthzResource, access: AuthzAccess): RouteAuthz {
  return (_req, name) => ({ resource, access, name });
}

/** KV: read a key, list a prefix (?recurse, ?keys), write or delete a key or a prefix. */
const kvAuthz: RouteAuthz = (req, key) => {
  if (req.method !== "GET") return { resource: "key", access: "write", name: key };
  return { resource: "key", access: hasFlag(req, "recurse") || hasFlag(req, "keys") ? "list" : "read", name: key };
};

/** GET reads, any other method writes. */
function readOrWrite(resource: AuthzResource): RouteAuthz {
  return (req) => ({ resource, access: req.method === "GET" ? "read" : "write" });
}

export function createRoutes(backends: HttpBackends): Router {
  const { agent, local, gossip, events, operator } = backends;
  // Every read of the servers honours ?max_stale in this one wrapper.
  const rpc = withMaxStale(backends.rpc);
  const maxValueBytes = backends.kvMaxValueBytes ?? kvMaxValueBytes;
  const txnMaxBytes = backends.txnMaxRequestBytes ?? txnMaxRequestBytes;
  const nodeName = () => agent.nodeName;
  const debug = backends.debug ?? unavailableDebug;
  const near: NearOptions = { coordinates: () => gossip.lan.coordinates(), agentNode: nodeName };
  /** translate_wan_addrs: nodes and services of another datacenter with their wan addresses. */
  const translate = { enabled: backends.translateWanAddrs === true, datacenter: agent.datacenter };
  /** disable_coordinates: Consul answers every /v1/coordinate route with 401. */
  const coordinatesOn = (h: Handler): Handler => (backends.disableCoordinates ? async () => { throw new HttpError(401, "Coordinate support disabled"); } : h);
  const own: AgentServicesDeps = { local, datacenter: agent.datacenter, reload: backends.reload, clock: backends.clock, nodeName: agent.nodeName };
  /** On this agent (consul: agent:read / agent:write on the agent's node name). */
  const onAgent = (access: AuthzAccess): AuthzRequirement => ({ resource: "agent", access, name: agent.nodeName });
  /** On this agent's node (node maintenance). */
  const onAgentNode = (access: AuthzAccess): AuthzRequirement => ({ resource: "node", access, name: agent.nodeName });
  /** ACL endpoints: the servers check acl:read / acl:write themselves (token self needs only a valid token). */
  const aclDeps = { rpc, enabled: backends.acl?.enabled === true };

  return new Router([
    // Agent: this agent, its gossip pools, its own services and checks.
    { pattern: "/v1/agent/self", methods: GET, handler: agentSelfHandler({ agent }), authz: onAgent("read") },
    { pattern: "/v1/agent/version", methods: GET, handler: agentVersionHandler({ agent }), authz: none },
    { pattern: "/v1/agent/reload", methods: PUT, handler: agentReloadHandler(own), authz: onAgent("write") },
    { pattern: "/v1/agent/monitor", methods: GET, handler: monitorHandler(backends.monitor), authz: onAgent("read") },
    { pattern: "/v1/agent/host", methods: GET, handler: agentHostHandler(debug), authz: on("operator", "read") },
    { pattern: "/v1/agent/debug/profile", methods: GET, handler: agentDebugProfileHandler(debug), authz: on("operator", "read") },
    { pattern: "/v1/agent/debug/heap", methods: GET, handler: agentDebugHeapHandler(debug), authz: on("operator", "read") },
    { pattern: "/v1/agent/metrics", methods: GET, handler: metricsHandler({ metrics: backends.metrics, prometheus: backends.prometheus }), authz: onAgent("read") },
    { pattern: "/v1/agent/members", methods: GET, handler: membersHandler({ gossip }), authz: on("node", "list") },
    { pattern: "/v1/agent/join/", methods: PUT, handler: joinHandler({ gossip }), authz: onAgent("write") },
    { pattern: "/v1/agent/leave", methods: PUT, handler: leaveHandler({ gossip, onLeave: backends.onLeave }), authz: onAgent("write") },
    { pattern: "/v1/agent/force-leave/", methods: PUT, handler: forceLeaveHandler({ gossip }), authz: on("operator", "write") },
    { pattern: "/v1/agent/maintenance", methods: PUT, handler: agentNodeMaintenanceHandler(own), authz: onAgentNode("write") },
    { pattern: "/v1/agent/services", methods: GET, handler: agentServicesHandler(own), authz: on("service", "list") },
    { pattern: "/v1/agent/service/", methods: GET, handler: agentServiceHandler(own), authz: on("service", "read") },
    { pattern: "/v1/agent/service/register", methods: PUT, handler: agentServiceRegisterHandler(own), authz: on("service", "write") },
    { pattern: "/v1/agent/service/deregister/", methods: PUT, handler: agentServiceDeregisterHandler(own), authz: on("service", "write") },
    { pattern: "/v1/agent/service/maintenance/", methods: PUT, handler: agentServiceMaintenanceHandler(own), authz: on("service", "write") },
    { pattern: "/v1/agent/checks", methods: GET, handler: agentChecksHandler(own), authz: on("node", "list") },
    { pattern: "/v1/agent/check/register", methods: PUT, handler: agentCheckRegisterHandler(own), authz: on("node", "write") },
    { pattern: "/v1/agent/check/deregister/", methods: PUT, handler: agentCheckDeregisterHandler(own), authz: on("node", "write") },
    { pattern: "/v1/agent/check/pass/", methods: PUT, handler: agentCheckStatusHandler(own, "passing"), authz: on("node", "write") },
    { pattern: "/v1/agent/check/warn/", methods: PUT, handler: agentCheckStatusHandler(own, "warning"), authz: on("node", "write") },
    { pattern: "/v1/agent/check/fail/", methods: PUT, handler: agentCheckStatusHandler(own, "critical"), authz: on("node", "write") },
    { pattern: "/v1/agent/check/update/", methods: PUT, handler: agentCheckUpdateHandler(own), authz: on("node", "write") },
    { pattern: "/v1/agent/health/service/id/", methods: GET, handler: agentHealthServiceByIdHandler(own), authz: on("service", "read") },
    { pattern: "/v1/agent/health/service/name/", methods: GET, handler: agentHealthServiceByNameHandler(own), authz: onPath("service", "read") },

    // Catalog, health, sessions.
    { pattern: "/v1/catalog/register", methods: PUT, handler: catalogRegisterHandler({ rpc }), authz: on("node", "write") },
    { pattern: "/v1/catalog/deregister", methods: PUT, handler: catalogDeregisterHandler({ rpc }), authz: on("node", "write") },
    { pattern: "/v1/catalog/datacenters", methods: GET, handler: catalogDatacentersHandler({ rpc }), authz: none },
    { pattern: "/v1/catalog/nodes", methods: GET, handler: catalogNodesHandler({ rpc, near, translate }), authz: on("node", "list") },
    { pattern: "/v1/catalog/services", methods: GET, handler: catalogServicesHandler({ rpc }), authz: on("service", "list") },
    // The web UI's services list: names, tags and instance counts in one answer (Consul's UI endpoint).
    { pattern: "/v1/internal/ui/services", methods: GET, handler: uiServicesHandler({ rpc, datacenter: agent.datacenter }), authz: on("service", "list") },
    { pattern: "/v1/catalog/service/", methods: GET, handler: catalogServiceHandler({ rpc, near, translate }), authz: onPath("service", "read") },
    { pattern: "/v1/catalog/node/", methods: GET, handler: catalogNodeHandler({ rpc, asList: false, translate }), authz: onPath("node", "read") },
    { pattern: "/v1/catalog/node-services/", methods: GET, handler: catalogNodeHandler({ rpc, asList: true, translate }), authz: onPath("node", "read") },
    { pattern: "/v1/health/node/", methods: GET, handler: healthNodeHandler({ rpc }), authz: onPath("node", "read") },
    { pattern: "/v1/health/checks/", methods: GET, handler: healthChecksHandler({ rpc }), authz: onPath("service", "read") },
    { pattern: "/v1/health/service/", methods: GET, handler: healthServiceHandler({ rpc, near, translate }), authz: onPath("service", "read") },
    { pattern: "/v1/health/state/", methods: GET, handler: healthStateHandler({ rpc }), authz: on("node", "list") },
    { pattern: "/v1/session/create", methods: PUT, handler: sessionCreateHandler({ rpc, nodeName }), authz: on("session", "write") },
    { pattern: "/v1/session/destroy/", methods: PUT, handler: sessionDestroyHandler({ rpc }), authz: on("session", "write") },
    { pattern: "/v1/session/renew/", methods: PUT, handler: sessionRenewHandler({ rpc }), authz: on("session", "write") },
    { pattern: "/v1/session/info/", methods: GET, handler: sessionInfoHandler({ rpc }), authz: on("session", "read") },
    { pattern: "/v1/session/node/", methods: GET, handler: sessionNodeHandler({ rpc }), authz: onPath("session", "read") },
    { pattern: "/v1/session/list", methods: GET, handler: sessionListHandler({ rpc }), authz: on("session", "list") },

    // Coordinates (nodes: the catalog's; datacenters: this server's WAN pool) and user events (gossip).
    { pattern: "/v1/coordinate/datacenters", methods: GET, handler: coordinatesOn(coordinateDatacentersHandler({ gossip, operator, self: { node: agent.nodeName, datacenter: agent.datacenter } })), authz: none },
    { pattern: "/v1/coordinate/nodes", methods: GET, handler: coordinatesOn(coordinateNodesHandler({ rpc })), authz: on("node", "list") },
    { pattern: "/v1/coordinate/node/", methods: GET, handler: coordinatesOn(coordinateNodeHandler({ rpc })), authz: onPath("node", "read") },
    { pattern: "/v1/coordinate/update", methods: PUT, handler: coordinatesOn(coordinateUpdateHandler({ rpc })), authz: on("node", "write") },
    { pattern: "/v1/event/fire/", methods: PUT, handler: eventFireHandler({ events, datacenter: agent.datacenter }), authz: onPath("event", "write") },
    { pattern: "/v1/event/list", methods: GET, handler: eventListHandler({ events }), authz: on("event", "list") },

    // KV and transactions.
    { pattern: "/v1/kv/", methods: ["GET", "PUT", "DELETE"], handler: kvsHandler({ rpc, maxValueBytes }), maxBodyBytes: maxValueBytes, authz: kvAuthz },
    { pattern: "/v1/txn", methods: PUT, handler: txnHandler({ rpc, maxValueBytes, maxRequestBytes: txnMaxBytes }), maxBodyBytes: txnMaxBytes, authz: none },

    // Operator.
    { pattern: "/v1/operator/raft/configuration", methods: GET, handler: operatorRaftConfigurationHandler(operator), authz: on("operator", "read") },
    { pattern: "/v1/operator/raft/peer", methods: ["DELETE"], handler: operatorRaftPeerHandler(operator), authz: on("operator", "write") },
    { pattern: "/v1/operator/raft/transfer-leader", methods: ["POST"], handler: operatorRaftTransferLeaderHandler(operator), authz: on("operator", "write") },
    { pattern: "/v1/operator/autopilot/configuration", methods: ["GET", "PUT"], handler: operatorAutopilotConfigurationHandler(operator), authz: readOrWrite("operator") },
    { pattern: "/v1/operator/autopilot/health", methods: GET, handler: operatorAutopilotHealthHandler(operator), authz: on("operator", "read") },
    { pattern: "/v1/operator/autopilot/state", methods: GET, handler: operatorAutopilotStateHandler(operator), authz: on("operator", "read") },
    { pattern: "/v1/operator/keyring", methods: ["GET", "POST", "PUT", "DELETE"], handler: keyringHandler({ keyring: gossip.keyring }), authz: readOrWrite("keyring") },

    // Prepared queries.
    // Prepared queries: the servers apply query rules as Consul does (an unnamed query is anyone's who has its
    // ID, executing needs no query rule at all), which no check of the route alone can tell.
    { pattern: "/v1/query", methods: ["GET", "POST"], handler: queryGeneralHandler({ rpc, nodeName, datacenter: agent.datacenter }), authz: none },
    { pattern: "/v1/query/", methods: ["GET", "PUT", "DELETE"], handler: querySpecificHandler({ rpc, nodeName, datacenter: agent.datacenter }), authz: none },

    // Snapshots: a management token (consul acl:write).
    { pattern: "/v1/snapshot", methods: ["GET", "PUT"], handler: snapshotHandler({ rpc }), maxBodyBytes: snapshotMaxBodyBytes, streamBody: true, authz: on("acl", "write") },

    // ACLs: the servers decide (acl:read, acl:write; bootstrap and token/self need no permission).
    { pattern: "/v1/acl/bootstrap", methods: PUT, handler: aclBootstrapHandler(aclDeps), authz: none },
    { pattern: "/v1/acl/token", methods: PUT, handler: aclCreateHandler(aclDeps, "token"), authz: none },
    { pattern: "/v1/acl/token/", methods: ["GET", "PUT", "DELETE"], handler: aclItemHandler(aclDeps, "token"), authz: none },
    { pattern: "/v1/acl/tokens", methods: GET, handler: aclListHandler(aclDeps, "token"), authz: none },
    { pattern: "/v1/acl/policy", methods: PUT, handler: aclCreateHandler(aclDeps, "policy"), authz: none },
    { pattern: "/v1/acl/policy/", methods: ["GET", "PUT", "DELETE"], handler: aclItemHandler(aclDeps, "policy"), authz: none },
    { pattern: "/v1/acl/policies", methods: GET, handler: aclListHandler(aclDeps, "policy"), authz: none },
    { pattern: "/v1/acl/role", methods: PUT, handler: aclCreateHandler(aclDeps, "role"), authz: none },
    { pattern: "/v1/acl/role/", methods: ["GET", "PUT", "DELETE"], handler: aclItemHandler(aclDeps, "role"), authz: none },
    { pattern: "/v1/acl/roles", methods: GET, handler: aclListHandler(aclDeps, "role"), authz: none },
    // Consul: no ACL needed to see replication's status.
    { pattern: "/v1/acl/replication", methods: GET, handler: aclReplicationHandler(aclDeps), authz: none },
    { pattern: "/v1/agent/token/", methods: PUT, handler: agentTokenHandler({ enabled: aclDeps.enabled, tokens: backends.acl?.tokens }), authz: on("acl", "write") },

    // Status: public.
    { pattern: "/v1/status/leader", methods: GET, handler: statusLeaderHandler({ rpc }), authz: none },
    { pattern: "/v1/status/peers", methods: GET, handler: statusPeersHandler({ rpc }), authz: none },

    // The web UI (ui_config.enabled): its files are public, its API calls carry the user's token.
    ...(backends.ui
      ? [
        { pattern: uiContentPath(backends.ui.contentPath), methods: GET, handler: uiHandler(backends.ui), authz: none },
        // "/" is the router's catch-all: its handler answers 404 to any other path, as the router would.
        { pattern: "/", methods: uiRootMethods, handler: uiRootRedirectHandler(backends.ui), authz: none },
      ]
      : []),
  ], { logger: backends.logger ?? nullLogger(), metrics: backends.metrics, authorizer: backends.authorizer, queryTimes: backends.queryTimes, discoveryMaxStaleMs: backends.discoveryMaxStaleMs, defaultAclPolicy: backends.acl?.enabled ? backends.acl.defaultPolicy : undefined, defaultToken: backends.acl?.defaultToken, audit: backends.audit });
}
