import assert from "node:assert/strict";
import { test } from "node:test";
import type { AclReplicationStatus, Rpc } from "../rpc/methods.ts";
import { aclReplicationHandler } from "./acl.ts";
import { makeRequest } from "./types.ts";

function rpcAnswering(status: AclReplicationStatus, seen: unknown[]): Rpc {
  return {
    call(method, args) {
      seen.push([method, args]);
      return Promise.resolve(status) as never;
    },
  };
}

test("GET /v1/acl/replication: Consul's fields in Consul's order, whole-second UTC times, the zero time for never; ?dc and ?stale reach the servers", async () => {
  const seen: unknown[] = [];
  const status: AclReplicationStatus = {
    enabled: true,
    running: true,
    sourceDatacenter: "dc1",
    replicationType: "tokens",
    replicatedIndex: 41,
    replicatedRoleIndex: 42,
    replicatedTokenIndex: 43,
    lastSuccessMs: Date.UTC(2026, 10, 25, 4, 28, 57, 600),
    lastErrorMs: 0,
    lastErrorMessage: "",
  };
  const h = aclReplicationHandler({ rpc: rpcAnswering(status, seen), enabled: true });
  const r = await h(makeRequest("GET", "/v1/acl/replication?dc=dc2&stale"));
  assert.equal(r.status, 200);
  const body = JSON.parse(typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body as Uint8Array)) as Record<string, unknown>;
  assert.deepEqual(body, {
    Enabled: true,
    Running: true,
    SourceDatacenter: "dc1",
    ReplicationType: "tokens",
    ReplicatedIndex: 41,
    ReplicatedRoleIndex: 42,
    ReplicatedTokenIndex: 43,
    LastSuccess: "2026-11-25T04:28:58Z",
    LastError: "0001-01-01T00:00:00Z",
    LastErrorMessage: "",
  });
  assert.deepEqual(Object.keys(body), ["Enabled", "Running", "SourceDatacenter", "ReplicationType", "ReplicatedIndex", "ReplicatedRoleIndex", "ReplicatedTokenIndex", "LastSuccess", "LastError", "LastErrorMessage"]);
  const [method, args] = seen[0] as [string, { query: { datacenter?: string; allowStale: boolean } }];
  assert.equal(method, "ACL.ReplicationStatus");
  assert.deepEqual([args.query.datacenter, args.query.allowStale], ["dc2", true]);
});
