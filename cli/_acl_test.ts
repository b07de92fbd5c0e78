import assert from "node:assert/strict";
import { test } from "node:test";
import { nodeIdentitiesFrom, prettyRole, prettyRoleListEntry, serviceIdentitiesFrom } from "./_acl.ts";

test("acl flags: -service-identity NAME[:DC1,DC2] and -node-identity NAME:DC, with Consul's errors", () => {
  assert.deepEqual(serviceIdentitiesFrom(["web", "db:east,west"]), [{ ServiceName: "web" }, { ServiceName: "db", Datacenters: ["east", "west"] }]);
  assert.throws(() => serviceIdentitiesFrom(["a:b:c"]), { message: 'Malformed -service-identity argument: "a:b:c"' });
  assert.deepEqual(nodeIdentitiesFrom(["n1:dc1"]), [{ NodeName: "n1", Datacenter: "dc1" }]);
  for (const bad of ["n1", "n1:", ":dc1", "a:b:c"]) assert.throws(() => nodeIdentitiesFrom([bad]), { message: `Malformed -node-identity argument: ${JSON.stringify(bad)}` });
});

test("acl role pretty format: Consul's role formatter, alone and in a list", () => {
  const role = {
    ID: "r1",
    Name: "reader",
    Description: "d",
    Policies: [{ ID: "p1", Name: "app" }],
    ServiceIdentities: [{ ServiceName: "web" }, { ServiceName: "db", Datacenters: ["dc1", "dc2"] }],
    NodeIdentities: [{ NodeName: "n1", Datacenter: "dc1" }],
    CreateIndex: 1,
    ModifyIndex: 2,
  };
  assert.equal(prettyRole(role), "ID:           r1\nName:         reader\nDescription:  d\nPolicies:\n   p1 - app\nService Identities:\n   web (Datacenters: all)\n   db (Datacenters: dc1, dc2)\nNode Identities:\n   n1 (Datacenter: dc1)\n");
  assert.equal(prettyRoleListEntry({ ...role, ServiceIdentities: [], NodeIdentities: [] }), "reader:\n   ID:           r1\n   Description:  d\n   Policies:\n      p1 - app\n");
});
