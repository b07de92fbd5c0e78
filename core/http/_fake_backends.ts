// Test support: small in-memory stand-ins for the local agent, user events
// and the operator RPC, as HttpBackends declares them.
import type { Clock } from "../clock/mod.ts";
import { BadRequestError } from "../errors.ts";
import type { CheckDefinition, HealthStatus, LocalCheck, LocalService, ServiceDefinition } from "../service_defs/mod.ts";
import type { OperatorRaftRpc } from "../rpc/mod.ts";
import type { LocalAgentBackend, LocalStateView, UserEvent, UserEventsBackend } from "./backends.ts";

/** A local agent whose state the test sets; every operation is recorded, none changes the state. */
export class FakeLocalAgent implements LocalAgentBackend {
  services: LocalService[] = [];
  checks: LocalCheck[] = [];
  calls: string[] = [];
  syncs = 0;
  readonly state: LocalStateView = {
    services: () => this.services.slice(),
    service: (id) => this.services.find((s) => s.id === id),
    servicesByName: (name) => this.services.filter((s) => s.service === name),
    checks: () => this.checks.slice(),
    checksForService: (id, includeNode) => this.checks.filter((c) => c.serviceId === id || (includeNode && c.serviceId === "")),
    onChange: () => () => {},
  };

  addService(def: ServiceDefinition): void {
    this.calls.push(`addService ${def.service.service}`);
  }
  removeService(id: string): void {
    this.calls.push(`removeService ${id}`);
  }
  addCheck(def: CheckDefinition): void {
    this.calls.push(`addCheck ${def.name}`);
  }
  removeCheck(id: string): void {
    this.calls.push(`removeCheck ${id}`);
  }
  updateTtlCheck(id: string, status: HealthStatus, output: string): void {
    this.calls.push(`updateTtlCheck ${id} ${status} ${output}`);
  }
  enableServiceMaintenance(id: string, reason: string): void {
    this.calls.push(`enableServiceMaintenance ${id} ${reason}`);
  }
  disableServiceMaintenance(id: string): void {
    this.calls.push(`disableServiceMaintenance ${id}`);
  }
  enableNodeMaintenance(reason: string): void {
    this.calls.push(`enableNodeMaintenance ${reason}`);
  }
  disableNodeMaintenance(): void {
    this.calls.push("disableNodeMaintenance");
  }
  async syncChanges(): Promise<void> {
    this.syncs++;
  }
}

/** User events kept in a list; `deliver` adds one as if gossip brought it and wakes waiters. */
export class FakeUserEvents implements UserEventsBackend {
  events: UserEvent[] = [];
  readonly #clock: Clock;
  readonly #waiters = new Set<() => void>();
  #next = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  fire(params: { name: string; payload: Uint8Array | null; nodeFilter?: string; serviceFilter?: string; tagFilter?: string }): UserEvent {
    if (params.tagFilter && !params.serviceFilter) throw new BadRequestError("Cannot provide tag filter without service filter");
    const e = this.#event(params.name, params.payload);
    Object.assign(e, { nodeFilter: params.nodeFilter ?? "", serviceFilter: params.serviceFilter ?? "", tagFilter: params.tagFilter ?? "" });
    return e;
  }

  /** Events fired into other datacenters, with the datacenter. */
  firedIn: Array<{ datacenter: string; event: UserEvent }> = [];

  async fireIn(datacenter: string, params: { name: string; payload: Uint8Array | null; nodeFilter?: string; serviceFilter?: string; tagFilter?: string }): Promise<UserEvent> {
    const event = this.fire(params);
    this.firedIn.push({ datacenter, event });
    return event;
  }

  deliver(name: string, payload: Uint8Array | null = null): UserEvent {
    const e = this.#event(name, payload);
    this.events.push(e);
    for (const w of [...this.#waiters]) w();
    return e;
  }

  list(): UserEvent[] {
    return this.events.slice();
  }

  waitUntil(changed: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        timer.cancel();
        this.#waiters.delete(check);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const check = (): void => {
        if (changed()) done();
      };
      const timer = this.#clock.setTimer(timeoutMs, done);
      this.#waiters.add(check);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  #event(name: string, payload: Uint8Array | null): UserEvent {
    const n = ++this.#next;
    const id = `00000000-0000-0000-0000-${n.toString(16).padStart(12, "0")}`;
    return { id, name, payload, nodeFilter: "", serviceFilter: "", tagFilter: "", version: 1, lTime: n };
  }
}

/** An operator RPC that records calls and answers `reply(method, args)` (default: `{}`). */
export function fakeOperator(reply: (method: string, args: unknown) => Promise<unknown> = () => Promise.resolve({})): OperatorRaftRpc & { calls: Array<{ method: string; args: unknown }> } {
  const calls: Array<{ method: string; args: unknown }> = [];
  return {
    calls,
    callRaw(method, args) {
      calls.push({ method, args });
      return reply(method, args);
    },
  };
}
