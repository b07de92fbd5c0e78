// Gossip membership endpoints (consul agent/agent_endpoint.go AgentMembers,
// AgentJoin, AgentLeave, AgentForceLeave): /v1/agent/members,
// /v1/agent/join/<addr>, /v1/agent/leave, /v1/agent/force-leave/<node>.
import type { AgentGossip, GossipPool, PoolMember } from "../agent/gossip.ts";
import { BadRequestError } from "../errors.ts";
import { HttpError } from "./http_error.ts";
import type { Route } from "./routes.ts";
import { hasFlag, jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

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

/** A pool's counters as Consul's Stats.serf_lan / serf_wan (every value a string). */
export function poolStatsStrings(pool: GossipPool): Record<string, string> {
  return Object.fromEntries(Object.entries(pool.stats()).map(([k, v]) => [k, String(v)]));
}

export interface MemberRoutesDeps {
  gossip: AgentGossip;
  /** Called after a graceful leave through the API: the agent shuts down, as Consul's does. */
  onLeave?: () => void;
}

const ok = (): HttpResponse => ({ status: 200, headers: {}, body: "" });

function pickPool(gossip: AgentGossip, req: HttpRequest): GossipPool {
  if (!hasFlag(req, "wan")) return gossip.lan;
  if (!gossip.wan) throw new BadRequestError("WAN gossip is only available on servers: this agent is a client");
  return gossip.wan;
}

function tail(req: HttpRequest, prefix: string): string {
  return req.path.slice(prefix.length);
}

export function memberRoutes(deps: MemberRoutesDeps): Route[] {
  const { gossip } = deps;
  return [
    {
      pattern: "/v1/agent/members",
      methods: ["GET"],
      handler: async (req) => {
        const pool = pickPool(gossip, req);
        const segment = req.query.get("segment") ?? "";
        let members = pool.members();
        if (segment !== "" && segment !== "_all" && pool.name === "lan") {
          members = members.filter((m) => (m.tags.segment ?? "") === segment || m.tags.role === "consul");
        }
        members.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        return jsonResponse(members.map(memberJson), { pretty: wantsPretty(req) });
      },
    },
    {
      pattern: "/v1/agent/join/",
      methods: ["PUT"],
      handler: async (req) => {
        const addr = tail(req, "/v1/agent/join/");
        if (addr === "") throw new BadRequestError("Missing address to join: use /v1/agent/join/<address>");
        const pool = pickPool(gossip, req);
        const r = await pool.join([addr]);
        if (r.joined === 0) {
          const errs = r.errors.length > 0 ? r.errors : [`Failed to join ${addr}`];
          throw new HttpError(500, multiError(errs));
        }
        return ok();
      },
    },
    {
      pattern: "/v1/agent/leave",
      methods: ["PUT"],
      handler: async () => {
        await gossip.leave();
        deps.onLeave?.();
        return ok();
      },
    },
    {
      pattern: "/v1/agent/force-leave/",
      methods: ["PUT"],
      handler: async (req) => {
        const node = tail(req, "/v1/agent/force-leave/");
        if (node === "") throw new BadRequestError("Missing node name: use /v1/agent/force-leave/<node>");
        const pool = pickPool(gossip, req);
        try {
          await pool.forceLeave(node, { prune: hasFlag(req, "prune") });
        } catch (err) {
          throw new HttpError(500, err instanceof Error ? err.message : String(err), { cause: err });
        }
        return ok();
      },
    },
  ];
}

/** hashicorp/go-multierror's text, which Consul's errors carry. */
export function multiError(errors: readonly string[]): string {
  if (errors.length === 1) return `1 error occurred:\n\t* ${errors[0]}\n\n`;
  return `${errors.length} errors occurred:\n${errors.map((e) => `\t* ${e}`).join("\n")}\n\n`;
}
