// Shared set-up for core/http tests: the whole route table over fakes (a
// FakeRpc on a SimClock, fake gossip, local agent, events and operator RPC).
import { FanoutSink, RecentSink } from "../log/mod.ts";
import { Metrics } from "../metrics/metrics.ts";
import { SimClock } from "../sim/sim_clock.ts";
import { FakeLocalAgent, FakeUserEvents, fakeOperator } from "./_fake_backends.ts";
import { fakeGossip } from "./_fake_gossip.ts";
import { FakeRpc } from "./_fake_rpc.ts";
import type { AgentInfo } from "./agent.ts";
import type { HttpBackends } from "./backends.ts";
import type { Router } from "./router.ts";
import { createRoutes } from "./routes.ts";
import { makeRequest, type HttpResponse } from "./types.ts";

export const testAgent: AgentInfo = {
  datacenter: "dc1",
  nodeName: "node-a",
  nodeId: "5f7a3c1e-0d2b-4c8e-9a61-3b7f0e2d9c44",
  server: true,
  version: "0.1.0",
  revision: "abc123",
  advertiseAddr: "127.0.0.1",
  serfLanPort: 8301,
};

export interface TestEnv {
  clock: SimClock;
  rpc: FakeRpc;
  router: Router;
  req(method: string, target: string, options?: { body?: Uint8Array | string; headers?: Record<string, string>; signal?: AbortSignal }): Promise<HttpResponse>;
}

/** Every backend createRoutes needs, faked; `overrides` replaces any of them. */
export function testBackends(overrides: Partial<HttpBackends> = {}): HttpBackends {
  const clock = overrides.clock ?? new SimClock();
  return {
    rpc: new FakeRpc(clock),
    agent: testAgent,
    local: new FakeLocalAgent(),
    gossip: fakeGossip(),
    events: new FakeUserEvents(clock),
    operator: fakeOperator(),
    monitor: { sink: new FanoutSink(), recent: new RecentSink() },
    metrics: new Metrics({ now: () => clock.now(), wallNow: () => clock.wallNow() }),
    prometheus: false,
    ...overrides,
    clock,
  };
}

export function testEnv(): TestEnv {
  const clock = new SimClock();
  const rpc = new FakeRpc(clock);
  const router = createRoutes(testBackends({ rpc, clock }));
  return { clock, rpc, router, req: (method, target, options) => router.handle(makeRequest(method, target, options)) };
}

export function bodyText(r: HttpResponse): string {
  return typeof r.body === "string" ? r.body : new TextDecoder().decode(r.body);
}

export function bodyJson(r: HttpResponse): unknown {
  return JSON.parse(bodyText(r));
}

/** Let pending promise callbacks run (no real time passes). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}
