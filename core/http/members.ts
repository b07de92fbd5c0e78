// Gossip membership endpoints (consul agent/agent_endpoint.go AgentMembers,
// AgentJoin, AgentLeave, AgentForceLeave): /v1/agent/members,
// /v1/agent/join/<addr>, /v1/agent/leave, /v1/agent/force-leave/<node>.
import { BadRequestError } from "../errors.ts";
import { compileFilter } from "../filter/mod.ts";
import type { GossipBackend, GossipPoolBackend, PoolMember } from "./backends.ts";
import { HttpError } from "./http_error.ts";
import { hasFlag, jsonResponse, wantsPretty, type Handler, type HttpRequest, type HttpResponse } from "./types.ts";

/** Serf MemberStatus numbers: 1 alive, 2 leaving, 3 left, 4 failed. */
export const memberStatusCode: Record<PoolMember["status"], number> = { alive: 1, leaving: 2, left: 3, failed: 4 };

/** consul api.AgentMember. */
export function memberJson(m: PoolMember): Record<string, unknown> {
  return {
    Name: m.name,
    Addr: m.addr,
    Port: m.port,
    Tags: m.tags,
    Status: memberStatusCode[m.status] ?? 0,
    ProtocolMin: m.protocolMin,
    ProtocolMax: m.protocolMax,
    ProtocolCur: m.protocolCur,
    DelegateMin: m.delegateMin,
    DelegateMax: m.delegateMax,
    DelegateCur: m.delegateCur,
  };
}

/**
 * Each member's JSON, kept until the member changes. Tools poll this endpoint
 * (scripts, dashboards; the gossip bench asks 50 agents ten times a second
 * each during a join storm), and rebuilding and stringifying every member for
 * each call was most of its CPU with 50 members (docs/performance.md).
 */
export class MemberJsonCache {
  #byName = new Map<string, { m: PoolMember; json: string }>();

  json(m: PoolMember): string {
    const c = this.#byName.get(m.name);
    if (c && samePoolMember(c.m, m)) return c.json;
    const json = JSON.stringify(memberJson(m));
    if (!c && this.#byName.size >= 4096) this.#byName.clear();
    this.#byName.set(m.name, { m, json });
    return json;
  }
}

/** The same member as far as memberJson shows it (tags by identity: a change replaces them). */
function samePoolMember(a: PoolMember, b: PoolMember): boolean {
  return a.addr === b.addr && a.port === b.port && a.tags === b.tags && a.status === b.status &&
    a.protocolMin === b.protocolMin && a.protocolMax === b.protocolMax && a.protocolCur === b.protocolCur &&
    a.delegateMin === b.delegateMin && a.delegateMax === b.delegateMax && a.delegateCur === b.delegateCur;
}

/** A pool's counters as Consul's Stats.serf_lan / serf_wan (every value a string). */
export function poolStatsStrings(pool: Pick<GossipPoolBackend, "stats">): Record<string, string> {
  return Object.fromEntries(Object.entries(pool.stats()).map(([k, v]) => [k, String(v)]));
}

const ok = (): HttpResponse => ({ status: 200, headers: {}, body: "" });

function pickPool(gossip: GossipBackend, req: HttpRequest): GossipPoolBackend {
  if (!hasFlag(req, "wan")) return gossip.lan;
  if (!gossip.wan) throw new BadRequestError("WAN gossip is only available on servers: this agent is a client");
  return gossip.wan;
}

function tail(req: HttpRequest, prefix: string): string {
  return req.path.slice(prefix.length);
}

/** GET /v1/agent/members[?wan][&segment=][&filter=] (the filter sees api.AgentMember's fields: Name, Addr, Port, Tags, Status, Protocol*, Delegate*). */
export function membersHandler(deps: { gossip: GossipBackend }): Handler {
  const { gossip } = deps;
  const caches = new Map<string, MemberJsonCache>();
  return async (req) => {
    const pool = pickPool(gossip, req);
    const segment = req.query.get("segment") ?? "";
    const expression = req.query.get("filter") ?? "";
    // Compiled before anything else: a bad expression is a 400 naming its position.
    const filter = expression.trim() !== "" ? compileFilter(expression) : undefined;
    let members = pool.members();
    if (segment !== "" && segment !== "_all" && pool.name === "lan") {
      members = members.filter((m) => (m.tags.segment ?? "") === segment || m.tags.role === "consul");
    }
    if (filter) members = members.filter((m) => filter.match(memberJson(m)));
    // ACLs: only the members whose node the token may read (consul filterMembers).
    let filtered = false;
    const acl = req.acl;
    if (acl) {
      const n = members.length;
      members = members.filter((m) => acl.allowed("node", "read", m.name));
      filtered = members.length < n;
    }
    if (filtered) return jsonResponse(members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(memberJson), { pretty: wantsPretty(req), headers: { "X-Consul-Results-Filtered-By-ACLs": "true" } });
    members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (wantsPretty(req)) return jsonResponse(members.map(memberJson), { pretty: true });
    let cache = caches.get(pool.name);
    if (!cache) caches.set(pool.name, (cache = new MemberJsonCache()));
    const parts: string[] = [];
    for (const m of members) parts.push(cache.json(m));
    return { status: 200, headers: { "Content-Type": "application/json" }, body: `[${parts.join(",")}]` };
  };
}

export const agentJoinPrefix = "/v1/agent/join/";

/** PUT /v1/agent/join/<addr>[?wan] */
export function joinHandler(deps: { gossip: GossipBackend }): Handler {
  return async (req) => {
    const addr = tail(req, agentJoinPrefix);
    if (addr === "") throw new BadRequestError("Missing address to join: use /v1/agent/join/<address>");
    const pool = pickPool(deps.gossip, req);
    const r = await pool.join([addr]);
    if (r.joined === 0) {
      const errs = r.errors.length > 0 ? r.errors : [`Failed to join ${addr}`];
      throw new HttpError(500, multiError(errs));
    }
    return ok();
  };
}

/** PUT /v1/agent/leave: leave every pool, then `onLeave` (the agent shuts down, as Consul's does). */
export function leaveHandler(deps: { gossip: GossipBackend; onLeave?: () => void }): Handler {
  return async () => {
    await deps.gossip.leave();
    deps.onLeave?.();
    return ok();
  };
}

export const agentForceLeavePrefix = "/v1/agent/force-leave/";

/** PUT /v1/agent/force-leave/<node>[?prune][&wan] */
export function forceLeaveHandler(deps: { gossip: GossipBackend }): Handler {
  return async (req) => {
    const node = tail(req, agentForceLeavePrefix);
    if (node === "") throw new BadRequestError("Missing node name: use /v1/agent/force-leave/<node>");
    const pool = pickPool(deps.gossip, req);
    try {
      await pool.forceLeave(node, { prune: hasFlag(req, "prune") });
    } catch (err) {
      throw new HttpError(500, err instanceof Error ? err.message : String(err), { cause: err });
    }
    return ok();
  };
}

/** hashicorp/go-multierror's text, which Consul's errors carry. */
export function multiError(errors: readonly string[]): string {
  if (errors.length === 1) return `1 error occurred:\n\t* ${errors[0]}\n\n`;
  return `${errors.length} errors occurred:\n${errors.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}
