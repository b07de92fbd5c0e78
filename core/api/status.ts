// /v1/status, as consul api/status.go.
import type { ApiClient, QueryOptions } from "./client.ts";

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(`Invalid JSON from agent for ${what}: ${text.slice(0, 200)}`);
  }
}

export class Status {
  #c: ApiClient;
  constructor(client: ApiClient) {
    this.#c = client;
  }

  /** The leader's server RPC address (`10.0.0.1:8300`), or "" when there is none. */
  async leader(q?: QueryOptions): Promise<string> {
    const r = await this.#c.request({ method: "GET", path: "/v1/status/leader", query: q });
    const data = parseJson(r.text, "status/leader");
    if (typeof data !== "string") throw new TypeError("Invalid response from agent for status/leader: expected a string");
    return data;
  }

  /** The Raft peers' server RPC addresses. */
  async peers(q?: QueryOptions): Promise<string[]> {
    const r = await this.#c.request({ method: "GET", path: "/v1/status/peers", query: q });
    const data = parseJson(r.text, "status/peers");
    if (!Array.isArray(data) || data.some((p) => typeof p !== "string")) {
      throw new TypeError("Invalid response from agent for status/peers: expected a list of strings");
    }
    return data as string[];
  }
}
