// The `watches` list: decoded into typed watches, refused with Consul's message, the file and the line.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../errors.ts";
import { parseConfigText } from "./load.ts";

test("watches: HCL and JSON entries become typed watches with Consul's defaults", () => {
  const hcl = parseConfigText(
    `watches = [
  { type = "key", key = "app/cfg", args = ["/bin/handler", "-x"], stale = true },
  { type = "service", service = "web", tag = "v1", passingonly = true, handler = "echo hi", token = "t", datacenter = "dc2" },
  {
    type = "event"
    name = "deploy"
    handler_type = "http"
    http_handler_config { path = "http://127.0.0.1:9/hook"  header = { x-a = ["1", "2"] }  timeout = "3s" }
  },
]`,
    { file: "w.hcl", format: "hcl" },
  );
  assert.deepEqual(hcl.watches, [
    { type: "key", handlerType: "script", stale: true, key: "app/cfg", args: ["/bin/handler", "-x"] },
    { type: "service", handlerType: "script", datacenter: "dc2", token: "t", service: "web", tag: ["v1"], passingonly: true, handler: "echo hi" },
    {
      type: "event",
      handlerType: "http",
      name: "deploy",
      httpHandlerConfig: { path: "http://127.0.0.1:9/hook", method: "POST", header: { "x-a": ["1", "2"] }, timeoutMs: 3_000, tlsSkipVerify: false },
    },
  ]);
  const json = parseConfigText(JSON.stringify({ watches: [{ type: "checks", state: "critical", args: ["h"] }] }), { file: "w.json", format: "json" });
  assert.deepEqual(json.watches, [{ type: "checks", handlerType: "script", state: "critical", args: ["h"] }]);
});

test("watches: a bad watch is an error naming the file, the entry, the line and Consul's reason", () => {
  const cases: Array<[string, RegExp]> = [
    [`{ "watches": [{ "type": "bogus", "args": ["h"] }] }`, /Invalid watch "watches\[0\]" in "w.json" at line 1: Unsupported watch type: bogus/],
    [`{ "watches": [{ "args": ["h"] }] }`, /Watch type must be specified/],
    [`{ "watches": [{ "type": "key", "key": "k" }] }`, /Must define a watch handler/],
    [`{ "watches": [{ "type": "key", "args": ["h"] }] }`, /Must specify a single key to watch/],
    [`{ "watches": [{ "type": "key", "key": "k", "args": ["h"], "handler": "h" }] }`, /Only one watch handler allowed/],
    [`{ "watches": [{ "type": "nodes", "key": "k", "args": ["h"] }] }`, /Invalid parameters: \[key\]/],
    [`{ "watches": [{ "type": "nodes", "handler_type": "email", "args": ["h"] }] }`, /Handler type 'email' not recognized/],
    [`{ "watches": [{ "type": "nodes", "handler_type": "http" }] }`, /requires 'http_handler_config' to be set/],
    [`{ "watches": [{ "type": "nodes", "handler_type": "http", "http_handler_config": { "method": "PUT" } }] }`, /Requires 'path' to be set/],
    [`{ "watches": [{ "type": "connect_roots", "args": ["h"] }] }`, /Watch type connect_roots is not allowed in agent config/],
    [`{ "watches": [{ "type": "checks", "service": "a", "state": "any", "args": ["h"] }] }`, /Cannot specify service and state/],
  ];
  for (const [text, want] of cases) {
    assert.throws(() => parseConfigText(text, { file: "w.json", format: "json" }), (err: unknown) => {
      assert.ok(err instanceof ConfigError, String(err));
      assert.match(err.message, want);
      return true;
    });
  }
  assert.throws(
    () => parseConfigText(`watches = [\n  { type = "nodes", args = ["h"] },\n  {\n    type = "wat"\n    args = ["h"]\n  },\n]`, { file: "w.hcl", format: "hcl" }),
    /Invalid watch "watches\[1\]" in "w.hcl" at line 4: Unsupported watch type: wat/,
  );
});
