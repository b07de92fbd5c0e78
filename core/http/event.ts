// /v1/event/fire/<name> and /v1/event/list (consul agent/event_endpoint.go).
// The list blocks on `?index`: the index is derived from the last event's ID
// (uuidToUint64), not monotonic, so a request waits while it is unchanged.
import { BadRequestError } from "../errors.ts";
import type { UserEvent, UserEventsBackend } from "./backends.ts";
import { encodeBase64 } from "./base64.ts";
import { clampWaitMs, parseDatacenter, parseGoDuration } from "./blocking.ts";
import { jsonResponse, wantsPretty, type Handler } from "./types.ts";

/** Consul's uuidToUint64: the X-Consul-Index of an event list, as a decimal string. */
export function uuidToIndex(uuid: string): string {
  const hex = uuid.replaceAll("-", "");
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) return "1";
  const lower = BigInt(`0x${hex.slice(0, 16)}`);
  const upper = BigInt(`0x${hex.slice(16)}`);
  const v = lower ^ upper;
  return v === 0n ? "1" : v.toString();
}

/** consul UserEvent JSON (Payload base64, null when empty). */
export function userEventJson(e: UserEvent): Record<string, unknown> {
  return {
    ID: e.id,
    Name: e.name,
    Payload: e.payload && e.payload.length > 0 ? encodeBase64(e.payload) : null,
    NodeFilter: e.nodeFilter,
    ServiceFilter: e.serviceFilter,
    TagFilter: e.tagFilter,
    Version: e.version,
    LTime: e.lTime,
  };
}

export const eventFirePrefix = "/v1/event/fire/";

/**
 * PUT /v1/event/fire/<name>[?node=&service=&tag=&dc=], the body is the
 * payload; bad filters are the store's BadRequestError. `?dc` naming another
 * datacenter fires it there, through a server of that datacenter.
 */
export function eventFireHandler(deps: { events: UserEventsBackend; datacenter: string }): Handler {
  return async (req) => {
    const name = req.path.slice(eventFirePrefix.length);
    if (name === "") throw new BadRequestError("Missing name");
    const params = {
      name,
      payload: req.body.length > 0 ? req.body.slice() : null,
      nodeFilter: req.query.get("node") ?? "",
      serviceFilter: req.query.get("service") ?? "",
      tagFilter: req.query.get("tag") ?? "",
    };
    const dc = parseDatacenter(req);
    const e = dc !== "" && dc !== deps.datacenter ? await deps.events.fireIn(dc, params) : deps.events.fire(params);
    return jsonResponse(userEventJson(e), { pretty: wantsPretty(req) });
  };
}

/** GET /v1/event/list[?name=][&index=&wait=] */
export function eventListHandler(deps: { events: UserEventsBackend }): Handler {
  const { events } = deps;
  return async (req) => {
    const name = req.query.get("name") ?? "";
    const minIndex = req.query.get("index") ?? "";
    if (minIndex !== "" && !/^\d+$/.test(minIndex)) throw new BadRequestError(`Invalid index "${minIndex}": must be a non-negative integer`);
    let waitMs = clampWaitMs(req, undefined);
    const wait = req.query.get("wait");
    if (wait) {
      const ms = parseGoDuration(wait);
      if (ms === undefined) throw new BadRequestError(`Invalid wait time "${wait}"`);
      waitMs = clampWaitMs(req, ms);
    }
    const run = () => {
      const list = events.list().filter((e) => name === "" || e.name === name);
      const index = list.length === 0 ? "1" : uuidToIndex(list[list.length - 1]!.id);
      return { list, index };
    };
    let r = run();
    if (minIndex !== "" && minIndex !== "0" && r.index === minIndex.replace(/^0+/, "")) {
      // Wait for a change that alters this (filtered) list, until the deadline.
      const before = r.index;
      await events.waitUntil(() => run().index !== before, waitMs, req.signal);
      r = run();
    }
    return jsonResponse(r.list.map(userEventJson), {
      pretty: wantsPretty(req),
      headers: { "X-Consul-Index": r.index, "X-Consul-KnownLeader": "true", "X-Consul-LastContact": "0" },
    });
  };
}
