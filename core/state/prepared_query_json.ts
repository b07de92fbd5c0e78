// A prepared query in Consul's JSON (structs.PreparedQuery field names). Empty
// lists and maps are null, as Go writes a nil slice or map.

import type { PreparedQuery } from "../rpc/methods.ts";

const listOrNull = (xs: readonly string[]) => (xs.length > 0 ? [...xs] : null);
const mapOrNull = (m: Record<string, string>) => (Object.keys(m).length > 0 ? { ...m } : null);

export function preparedQueryToJson(q: PreparedQuery): Record<string, unknown> {
  const s = q.service;
  return {
    ID: q.id,
    Name: q.name,
    Session: q.session,
    Token: q.token,
    Template: { Type: q.template.type, Regexp: q.template.regexp, RemoveEmptyTags: q.template.removeEmptyTags },
    Service: {
      Service: s.service,
      Failover: { NearestN: s.failover.nearestN, Datacenters: listOrNull(s.failover.datacenters) },
      IgnoreCheckIDs: listOrNull(s.ignoreCheckIds),
      OnlyPassing: s.onlyPassing,
      Near: s.near,
      Tags: listOrNull(s.tags),
      NodeMeta: mapOrNull(s.nodeMeta),
      ServiceMeta: mapOrNull(s.serviceMeta),
      Connect: s.connect,
    },
    DNS: { TTL: q.dns.ttl },
    CreateIndex: q.createIndex,
    ModifyIndex: q.modifyIndex,
  };
}
