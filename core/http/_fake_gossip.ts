// Test support: in-memory gossip pools and keyring with scripted answers.
// They fit the HTTP backends, and the agent's own pool interface too (user
// events subscribe and fire through them).
import type { Coordinate } from "../gossip/coordinate.ts";
import type { GossipBackend, GossipPoolBackend, KeyringBackend, KeyringPoolResponse, PoolMember } from "./backends.ts";

type PoolName = "lan" | "wan";
type PoolUserEvent = { lTime: number; name: string; payload: Uint8Array; coalesce: boolean };

export function fakeMember(name: string, options: Partial<PoolMember> = {}): PoolMember {
  return {
    name,
    addr: "127.0.0.1",
    port: 8301,
    tags: { role: "node", dc: "dc1", vsn: "2", build: "0.1.0:abcdef12", segment: "" },
    status: "alive",
    protocolMin: 1,
    protocolMax: 5,
    protocolCur: 2,
    delegateMin: 2,
    delegateMax: 5,
    delegateCur: 4,
    ...options,
  };
}

export class FakePool implements GossipPoolBackend {
  readonly name: PoolName;
  list: PoolMember[];
  joins: string[][] = [];
  joinResult: { joined: number; errors: string[] } = { joined: 1, errors: [] };
  forceLeaves: Array<{ node: string; prune: boolean }> = [];
  left = false;
  fired: Array<{ name: string; payload: Uint8Array }> = [];
  coords = new Map<string, Coordinate>();
  #userSubs = new Set<(e: PoolUserEvent) => void>();
  #lTime = 0;

  constructor(name: PoolName, members: PoolMember[]) {
    this.name = name;
    this.list = members;
  }
  members(): PoolMember[] {
    return this.list.slice();
  }
  localMember(): PoolMember {
    return this.list[0]!;
  }
  onMemberEvent(_fn: (e: { type: "join" | "leave" | "failed" | "update" | "reap"; members: PoolMember[] }) => void): () => void {
    return () => {};
  }
  onUserEvent(fn: (e: PoolUserEvent) => void): () => void {
    this.#userSubs.add(fn);
    return () => this.#userSubs.delete(fn);
  }
  /** Deliver a user event as if gossip brought it. */
  deliver(name: string, payload: Uint8Array): void {
    const e = { lTime: ++this.#lTime, name, payload, coalesce: false };
    for (const fn of this.#userSubs) fn(e);
  }
  async join(addrs: string[]): Promise<{ joined: number; errors: string[] }> {
    this.joins.push(addrs);
    return this.joinResult;
  }
  async leave(): Promise<void> {
    this.left = true;
  }
  async forceLeave(node: string, options: { prune?: boolean } = {}): Promise<void> {
    if (!this.list.some((m) => m.name === node)) throw new Error(`No node found with name '${node}'`);
    this.forceLeaves.push({ node, prune: !!options.prune });
  }
  setTags(): void {}
  userEvent(name: string, payload: Uint8Array): void {
    this.fired.push({ name, payload });
    this.deliver(name, payload);
  }
  coordinate(): Coordinate | undefined {
    return this.coords.get(this.list[0]!.name);
  }
  coordinates(): Array<{ node: string; coord: Coordinate }> {
    return [...this.coords].map(([node, coord]) => ({ node, coord }));
  }
  stats(): Record<string, number | string> {
    return { members: this.list.length, packetsGarbage: 3 };
  }
  async stop(): Promise<void> {}
}

export class FakeKeyring implements KeyringBackend {
  enabled = true;
  calls: string[] = [];
  answer: KeyringPoolResponse[] = [
    { wan: false, datacenter: "dc1", segment: "", keys: { "K1==": 2 }, primaryKeys: { "K1==": 2 }, numNodes: 2, messages: {} },
  ];
  async list(): Promise<KeyringPoolResponse[]> {
    this.calls.push("list");
    return this.answer;
  }
  async install(key: string): Promise<KeyringPoolResponse[]> {
    this.calls.push(`install ${key}`);
    return this.answer;
  }
  async use(key: string): Promise<KeyringPoolResponse[]> {
    this.calls.push(`use ${key}`);
    return this.answer;
  }
  async remove(key: string): Promise<KeyringPoolResponse[]> {
    this.calls.push(`remove ${key}`);
    return this.answer;
  }
}

export function fakeGossip(options: { wan?: boolean } = {}): GossipBackend & { lan: FakePool; wan?: FakePool; keyring: FakeKeyring; stop(): Promise<void> } {
  const lan = new FakePool("lan", [fakeMember("n1"), fakeMember("n2", { status: "failed", port: 8311 })]);
  const wan = options.wan ? new FakePool("wan", [fakeMember("n1.dc1", { tags: { role: "consul", dc: "dc1" }, port: 8302 })]) : undefined;
  return {
    lan,
    wan,
    keyring: new FakeKeyring(),
    async leave() {
      await wan?.leave();
      await lan.leave();
    },
    async stop() {},
  };
}
