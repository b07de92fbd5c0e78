// /v1/agent/self and /v1/agent/version (consul agent/agent_endpoint.go
// AgentSelf, AgentVersion). The facts come from an AgentInfo handed over when
// the routes are created.
import type { Coordinate } from "../gossip/coordinate.ts";
import { coordJson } from "./coordinate.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/** Serf member status numbers as Consul shows them (serf MemberStatus). */
export const memberStatus = { none: 0, alive: 1, leaving: 2, left: 3, failed: 4 } as const;

export interface AgentMemberInfo {
  name: string;
  addr: string;
  port: number;
  tags: Record<string, string>;
  /** 1 alive, 2 leaving, 3 left, 4 failed. */
  status: number;
}

/** What /v1/agent/self reports; functions are read on every request. */
export interface AgentInfo {
  datacenter: string;
  primaryDatacenter?: string;
  nodeName: string;
  nodeId: string;
  server: boolean;
  version: string;
  revision: string;
  buildDate?: string;
  /** LAN gossip address and port of this agent. */
  advertiseAddr: string;
  serfLanPort: number;
  /** Node meta (`-node-meta`). */
  meta?: Record<string, string>;
  /** Live member record; defaults from the fields above. */
  member?: () => AgentMemberInfo;
  /** Live stats, e.g. { raft: { state: "Leader" }, serf_lan: {...} }. */
  stats?: () => Record<string, Record<string, string>>;
  /** Extra entries for DebugConfig (ports, dirs, dev mode...). */
  debugConfig?: () => Record<string, unknown>;
  /** This agent's own LAN Vivaldi coordinate (undefined: coordinates disabled or none yet). */
  coordinate?: () => Coordinate | undefined;
}

/** Consul's BuildDate when the build did not record one (version.BuildDate's default). */
export const unknownBuildDate = "1970-01-01T00:00:01Z";

export function agentSelfJson(info: AgentInfo): Record<string, unknown> {
  const member = info.member?.() ?? {
    name: info.nodeName,
    addr: info.advertiseAddr,
    port: info.serfLanPort,
    tags: {},
    status: memberStatus.alive,
  };
  const primary = info.primaryDatacenter || info.datacenter;
  return {
    Config: {
      Datacenter: info.datacenter,
      PrimaryDatacenter: primary,
      NodeName: info.nodeName,
      NodeID: info.nodeId,
      Server: info.server,
      Revision: info.revision,
      Version: info.version,
      VersionPrerelease: "",
      VersionMetadata: "",
      BuildDate: info.buildDate ?? "",
    },
    DebugConfig: {
      Datacenter: info.datacenter,
      PrimaryDatacenter: primary,
      NodeName: info.nodeName,
      NodeID: info.nodeId,
      ServerMode: info.server,
      AdvertiseAddrLAN: info.advertiseAddr,
      SerfPortLAN: info.serfLanPort,
      Revision: info.revision,
      Version: info.version,
      ...info.debugConfig?.(),
    },
    // Consul: the agent's LAN coordinate for its segment; null with coordinates disabled.
    Coord: coordOrNull(info.coordinate?.()),
    Member: {
      Name: member.name,
      Addr: member.addr,
      Port: member.port,
      Tags: member.tags,
      Status: member.status,
      ProtocolMin: 1,
      ProtocolMax: 5,
      ProtocolCur: 2,
      DelegateMin: 2,
      DelegateMax: 5,
      DelegateCur: 4,
    },
    Stats: info.stats?.() ?? {},
    Meta: info.meta ?? {},
    xDS: null,
  };
}

function coordOrNull(c: Coordinate | undefined): Record<string, unknown> | null {
  return c ? coordJson(c) : null;
}

/** Consul's version.BuildInfo: the commit, the build date, the human version, and FIPS ("" outside a FIPS build). */
export function agentVersionJson(info: Pick<AgentInfo, "version" | "revision" | "buildDate">): Record<string, string> {
  return { SHA: info.revision, BuildDate: info.buildDate || unknownBuildDate, HumanVersion: info.version, FIPS: "" };
}

/** GET /v1/agent/version (Consul 1.13+; no ACL, as Consul's). */
export function agentVersionHandler(options: { agent: AgentInfo }): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => jsonResponse(agentVersionJson(options.agent), { pretty: wantsPretty(req) });
}

export function agentSelfHandler(options: { agent: AgentInfo }): (req: HttpRequest) => Promise<HttpResponse> {
  return async (req) => jsonResponse(agentSelfJson(options.agent), { pretty: wantsPretty(req) });
}
