import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiError } from "../core/api/mod.ts";
import { apiErrorText, columns, keyValueBlock, parseFormat } from "./_output.ts";

test("columns: two spaces after the widest cell, no trailing blanks", () => {
  assert.equal(
    columns([
      ["Node", "Address", "Status"],
      ["alpha-long", "10.0.0.1:8301", "alive"],
      ["b", "10.0.0.2:8301", ""],
    ]),
    "Node        Address        Status\nalpha-long  10.0.0.1:8301  alive\nb           10.0.0.2:8301",
  );
  assert.equal(columns([]), "");
});

test("keyValueBlock: tabwriter padding 6 after the longest label", () => {
  assert.equal(keyValueBlock([["Key", "a"], ["ModifyIndex", "3"], ["Session", ""]]), "Key              a\nModifyIndex      3\nSession");
});

test("parseFormat and apiErrorText", () => {
  assert.equal(parseFormat("json"), "json");
  assert.equal(parseFormat("pretty"), "pretty");
  assert.equal(parseFormat("table"), undefined);
  assert.equal(apiErrorText(new ApiError(500, "boom\n")), "Unexpected response code: 500 (boom)");
  assert.equal(apiErrorText("plain"), "plain");
});
