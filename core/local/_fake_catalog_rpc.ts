// Test support: an in-memory catalog behind the Rpc interface, just the
// methods anti-entropy and alias checks use. Records calls; can fail the
// next N calls (no leader) to test retries.
import { NoLeaderError } from "../errors.ts";
import type { HealthCheck, Node, NodeService, Rpc, RpcArgs, RpcMethod, RpcReply } from "../rpc/mod.ts";

export class FakeCatalogRpc implements Rpc {
  readonly nodes = new Map<string, Node>();
  readonly services = new Map<string, Map<string, NodeService>>();
  readonly checks = new Map<string, Map<string, HealthCheck>>();
  readonly calls: Array<{ method: RpcMethod; args: unknown }> = [];
  index = 1;
  /** The next this-many calls throw NoLeaderError. */
  failCalls = 0;
  /** An error to throw instead of answering this call (ACL refusals), or undefined to answer it. */
  refuse: ((method: RpcMethod, args: unknown) => Error | undefined) | undefined;

  async call<M extends RpcMethod>(method: M, args: RpcArgs<M>): Promise<RpcReply<M>> {
    this.calls.push({ method, args: structuredClone(args) });
    if (this.failCalls > 0) {
      this.failCalls--;
      throw new NoLeaderError();
    }
    const refusal = this.refuse?.(method, args);
    if (refusal) throw refusal;
    return this.#dispatch(method, args as never) as RpcReply<M>;
  }

  count(method: RpcMethod): number {
    return this.calls.filter((c) => c.method === method).length;
  }

  #meta() {
    return { index: this.index, knownLeader: true, lastContactMs: 0, consistencyLevel: "leader" as const };
  }

  /** Put a check straight into the catalog (as a server would: serfHealth, drift). */
  putCheck(node: string, c: Partial<HealthCheck> & { checkId: string }): void {
    if (!this.checks.has(node)) this.checks.set(node, new Map());
    this.checks.get(node)!.set(c.checkId, {
      node, name: c.checkId, status: "passing", notes: "", output: "", serviceId: "", serviceName: "", serviceTags: [], type: "",
      interval: "", timeout: "", definition: {}, createIndex: this.index, modifyIndex: this.index, ...c,
    });
    this.index++;
  }

  putService(node: string, s: Partial<NodeService> & { id: string; service: string }): void {
    if (!this.services.has(node)) this.services.set(node, new Map());
    this.services.get(node)!.set(s.id, {
      kind: "", tags: [], address: "", taggedAddresses: {}, meta: {}, port: 0, weights: { passing: 1, warning: 1 }, enableTagOverride: false,
      createIndex: this.index, modifyIndex: this.index, ...s,
    });
    this.index++;
  }

  #dispatch(method: RpcMethod, args: never): unknown {
    switch (method) {
      case "Catalog.Register": {
        const a = args as RpcArgs<"Catalog.Register">;
        const idx = ++this.index;
        const prev = this.nodes.get(a.node);
        if (!prev || !a.skipNodeUpdate) {
          this.nodes.set(a.node, {
            id: a.id ?? "", node: a.node, address: a.address, datacenter: "dc1", taggedAddresses: a.taggedAddresses ?? {}, meta: a.nodeMeta ?? {},
            createIndex: prev?.createIndex ?? idx, modifyIndex: idx,
          });
        }
        if (a.service) {
          const s = a.service;
          this.putService(a.node, {
            kind: s.kind ?? "", id: s.id ?? s.service, service: s.service, tags: s.tags ?? [], address: s.address ?? "",
            taggedAddresses: s.taggedAddresses ?? {}, meta: s.meta ?? {}, port: s.port ?? 0, weights: s.weights ?? { passing: 1, warning: 1 },
            enableTagOverride: s.enableTagOverride ?? false,
          });
        }
        for (const c of [...(a.check ? [a.check] : []), ...(a.checks ?? [])]) {
          const svc = c.serviceId ? this.services.get(a.node)?.get(c.serviceId) : undefined;
          this.putCheck(a.node, {
            checkId: c.checkId ?? c.name, name: c.name, status: c.status ?? "critical", notes: c.notes ?? "", output: c.output ?? "",
            serviceId: c.serviceId ?? "", serviceName: svc?.service ?? "", serviceTags: svc?.tags ?? [], type: c.type ?? "",
            interval: c.interval ?? "", timeout: c.timeout ?? "", definition: c.definition ?? {},
          });
        }
        return { index: idx };
      }
      case "Catalog.Deregister": {
        const a = args as RpcArgs<"Catalog.Deregister">;
        if (a.serviceId) {
          this.services.get(a.node)?.delete(a.serviceId);
          for (const [id, c] of this.checks.get(a.node) ?? []) if (c.serviceId === a.serviceId) this.checks.get(a.node)!.delete(id);
        } else if (a.checkId) this.checks.get(a.node)?.delete(a.checkId);
        else {
          this.nodes.delete(a.node);
          this.services.delete(a.node);
          this.checks.delete(a.node);
        }
        return { index: ++this.index };
      }
      case "Catalog.NodeServices": {
        const a = args as RpcArgs<"Catalog.NodeServices">;
        const node = this.nodes.get(a.node);
        return { nodeServices: node ? { node, services: [...(this.services.get(a.node)?.values() ?? [])] } : null, meta: this.#meta() };
      }
      case "Health.NodeChecks": {
        const a = args as RpcArgs<"Health.NodeChecks">;
        return { checks: [...(this.checks.get(a.node)?.values() ?? [])], meta: this.#meta() };
      }
      default:
        throw new Error(`fake catalog rpc: no method "${method}"`);
    }
  }
}
