import assert from "node:assert/strict";
import { test } from "node:test";
import { testBackends } from "../core/http/_test_env.ts";
import { Router } from "../core/http/router.ts";
import { createRoutes } from "../core/http/routes.ts";
import { makeRequest } from "../core/http/types.ts";
import { testIo } from "./_testing.ts";
import { runCli } from "./run.ts";

function cliAgainst(router: Router) {
  return async (...argv: string[]) => {
    const io = testIo();
    io.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const req = new Request(input, init);
      const url = new URL(req.url);
      const r = await router.handle(makeRequest(req.method, `${url.pathname}${url.search}`, {}));
      return new Response(typeof r.body === "string" ? r.body : r.body.slice(), { status: r.status, headers: r.headers });
    }) as typeof fetch;
    const code = await runCli(argv, io);
    return { code, out: io.stdoutText, err: io.stderrText };
  };
}

test("info: Stats sections and keys sorted, tab-indented key = value lines", async () => {
  const agent = { datacenter: "dc1", nodeName: "n1", nodeId: "x", server: true, version: "0.1.0", revision: "", advertiseAddr: "127.0.0.1", serfLanPort: 8301 };
  const stats = () => ({
    raft: { term: "3", state: "Leader" },
    agent: { services: "2", checks: "1" },
    consul: { server: "true", leader: "true" },
  });
  const cli = cliAgainst(createRoutes(testBackends({ agent: { ...agent, stats } })));
  const r = await cli("info");
  assert.equal(r.code, 0, r.err);
  assert.equal(r.out, "agent:\n\tchecks = 1\n\tservices = 2\nconsul:\n\tleader = true\n\tserver = true\nraft:\n\tstate = Leader\n\tterm = 3\n");
  assert.equal((await cli("info", "extra")).code, 1);
});

test("info: an unreachable agent is an error with exit 1", async () => {
  const r = await cliAgainst(new Router([]))("info");
  assert.equal(r.code, 1);
  assert.match(r.err, /^Error querying agent: /);
});
