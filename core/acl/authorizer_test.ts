import assert from "node:assert/strict";
import { test } from "node:test";
import { Authorizer, managementAuthorizer, permissionDeniedReason, type Access } from "./authorizer.ts";
import { Rng } from "../sim/rng.ts";
import { AclRuleError, globalReadOnlyRules, mergeRules, parseRules, type AclResource } from "./policy.ts";

function authz(texts: string[], defaultAllow = false): Authorizer {
  return new Authorizer(mergeRules(texts.map(parseRules)), { defaultAllow });
}

type Case = [AclResource, Access, string, boolean];

function check(a: Authorizer, cases: Case[]): void {
  for (const [r, acc, name, want] of cases) assert.equal(a.allowed(r, acc, name), want, `${r}:${acc} on "${name}"`);
}

test("acl rules: exact beats prefix, longest prefix wins (Consul's key example)", () => {
  // The example of Consul's ACL rules documentation for keys.
  const a = authz([`
key_prefix "" { policy = "read" }
key_prefix "foo/" { policy = "write" }
key_prefix "foo/private/" { policy = "deny" }
key "foo/private/exception" { policy = "read" }
operator = "read"
`]);
  check(a, [
    ["key", "read", "bar", true],
    ["key", "write", "bar", false],
    ["key", "write", "foo/x", true],
    ["key", "read", "foo/private/secret", false],
    ["key", "write", "foo/private/secret", false],
    ["key", "read", "foo/private/exception", true],
    ["key", "write", "foo/private/exception", false],
    ["operator", "read", "", true],
    ["operator", "write", "", false],
    ["service", "read", "web", false],
    ["acl", "read", "", false],
  ]);
});

test("acl rules: deny > write > list > read when policies give the same rule", () => {
  const a = authz([`key_prefix "app/" { policy = "write" }`, `key_prefix "app/" { policy = "read" }`, `service "web" { policy = "write" }`, `service "web" { policy = "deny" }`]);
  check(a, [
    ["key", "write", "app/x", true],
    ["service", "read", "web", false],
  ]);
  const b = authz([`key_prefix "" { policy = "list" }`, `key_prefix "" { policy = "read" }`]);
  check(b, [
    ["key", "list", "x/", true],
    ["key", "read", "x", true],
    ["key", "write", "x", false],
  ]);
});

test("acl rules: read does not grant list; list and write do", () => {
  check(authz([`key_prefix "a/" { policy = "read" }`, `key_prefix "b/" { policy = "list" }`, `key_prefix "c/" { policy = "write" }`]), [
    ["key", "list", "a/", false],
    ["key", "list", "b/", true],
    ["key", "list", "c/", true],
  ]);
});

test("acl rules: the default policy decides what no rule names; acl needs a rule", () => {
  const allow = authz([`key "x" { policy = "deny" }`], true);
  check(allow, [
    ["key", "write", "y", true],
    ["key", "read", "x", false],
    ["node", "write", "n1", true],
    ["acl", "read", "", false],
  ]);
  check(authz([], false), [["key", "read", "y", false], ["agent", "read", "a1", false]]);
});

test("acl rules: JSON form equals HCL form", () => {
  const json = authz([`{"key_prefix": {"app/": {"policy": "write"}}, "node": {"n1": {"policy": "read"}}, "keyring": "write"}`]);
  check(json, [
    ["key", "write", "app/1", true],
    ["key", "read", "other", false],
    ["node", "read", "n1", true],
    ["node", "read", "n2", false],
    ["keyring", "write", "", true],
  ]);
});

test("acl rules: bad rules are refused with a clear message", () => {
  assert.throws(() => parseRules(`key "a" { policy = "admin" }`), (e) => e instanceof AclRuleError && /Invalid key policy: "admin"/.test(e.message));
  assert.throws(() => parseRules(`node "a" { policy = "list" }`), /Invalid node policy: "list"/);
  assert.throws(() => parseRules(`kv "a" { policy = "read" }`), /unknown rule "kv"/);
  assert.throws(() => parseRules(`key "a" {`), /Failed to parse ACL rules/);
  assert.throws(() => parseRules(`operator = "list"`), /Invalid operator policy/);
});

test("acl rules: key write on a prefix needs write on everything under it", () => {
  const a = authz([`key_prefix "app/" { policy = "write" }`, `key "app/locked" { policy = "read" }`]);
  assert.equal(a.keyWritePrefix("app/"), false);
  assert.equal(a.keyWritePrefix("app/sub/"), true);
  assert.equal(a.keyWritePrefix("other/"), false);
  assert.equal(authz([], true).keyWritePrefix(""), true);
});

test("acl rules: built-in policies", () => {
  const m = managementAuthorizer();
  check(m, [["acl", "write", "", true], ["key", "write", "anything", true], ["operator", "write", "", true], ["service", "write", "x", true]]);
  const ro = authz([globalReadOnlyRules]);
  check(ro, [["key", "read", "x", true], ["key", "write", "x", false], ["node", "read", "n", true], ["acl", "read", "", false], ["operator", "read", "", true]]);
});

test("acl rules: the refusal names the accessor, the permission and the resource as Consul does", () => {
  assert.equal(permissionDeniedReason("abc", "key", "write", "foo"), `token with AccessorID 'abc' lacks permission 'key:write' on "foo"`);
  assert.equal(permissionDeniedReason("abc", "operator", "read"), `token with AccessorID 'abc' lacks permission 'operator:read'`);
});

test("acl rules: the longest prefix wins for any name (against a plain scan of every rule)", () => {
  // Prefixes nested, sharing starts, equal to whole names, empty, and outside the BMP (two code units).
  const alphabet = ["a", "b", "/", "é", "😀"];
  const rng = new Rng(21);
  const word = (max: number) => Array.from({ length: rng.int(max + 1) }, () => rng.pick(alphabet)).join("");
  const levels = ["deny", "read", "list", "write"] as const;
  for (let round = 0; round < 20; round++) {
    const prefixes = new Map<string, (typeof levels)[number]>();
    for (let i = 0; i < 12; i++) prefixes.set(word(4), rng.pick(levels));
    const a = authz([[...prefixes].map(([p, lvl]) => `key_prefix ${JSON.stringify(p)} { policy = "${lvl}" }`).join("\n")]);
    for (let i = 0; i < 200; i++) {
      const name = word(6);
      let want: string | undefined;
      let wantLen = -1;
      for (const [p, lvl] of prefixes) if (name.startsWith(p) && p.length > wantLen) [want, wantLen] = [lvl, p.length];
      assert.equal(a.ruleFor("key", name), want, `round ${round}: "${name}" with ${JSON.stringify([...prefixes])}`);
    }
  }
});
