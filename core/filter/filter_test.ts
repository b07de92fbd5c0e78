import assert from "node:assert/strict";
import { test } from "node:test";
import { BadRequestError } from "../errors.ts";
import { compileFilter, FilterSyntaxError } from "./filter.ts";

const entry = {
  Node: { Node: "node-1", Address: "10.0.0.1", Meta: { rack: "r1", "env-name": "prod" } },
  Service: { ID: "web-1", Service: "web", Tags: ["primary", "v1"], Port: 8080, Meta: { version: "2" }, EnableTagOverride: false, Weights: { Passing: 1 } },
  Checks: [
    { CheckID: "serfHealth", Status: "passing", ServiceTags: [] },
    { CheckID: "web-check", Status: "critical", ServiceTags: ["primary"] },
  ],
  Empty: "",
  Nothing: null,
};

const cases: [string, boolean][] = [
  ['Service.Service == "web"', true],
  ["Service.Service == web", true],
  ['Service.Service != "web"', false],
  ['Service.Meta.version == "2"', true],
  ['Service.Meta["version"] == "2"', true],
  ['Node.Meta["env-name"] == prod', true],
  ['Node.Meta.missing == ""', false],
  ['Node.Meta.missing != "x"', true],
  ['"primary" in Service.Tags', true],
  ['"nope" in Service.Tags', false],
  ['"nope" not in Service.Tags', true],
  ["primary in Service.Tags", true],
  ['Service.Tags contains "v1"', true],
  ['Service.Tags not contains "v1"', false],
  ['Node.Address contains "10.0"', true],
  ['"rack" in Node.Meta', true],
  ["Service.Port == 8080", true],
  ["Service.Port == 80", false],
  ["Service.EnableTagOverride == false", true],
  ["Service.Weights.Passing == 1", true],
  ["Node.Address == 10.0.0.1", true],
  ['Node.Node matches "^node-[0-9]+$"', true],
  ['Node.Node not matches "^db"', true],
  ['Service.Tags matches "^v[0-9]$"', true],
  ['Service.Tags not matches "^x"', true],
  ["Empty is empty", true],
  ["Nothing is empty", true],
  ["Service.Tags is not empty", true],
  ["Node.Meta is empty", false],
  ['Checks.Status == "critical"', true],
  ['Checks.Status == "warning"', false],
  ['"primary" in Checks.ServiceTags', true],
  ['Checks.CheckID contains "serf"', true],
  ['Service.Service == "web" and Service.Port == 8080', true],
  ['Service.Service == "db" or Service.Port == 8080', true],
  ['not Service.Service == "db"', true],
  ['not (Service.Service == "web" and "v1" in Service.Tags)', false],
  ['Service.Service == "db" and Service.Port == 8080 or Node.Node == "node-1"', true],
  ['Service.Service == "db" and (Service.Port == 8080 or Node.Node == "node-1")', false],
  ["service.service == web", true],
  ["Service.Service == `web`", true],
  ['Service.Service == "w\\"eb"', false],
];

test("filter: table of expressions over a health entry", () => {
  for (const [expr, want] of cases) {
    assert.equal(compileFilter(expr).match(entry), want, expr);
  }
});

const bad: [string, number][] = [
  ["", 0],
  ["Service.Service ==", 18],
  ['Service.Service = "web"', 16],
  ['Service.Service == "web" and', 28],
  ['(Service.Service == "web"', 25],
  ['Service.Service === "web"', 18],
  ['Service.Service == "unterminated', 19],
  ['"web" Service.Tags', 6],
  ['Service.Service like "x"', 16],
  ['Service.Name matches "("', 21],
  ["Service.Tags is full", 16],
];

test("filter: syntax errors are 400s that point at the position", () => {
  for (const [expr, offset] of bad) {
    assert.throws(
      () => compileFilter(expr),
      (e: unknown) => {
        assert.ok(e instanceof FilterSyntaxError && e instanceof BadRequestError, `${expr}: ${String(e)}`);
        assert.equal(e.offset, offset, `${expr}: ${e.message}`);
        assert.match(e.message, new RegExp(`^Failed to create boolean expression evaluator: 1:${offset + 1} \\(${offset}\\): `));
        return true;
      },
      expr,
    );
  }
});
