// Shared set-up for core/http tests: routes over a FakeRpc on a SimClock.
import { SimClock } from "../sim/sim_clock.ts";
import { FakeRpc } from "./_fake_rpc.ts";
import type { AgentInfo } from "./agent.ts";
import { createRoutes, type Router } from "./routes.ts";
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

export function testEnv(): TestEnv {
  const clock = new SimClock();
  const rpc = new FakeRpc(clock);
  const router = createRoutes({ rpc, agent: testAgent });
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
