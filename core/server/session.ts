// Session endpoints (consul agent/consul/session_endpoint.go). Create picks a
// UUID on the leader (from the injected Rng) and checks TTL and behavior
// before Raft; destroy and TTL expiry carry the leader's wall clock so lock
// delays agree on every server. Renew resets the leader's TTL timer.

import { BadRequestError, CairnError } from "../errors.ts";
import { parseDuration } from "../config/duration.ts";
import type { RpcHandlers, SessionInput } from "../rpc/methods.ts";
import type { Rng } from "../sim/rng.ts";
import { nodeSessionsTxn, sessionGetReadTxn, sessionListTxn } from "../state/session_ops.ts";
import type { SessionCreate } from "../state/session_ops.ts";
import { sessionToJson } from "../state/catalog_json.ts";
import { filterOf } from "./catalog.ts";
import type { ServerContext } from "./context.ts";
import { withCheckedArgs } from "./args.ts";
import { raftApply, read, requireLeader } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";
import type { SessionTimers } from "./leader/session_ttl.ts";

type SessionMethods = "Session.Apply" | "Session.Get" | "Session.List" | "Session.NodeSessions" | "Session.Renew";

/** Consul's bounds for a session TTL (SessionTTLMin default, SessionTTLMax). */
export const sessionTtlMinMs = 10_000;
export const sessionTtlMaxMs = 24 * 3_600_000;

/**
 * A create Consul's session endpoint refuses with its catch-all 500 and these
 * exact words: Patroni matches `Invalid Session TTL` on a 500 to adjust its TTL.
 */
function sessionRefused(message: string): CairnError {
  return new CairnError("session_refused", message);
}

/** A random (version 4) UUID from the Rng. */
export function uuidFromRng(rng: Rng): string {
  const b = new Uint8Array(16);
  for (let i = 0; i < 16; i += 4) {
    const v = rng.uint32();
    b[i] = v >>> 24;
    b[i + 1] = (v >>> 16) & 0xff;
    b[i + 2] = (v >>> 8) & 0xff;
    b[i + 3] = v & 0xff;
  }
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Validate a session to create and fill in what is missing (not node: the HTTP layer knows the agent's node). */
export function validateSession(s: SessionInput, id: string): SessionCreate {
  if (typeof s !== "object" || s === null) throw new BadRequestError("Invalid session");
  if (typeof s.node !== "string" || s.node === "") throw new BadRequestError("Must provide Node");
  const behavior = s.behavior === undefined || (s.behavior as string) === "" ? "release" : s.behavior;
  if (behavior !== "release" && behavior !== "delete") throw sessionRefused(`Invalid Behavior setting '${String(behavior)}'`);
  const ttl = s.ttl ?? "";
  if (typeof ttl !== "string") throw new BadRequestError("Invalid TTL: must be a duration string");
  if (ttl !== "") {
    const ms = parseDuration(ttl);
    if (ms === undefined) throw sessionRefused(`Session TTL '${ttl}' invalid: not a duration such as "30s"`);
    if (ms !== 0 && (ms < sessionTtlMinMs || ms > sessionTtlMaxMs)) {
      throw sessionRefused(`Invalid Session TTL '${Math.round(ms * 1e6)}', must be between [10s=24h0m0s]`);
    }
  }
  const lockDelayMs = s.lockDelayMs ?? 0;
  if (typeof lockDelayMs !== "number" || !Number.isFinite(lockDelayMs) || lockDelayMs < 0) {
    throw new BadRequestError("Invalid LockDelay: must be a non-negative duration");
  }
  const nodeChecks = s.nodeChecks ?? [];
  if (!Array.isArray(nodeChecks) || !nodeChecks.every((c) => typeof c === "string")) throw new BadRequestError("Invalid NodeChecks: must be a list of check IDs");
  const serviceChecks = s.serviceChecks ?? [];
  if (!Array.isArray(serviceChecks) || !serviceChecks.every((c) => typeof c === "object" && c !== null && typeof c.id === "string")) {
    throw new BadRequestError("Invalid ServiceChecks: must be a list of {ID, Namespace}");
  }
  if (s.name !== undefined && typeof s.name !== "string") throw new BadRequestError("Invalid Name: must be a string");
  return {
    id,
    name: s.name ?? "",
    node: s.node,
    lockDelayMs: Math.round(lockDelayMs),
    behavior,
    ttl: ttl === "0" ? "" : ttl,
    nodeChecks: [...new Set(nodeChecks)],
    serviceChecks: serviceChecks.map((c) => ({ id: c.id, ...(c.namespace ? { namespace: c.namespace } : {}) })),
  };
}

export function sessionEndpoints(ctx: ServerContext, timers: SessionTimers): Pick<RpcHandlers, SessionMethods> {
  return withCheckedArgs<SessionMethods>({
    async "Session.Apply"(args, options) {
      if (args.op !== "create" && args.op !== "destroy") throw new BadRequestError(`Invalid session operation ${JSON.stringify(String(args.op))}`);
      if (args.op === "destroy") {
        const id = args.session?.id;
        if (typeof id !== "string" || id === "") throw new BadRequestError("Must provide ID");
        requireLeader(ctx);
        const command = encodeCommand(MessageType.Session, { op: "destroy", id, nowMs: ctx.clock.wallNow() });
        const { index } = await raftApply(ctx, command, options);
        timers.clear(id);
        return { id, index };
      }
      validateSession(args.session, "x");
      requireLeader(ctx);
      const sessions = ctx.fsm.state.tables.sessions;
      let id = uuidFromRng(ctx.rng);
      while (sessions.get(id)) id = uuidFromRng(ctx.rng);
      const session = validateSession(args.session, id);
      const command = encodeCommand(MessageType.Session, { op: "create", session });
      const { index, result } = await raftApply(ctx, command, options);
      // A repeat of a create already applied answers with the session it made then.
      const created = typeof result === "string" ? result : id;
      timers.reset(created, session.ttl);
      return { id: created, index };
    },

    async "Session.Get"(args, options) {
      if (typeof args.sessionId !== "string") throw new BadRequestError("Must provide session ID");
      const { value, meta } = await read(ctx, args.query, (state, ws) => sessionGetReadTxn(state, ws, args.sessionId), options);
      return { sessions: value, meta };
    },

    async "Session.List"(args, options) {
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = sessionListTxn(state, ws);
        return { index: r.index, value: filter ? r.value.filter((s) => filter.match(sessionToJson(s))) : r.value };
      }, options);
      return { sessions: value, meta };
    },

    async "Session.NodeSessions"(args, options) {
      if (typeof args.node !== "string" || args.node === "") throw new BadRequestError("Must provide node");
      const filter = filterOf(args);
      const { value, meta } = await read(ctx, args.query, (state, ws) => {
        const r = nodeSessionsTxn(state, ws, args.node);
        return { index: r.index, value: filter ? r.value.filter((s) => filter.match(sessionToJson(s))) : r.value };
      }, options);
      return { sessions: value, meta };
    },

    async "Session.Renew"(args) {
      if (typeof args.sessionId !== "string" || args.sessionId === "") throw new BadRequestError("Must provide session ID");
      requireLeader(ctx);
      const state = ctx.fsm.state;
      const r = sessionGetReadTxn(state, undefined, args.sessionId);
      for (const s of r.value) timers.reset(s.id, s.ttl);
      return {
        sessions: r.value,
        meta: { index: r.index > 0 ? r.index : 1, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" },
      };
    },
  });
}
