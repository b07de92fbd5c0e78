// A tiny in-memory stand-in for an agent's /v1/kv, /v1/txn, /v1/status and
// /v1/agent/self, as a fetch function. For tests of core/api and cli/ only:
// it follows Consul's wire shapes, not its consistency rules.
import { decodeBase64, encodeBase64 } from "./base64.ts";

interface Entry {
  key: string;
  value: Uint8Array;
  flags: number;
  createIndex: number;
  modifyIndex: number;
  lockIndex: number;
  session?: string;
}

export interface FakeRequestRecord {
  method: string;
  path: string;
  params: URLSearchParams;
  token: string | null;
  body: string;
}

export class FakeAgent {
  readonly kv = new Map<string, Entry>();
  readonly requests: FakeRequestRecord[] = [];
  index = 1;
  /** Status to answer every request with, to simulate failures. */
  failWith?: { status: number; body: string };
  leader = "127.0.0.1:8300";

  /** Seed a key directly. */
  set(key: string, value: string | Uint8Array, flags = 0): void {
    this.#write(key, typeof value === "string" ? new TextEncoder().encode(value) : value, flags);
  }

  getText(key: string): string | undefined {
    const e = this.kv.get(key);
    return e ? new TextDecoder().decode(e.value) : undefined;
  }

  /** Use as `fetch`. */
  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    this.requests.push({
      method: req.method,
      path: decodeURIComponent(url.pathname),
      params: url.searchParams,
      token: req.headers.get("X-Consul-Token"),
      body: new TextDecoder().decode(body),
    });
    if (this.failWith) return new Response(this.failWith.body, { status: this.failWith.status });
    const path = url.pathname;
    if (path.startsWith("/v1/kv/")) return this.#kvRoute(req.method, decodeURIComponent(path.slice(7)), url.searchParams, body);
    if (path === "/v1/txn" && req.method === "PUT") return this.#txn(body);
    if (path === "/v1/status/leader") return this.#json(this.leader);
    if (path === "/v1/status/peers") return this.#json([this.leader]);
    if (path === "/v1/agent/self") return this.#json({ Config: { NodeName: "fake", Datacenter: "dc1" }, Member: {} });
    return new Response(`Invalid URL path: not a recognized HTTP API endpoint`, { status: 404 });
  };

  #json(data: unknown, status = 200): Response {
    return new Response(JSON.stringify(data), {
      status,
      headers: { "Content-Type": "application/json", "X-Consul-Index": String(this.index), "X-Consul-KnownLeader": "true" },
    });
  }

  #wire(e: Entry): Record<string, unknown> {
    return {
      LockIndex: e.lockIndex,
      Key: e.key,
      Flags: e.flags,
      Value: e.value.length ? encodeBase64(e.value) : null,
      Session: e.session,
      CreateIndex: e.createIndex,
      ModifyIndex: e.modifyIndex,
    };
  }

  #write(key: string, value: Uint8Array, flags: number): Entry {
    this.index++;
    const prev = this.kv.get(key);
    const e: Entry = {
      key,
      value,
      flags,
      createIndex: prev?.createIndex ?? this.index,
      modifyIndex: this.index,
      lockIndex: prev?.lockIndex ?? 0,
      session: prev?.session,
    };
    this.kv.set(key, e);
    return e;
  }

  #sorted(prefix: string): Entry[] {
    return [...this.kv.values()].filter((e) => e.key.startsWith(prefix)).sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  #kvRoute(method: string, key: string, params: URLSearchParams, body: Uint8Array): Response {
    if (method === "GET") {
      if (params.has("keys")) {
        const sep = params.get("separator") ?? "";
        const out = new Set<string>();
        for (const e of this.#sorted(key)) {
          const rest = e.key.slice(key.length);
          const i = sep ? rest.indexOf(sep) : -1;
          out.add(i >= 0 ? key + rest.slice(0, i + sep.length) : e.key);
        }
        return out.size ? this.#json([...out]) : new Response("", { status: 404 });
      }
      if (params.has("recurse")) {
        const list = this.#sorted(key);
        return list.length ? this.#json(list.map((e) => this.#wire(e))) : new Response("", { status: 404 });
      }
      const e = this.kv.get(key);
      if (!e) return new Response("", { status: 404, headers: { "X-Consul-Index": String(this.index) } });
      if (params.has("raw")) return new Response(e.value as BodyInit);
      return this.#json([this.#wire(e)]);
    }
    if (method === "PUT") {
      const flags = Number(params.get("flags") ?? 0);
      if (params.has("cas")) {
        const cas = Number(params.get("cas"));
        const cur = this.kv.get(key);
        if ((cas === 0 && cur) || (cas !== 0 && cur?.modifyIndex !== cas)) return this.#json(false);
      }
      const acquire = params.get("acquire");
      if (acquire) {
        const cur = this.kv.get(key);
        if (cur?.session && cur.session !== acquire) return this.#json(false);
        const e = this.#write(key, body, flags);
        if (e.session !== acquire) e.lockIndex++;
        e.session = acquire;
        return this.#json(true);
      }
      const release = params.get("release");
      if (release) {
        const cur = this.kv.get(key);
        if (cur?.session !== release) return this.#json(false);
        const e = this.#write(key, body, flags);
        delete e.session;
        return this.#json(true);
      }
      this.#write(key, body, flags);
      return this.#json(true);
    }
    if (method === "DELETE") {
      if (params.has("cas")) {
        const cur = this.kv.get(key);
        if (!cur || cur.modifyIndex !== Number(params.get("cas"))) return this.#json(false);
      }
      this.index++;
      if (params.has("recurse")) for (const e of this.#sorted(key)) this.kv.delete(e.key);
      else this.kv.delete(key);
      return this.#json(true);
    }
    return new Response("method not allowed", { status: 405 });
  }

  #txn(body: Uint8Array): Response {
    let ops: { KV: { Verb: string; Key: string; Value?: string; Flags?: number; Index?: number } }[];
    try {
      ops = JSON.parse(new TextDecoder().decode(body));
    } catch {
      return new Response("Failed to parse body", { status: 400 });
    }
    if (!Array.isArray(ops)) return new Response("Failed to parse body", { status: 400 });
    if (ops.length > 128) return new Response(`Transaction contains too many operations (${ops.length} > 128)`, { status: 413 });
    // Check every condition first, then apply: all or nothing.
    const errors: { OpIndex: number; What: string }[] = [];
    ops.forEach((op, i) => {
      const cur = this.kv.get(op.KV.Key);
      if (op.KV.Verb === "cas" && (op.KV.Index ?? 0) !== (cur?.modifyIndex ?? 0)) {
        errors.push({ OpIndex: i, What: `failed to set key "${op.KV.Key}", index is stale` });
      }
      if (op.KV.Verb === "check-not-exists" && cur) errors.push({ OpIndex: i, What: `key "${op.KV.Key}" exists` });
      if ((op.KV.Verb === "set" || op.KV.Verb === "cas") && op.KV.Value !== undefined && !decodeBase64(op.KV.Value)) {
        errors.push({ OpIndex: i, What: "bad base64" });
      }
    });
    if (errors.length) return this.#json({ Results: null, Errors: errors }, 409);
    const results: unknown[] = [];
    for (const op of ops) {
      const { Verb, Key } = op.KV;
      if (Verb === "set" || Verb === "cas") {
        const e = this.#write(Key, decodeBase64(op.KV.Value ?? "") ?? new Uint8Array(), op.KV.Flags ?? 0);
        results.push({ KV: { ...this.#wire(e), Value: null } });
      } else if (Verb === "delete") {
        this.kv.delete(Key);
      } else if (Verb === "delete-tree") {
        for (const e of this.#sorted(Key)) this.kv.delete(e.key);
      } else if (Verb === "get") {
        const e = this.kv.get(Key);
        if (e) results.push({ KV: this.#wire(e) });
      }
    }
    return this.#json({ Results: results, Errors: null });
  }
}
