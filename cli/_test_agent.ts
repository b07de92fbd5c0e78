// For command tests that need a real agent: an in-process dev agent on free
// ports, started before the file's tests and stopped after them.
import { after, before } from "node:test";
import { startAgent, type RunningAgent } from "../core/agent/agent.ts";
import { ApiClient } from "../core/api/client.ts";
import { buildConfig } from "../core/config/mod.ts";
import { FanoutSink } from "../core/log/mod.ts";
import { testIo, type TestIo } from "./_testing.ts";

export interface TestAgent {
  /** "127.0.0.1:port" of the agent's HTTP API (valid once `before` ran). */
  readonly addr: string;
  readonly api: ApiClient;
  /** A CLI io pointed at the agent over real HTTP. */
  io(): TestIo;
}

export function useDevAgent(nodeName: string): TestAgent {
  let agent: RunningAgent | undefined;
  let addr = "";
  let api: ApiClient | undefined;
  before(async () => {
    const config = buildConfig({ dev: true, flags: { ports: { http: 0, dns: -1, serfLan: 0, serfWan: 0, server: 0 }, nodeName } });
    agent = await startAgent(config, { io: { stdout() {}, stderr() {} }, logSink: new FanoutSink() });
    addr = `127.0.0.1:${agent.httpAddr!.port}`;
    api = new ApiClient({ address: addr });
  });
  after(async () => {
    await agent?.stop();
  });
  return {
    get addr() { return addr; },
    get api() { return api!; },
    io() {
      const t = testIo({ env: { CONSUL_HTTP_ADDR: addr } });
      delete (t as { fetch?: typeof fetch }).fetch;
      return t;
    },
  };
}
