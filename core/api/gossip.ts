// Gossip-related parts of the HTTP API, as consul api/agent.go (Members,
// Join, Leave, ForceLeave), api/operator_keyring.go, api/event.go and
// api/coordinate.go.
import { distanceSeconds } from "../gossip/coordinate.ts";
import type { Coordinate } from "../gossip/coordinate.ts";
import { decodeBase64, encodeBase64 } from "./base64.ts";
import type { ApiClient, QueryMeta, QueryOptions } from "./client.ts";

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(`Invalid JSON from agent for ${what}: ${text.slice(0, 200)}`);
  }
}

function list<T>(data: unknown, what: string): T[] {
  if (data === null) return [];
  if (!Array.isArray(data)) throw new TypeError(`Invalid response from agent for ${what}: expected a list`);
  return data as T[];
}

/** consul api.AgentMember. */
export interface AgentMember {
  Name: string;
  Addr: string;
  Port: number;
  Tags: Record<string, string>;
  /** 0 none, 1 alive, 2 leaving, 3 left, 4 failed. */
  Status: number;
  ProtocolMin: number;
  ProtocolMax: number;
  ProtocolCur: number;
  DelegateMin: number;
  DelegateMax: number;
  DelegateCur: number;
}

/** serf MemberStatus.String(). */
export function memberStatusName(status: number): string {
  return ["none", "alive", "leaving", "left", "failed"][status] ?? `unknown(${status})`;
}

export class AgentMembers {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async members(options: { wan?: boolean; segment?: string } = {}): Promise<AgentMember[]> {
    const r = await this.#c.request({ method: "GET", path: "/v1/agent/members", params: { wan: options.wan ? 1 : undefined, segment: options.segment } });
    return list<AgentMember>(parseJson(r.text, "agent/members"), "agent/members");
  }

  async join(addr: string, options: { wan?: boolean } = {}): Promise<void> {
    await this.#c.request({ method: "PUT", path: `/v1/agent/join/${encodeURIComponent(addr)}`, params: { wan: options.wan ? 1 : undefined } });
  }

  async leave(): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/agent/leave" });
  }

  async forceLeave(node: string, options: { prune?: boolean; wan?: boolean } = {}): Promise<void> {
    await this.#c.request({
      method: "PUT",
      path: `/v1/agent/force-leave/${encodeURIComponent(node)}`,
      params: { prune: options.prune ? 1 : undefined, wan: options.wan ? 1 : undefined },
    });
  }
}

/** consul api.KeyringResponse. */
export interface KeyringResponse {
  WAN: boolean;
  Datacenter: string;
  Segment: string;
  Messages: Record<string, string>;
  Keys: Record<string, number>;
  PrimaryKeys?: Record<string, number>;
  NumNodes: number;
}

export class OperatorKeyring {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async list(options: { localOnly?: boolean } = {}): Promise<KeyringResponse[]> {
    const r = await this.#c.request({ method: "GET", path: "/v1/operator/keyring", params: { "local-only": options.localOnly ? 1 : undefined } });
    return list<KeyringResponse>(parseJson(r.text, "operator/keyring"), "operator/keyring");
  }

  async install(key: string): Promise<void> {
    await this.#c.request({ method: "POST", path: "/v1/operator/keyring", body: JSON.stringify({ Key: key }) });
  }

  async use(key: string): Promise<void> {
    await this.#c.request({ method: "PUT", path: "/v1/operator/keyring", body: JSON.stringify({ Key: key }) });
  }

  async remove(key: string): Promise<void> {
    await this.#c.request({ method: "DELETE", path: "/v1/operator/keyring", body: JSON.stringify({ Key: key }) });
  }
}

/** consul api.UserEvent (Payload decoded from base64). */
export interface UserEvent {
  ID: string;
  Name: string;
  Payload: Uint8Array | null;
  NodeFilter: string;
  ServiceFilter: string;
  TagFilter: string;
  Version: number;
  LTime: number;
}

function toUserEvent(v: Record<string, unknown>): UserEvent {
  return {
    ID: String(v.ID ?? ""),
    Name: String(v.Name ?? ""),
    Payload: typeof v.Payload === "string" ? decodeBase64(v.Payload) ?? null : null,
    NodeFilter: String(v.NodeFilter ?? ""),
    ServiceFilter: String(v.ServiceFilter ?? ""),
    TagFilter: String(v.TagFilter ?? ""),
    Version: Number(v.Version ?? 0),
    LTime: Number(v.LTime ?? 0),
  };
}

export class Event {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async fire(params: { name: string; payload?: Uint8Array; nodeFilter?: string; serviceFilter?: string; tagFilter?: string }): Promise<UserEvent> {
    const r = await this.#c.request({
      method: "PUT",
      path: `/v1/event/fire/${encodeURIComponent(params.name)}`,
      params: { node: params.nodeFilter || undefined, service: params.serviceFilter || undefined, tag: params.tagFilter || undefined },
      body: params.payload,
    });
    const v = parseJson(r.text, "event/fire");
    if (typeof v !== "object" || v === null) throw new TypeError("Invalid response from agent for event/fire");
    return toUserEvent(v as Record<string, unknown>);
  }

  async list(name = "", q?: QueryOptions): Promise<{ events: UserEvent[]; meta: QueryMeta }> {
    const r = await this.#c.request({ method: "GET", path: "/v1/event/list", params: { name: name || undefined }, query: q });
    return { events: list<Record<string, unknown>>(parseJson(r.text, "event/list"), "event/list").map(toUserEvent), meta: r.meta };
  }
}

export { encodeBase64 };

export interface CoordinateJson {
  Vec: number[];
  Error: number;
  Adjustment: number;
  Height: number;
}

export interface CoordinateEntry {
  Node: string;
  Segment?: string;
  Coord: CoordinateJson;
}

export interface CoordinateDatacenterMap {
  Datacenter: string;
  AreaID: string;
  Coordinates: CoordinateEntry[];
}

export class Coordinates {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async nodes(q?: QueryOptions): Promise<CoordinateEntry[]> {
    const r = await this.#c.request({ method: "GET", path: "/v1/coordinate/nodes", query: q });
    return list<CoordinateEntry>(parseJson(r.text, "coordinate/nodes"), "coordinate/nodes");
  }

  async datacenters(): Promise<CoordinateDatacenterMap[]> {
    const r = await this.#c.request({ method: "GET", path: "/v1/coordinate/datacenters" });
    return list<CoordinateDatacenterMap>(parseJson(r.text, "coordinate/datacenters"), "coordinate/datacenters");
  }
}

/** Estimated round trip between two coordinates in seconds (consul lib.ComputeDistance). */
export function coordinateDistanceSeconds(a: CoordinateJson, b: CoordinateJson): number {
  const toCoord = (c: CoordinateJson): Coordinate => ({ vec: c.Vec, error: c.Error, adjustment: c.Adjustment, height: c.Height });
  return distanceSeconds(toCoord(a), toCoord(b));
}
