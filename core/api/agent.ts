// /v1/agent, as consul api/agent.go (the parts the CLI uses so far).
import type { ApiClient } from "./client.ts";

/** `Config`, `Member`, `Stats`, `Meta`… exactly as the agent sends them. */
export type AgentSelf = Record<string, Record<string, unknown>>;

export class Agent {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  async self(): Promise<AgentSelf> {
    const r = await this.#c.request({ method: "GET", path: "/v1/agent/self" });
    let data: unknown;
    try {
      data = JSON.parse(r.text);
    } catch {
      throw new TypeError(`Invalid JSON from agent for agent/self: ${r.text.slice(0, 200)}`);
    }
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new TypeError("Invalid response from agent for agent/self: expected an object");
    }
    return data as AgentSelf;
  }
}
