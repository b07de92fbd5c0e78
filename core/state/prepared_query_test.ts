import assert from "node:assert/strict";
import { test } from "node:test";
import { StateError } from "../errors.ts";
import type { PreparedQueryBody } from "../rpc/methods.ts";
import { Fsm, encodeCommand, MessageType } from "../server/fsm.ts";
import {
  preparedQueryResolveTxn,
  preparedQuerySetTxn,
  preparedQueryDeleteTxn,
  preparedQueriesSchema,
} from "./prepared_query.ts";
import { compileTemplate, goRegexp, parseInterpolation, renderTemplate } from "./prepared_query_template.ts";
import { makePreparedQuery } from "./prepared_query.ts";
import { sessionCreateTxn } from "./session.ts";
import { sessionInvalidateTxn } from "./session_ops.ts";
import { StateStore } from "./store.ts";
import { queryBody } from "./_prepared_query_fixture.ts";

const id1 = "11111111-1111-4111-8111-111111111111";
const id2 = "22222222-2222-4222-8222-222222222222";
const id3 = "33333333-3333-4333-8333-333333333333";

function set(s: StateStore, idx: number, op: "create" | "update", q: PreparedQueryBody) {
  return s.write(idx, (tx) => preparedQuerySetTxn(tx, idx, op, q));
}

test("prepared queries: state rules refuse clashing names, IDs as names, a second catch-all, missing sessions and updates of nothing", () => {
  const s = new StateStore();
  set(s, 1, "create", queryBody({ id: id1, name: "Web" }));
  const row = s.tables.prepared_queries.get(id1)!;
  assert.equal(row.createIndex, 1);
  assert.ok(Object.isFrozen(row) && Object.isFrozen(row.service.tags));
  assert.throws(() => set(s, 2, "create", queryBody({ id: id2, name: "web" })), /name 'web' aliases an existing query name/);
  assert.throws(() => set(s, 2, "create", queryBody({ id: id2, name: id1 })), /name '1111.*' aliases an existing query ID/);
  assert.throws(() => set(s, 2, "create", queryBody({ id: id1, name: "other" })), /already exists/);
  assert.throws(() => set(s, 2, "update", queryBody({ id: id2, name: "x" })), /Cannot modify non-existent prepared query/);
  assert.throws(() => set(s, 2, "create", queryBody({ id: id2, session: "nope" })), (e: unknown) => e instanceof StateError && /invalid session "nope"/.test(e.message));
  set(s, 2, "create", queryBody({ id: id2, template: { type: "name_prefix_match" } }));
  assert.throws(() => set(s, 3, "create", queryBody({ id: id3, template: { type: "name_prefix_match" } })), /a query template with an empty name already exists/);
  assert.throws(() => set(s, 3, "create", queryBody({ id: id3, name: "t", template: { type: "prefix" } })), /failed compiling template: Bad Template.Type 'prefix'/);
  assert.throws(() => set(s, 3, "create", queryBody({ id: id3, name: "t", template: { type: "name_prefix_match" }, service: { service: "${nope}" } })), /Bad format '\$\{nope\}' in Service.Service/);
  // Refusals changed nothing.
  assert.equal(s.tables.prepared_queries.size, 2);
  assert.equal(s.maxIndex("prepared_queries"), 2);
  // An update keeps the name it already has and its CreateIndex.
  set(s, 4, "update", queryBody({ id: id1, name: "WEB", service: { service: "api" } }));
  const updated = s.tables.prepared_queries.get(id1)!;
  assert.deepEqual([updated.name, updated.service.service, updated.createIndex, updated.modifyIndex], ["WEB", "api", 1, 4]);
  assert.equal(s.write(5, (tx) => preparedQueryDeleteTxn(tx, 5, id1)), true);
  assert.equal(s.write(6, (tx) => preparedQueryDeleteTxn(tx, 6, id1)), false);
  assert.equal(s.maxIndex("prepared_queries"), 5);
});

test("prepared queries: resolve by ID, exact name, then the longest template prefix, rendered for the name", () => {
  const s = new StateStore();
  set(s, 1, "create", queryBody({ id: id1, name: "geo-db", service: { service: "static" } }));
  set(s, 2, "create", queryBody({ id: id2, name: "geo", template: { type: "name_prefix_match" }, service: { service: "${name.suffix}" } }));
  set(s, 3, "create", queryBody({ id: id3, template: { type: "name_prefix_match" }, service: { service: "${name.full}" } }));
  const svc = (name: string) => preparedQueryResolveTxn(s, name).value?.service.service;
  assert.equal(svc(id1), "static");
  assert.equal(svc("GEO-DB"), "static");
  assert.equal(svc("geo-web"), "-web");
  assert.equal(svc("redis"), "redis");
  assert.throws(() => preparedQueryResolveTxn(s, id2), /templates can only be resolved up by name, not by ID/);
  assert.throws(() => preparedQueryResolveTxn(s, ""), /Missing Query ID/);
  assert.equal(preparedQueryResolveTxn(s, "redis").index, 3);
  // Without the catch-all, an unmatched name resolves to nothing.
  s.write(4, (tx) => preparedQueryDeleteTxn(tx, 4, id3));
  assert.equal(preparedQueryResolveTxn(s, "redis").value, undefined);
});

test("templates: every Service string is interpolated; match() uses the Regexp; RemoveEmptyTags drops empty tags", () => {
  const q = makePreparedQuery({
    ...queryBody({
      id: id1,
      name: "geo-",
      template: { type: "name_prefix_match", regexp: "^geo-(?P<svc>[a-z]+)-(\\w+)$", removeEmptyTags: true },
      service: {
        service: "${match(1)}",
        tags: ["${match(2)}", "${match(7)}", "x-${name.prefix}", "$${literal}"],
        near: "${name.full}",
        nodeMeta: { zone: "${match(2)}" },
        serviceMeta: { s: "${ name.suffix }" },
        ignoreCheckIds: ["${agent.segment}c"],
        failover: { nearestN: 0, datacenters: ["dc-${match(2)}"] },
      },
    }),
    createIndex: 1,
    modifyIndex: 1,
  });
  compileTemplate(q);
  const r = renderTemplate(q, "geo-db-east");
  assert.deepEqual(r.service.service, "db");
  assert.deepEqual(r.service.tags, ["east", "x-geo-", "${literal}"]);
  assert.equal(r.service.near, "geo-db-east");
  assert.deepEqual(r.service.nodeMeta, { zone: "east" });
  assert.deepEqual(r.service.serviceMeta, { s: "db-east" });
  assert.deepEqual(r.service.ignoreCheckIds, ["c"]);
  assert.deepEqual(r.service.failover.datacenters, ["dc-east"]);
  // No match: every group is "".
  assert.equal(renderTemplate(q, "geo-").service.service, "");
  const keep = makePreparedQuery({ ...q, template: { ...q.template, removeEmptyTags: false } });
  assert.deepEqual(renderTemplate(keep, "geo-db-east").service.tags, ["east", "", "x-geo-", "${literal}"]);
  assert.throws(() => parseInterpolation("${name.full"), /unclosed/);
  assert.throws(() => parseInterpolation("${node.name}"), /unknown variable accessed: node.name/);
  assert.ok(goRegexp("(?i)^WEB$").test("web"));
  assert.throws(() => compileTemplate(makePreparedQuery({ ...q, template: { ...q.template, regexp: "(" } })), /Bad Regexp/);
});

test("prepared queries: a session's invalidation deletes the queries bound to it, and nothing else", () => {
  const s = new StateStore();
  s.sessionCreate(1, "sess-1");
  set(s, 2, "create", queryBody({ id: id1, session: "sess-1" }));
  set(s, 3, "create", queryBody({ id: id2, name: "kept" }));
  s.write(4, (tx) => sessionInvalidateTxn(tx, 4, { nowMs: 0 }, "sess-1"));
  assert.deepEqual(s.tables.prepared_queries.all().map((q) => q.id), [id2]);
  assert.equal(s.maxIndex("prepared_queries"), 4);
});

test("fsm: PreparedQuery commands (type 7) apply, refuse with an Error, and the table survives a snapshot round trip", async () => {
  const fsm = new Fsm();
  assert.equal(MessageType.PreparedQuery, 7);
  assert.equal(fsm.apply(1, encodeCommand(MessageType.PreparedQuery, { op: "create", query: queryBody({ id: id1, name: "web", dns: { ttl: "10s" } }) })), id1);
  const refused = fsm.apply(2, encodeCommand(MessageType.PreparedQuery, { op: "create", query: queryBody({ id: id2, name: "web" }) }));
  assert.ok(refused instanceof Error && /aliases an existing query name/.test(refused.message));
  assert.ok(fsm.apply(3, encodeCommand(MessageType.PreparedQuery, { op: "create", query: { id: id2 } })) instanceof Error);
  assert.ok(fsm.apply(4, encodeCommand(MessageType.PreparedQuery, { op: "bogus" })) instanceof Error);
  const restored = new Fsm();
  await restored.restore([fsm.snapshot()]);
  assert.deepEqual(restored.state.tables.prepared_queries.all(), fsm.state.tables.prepared_queries.all());
  assert.equal(restored.state.maxIndex("prepared_queries"), 1);
  assert.equal(fsm.apply(5, encodeCommand(MessageType.PreparedQuery, { op: "delete", id: id1 })), true);
  assert.equal(fsm.state.tables.prepared_queries.size, 0);
  // The snapshot validator refuses malformed rows.
  assert.equal(preparedQueriesSchema.fromRecord({ id: id1 }), undefined);
  assert.equal(preparedQueriesSchema.fromRecord({ ...queryBody({ id: id1 }), createIndex: -1, modifyIndex: 1 }), undefined);
  assert.ok(preparedQueriesSchema.fromRecord({ ...queryBody({ id: id1 }), createIndex: 1, modifyIndex: 1 }));
});
