// Which server of another datacenter a request goes to (consul
// agent/router/router.go and manager.go), pure: the WAN pool's servers by
// datacenter, each datacenter's list in a shuffled order that a failed call
// changes by moving that server to the back (Manager.NotifyFailedServer), so
// the next request starts with another one. The list is rebuilt only when the
// WAN membership changes (`invalidate`); servers kept across a rebuild keep
// their place, new ones go to random places.

import type { Rng } from "../sim/rng.ts";

/** A server in the WAN pool, as its gossip tags describe it. */
export interface WanServer {
  /** WAN member name, `<node>.<dc>`. */
  name: string;
  datacenter: string;
  /** Server RPC address "host:port". */
  address: string;
  /** The member's gossip status: alive, suspect (still tried), failed, left. */
  status: string;
}

export interface WanRoutesOptions {
  localDatacenter: string;
  /** The WAN pool's servers now (every status). */
  servers: () => readonly WanServer[];
  rng: Rng;
}

/** What routing a request to `dc` finds. */
export type WanRoute =
  | { kind: "unknown" }
  /** Known (some member of it is in the pool) but no server there is alive. */
  | { kind: "unavailable" }
  | { kind: "servers"; addresses: readonly string[] };

export class WanRoutes {
  readonly #o: WanRoutesOptions;
  /** Each datacenter the pool knows, with its live servers in the order to try them. */
  #byDc: Map<string, string[]> | undefined;
  /** The lists before the last invalidate: kept servers keep their place. */
  #prev: Map<string, string[]> | undefined;

  constructor(options: WanRoutesOptions) {
    this.#o = options;
  }

  /** The WAN membership changed: rebuild the lists on the next request. */
  invalidate(): void {
    if (this.#byDc) this.#prev = this.#byDc;
    this.#byDc = undefined;
  }

  /** Servers of `dc` to try, in order (the first is the one to use). */
  route(dc: string): WanRoute {
    const order = this.#table().get(dc);
    if (!order) return { kind: "unknown" };
    if (order.length === 0) return { kind: "unavailable" };
    return { kind: "servers", addresses: order };
  }

  /** A call to `address` in `dc` failed: try it last from now on. */
  failed(dc: string, address: string): void {
    const table = this.#table();
    const order = table.get(dc);
    if (!order) return;
    const i = order.indexOf(address);
    if (i < 0 || i === order.length - 1) return;
    table.set(dc, [...order.slice(0, i), ...order.slice(i + 1), address]);
  }

  /** The datacenter of a server address the WAN pool knows (TLS checks its certificate against server.<dc>.<domain>). */
  datacenterOf(address: string): string | undefined {
    const dc = this.#o.servers().find((s) => s.address === address)?.datacenter;
    return dc === "" ? undefined : dc;
  }

  /** Every datacenter the WAN pool knows (with or without a live server), and ours. */
  datacenters(): string[] {
    const out = new Set<string>([this.#o.localDatacenter]);
    for (const dc of this.#table().keys()) out.add(dc);
    return [...out];
  }

  #table(): Map<string, string[]> {
    if (this.#byDc) return this.#byDc;
    const table = new Map<string, string[]>();
    const live = new Map<string, string[]>();
    for (const s of this.#o.servers()) {
      if (s.datacenter === "") continue;
      if (!table.has(s.datacenter)) table.set(s.datacenter, []);
      // A suspect server may still answer: Consul's router drops a server only once Serf says failed or left.
      if (s.status === "alive" || s.status === "suspect") {
        const list = live.get(s.datacenter) ?? [];
        if (!list.includes(s.address)) list.push(s.address);
        live.set(s.datacenter, list);
      }
    }
    for (const [dc, addresses] of live) {
      const kept = (this.#prev?.get(dc) ?? []).filter((a) => addresses.includes(a));
      const fresh = this.#o.rng.shuffle(addresses.filter((a) => !kept.includes(a)));
      const order = [...kept];
      for (const a of fresh) order.splice(this.#o.rng.int(order.length + 1), 0, a);
      table.set(dc, order);
    }
    this.#prev = undefined;
    this.#byDc = table;
    return table;
  }
}

/**
 * Datacenters nearest first (consul router.GetDatacentersByDistance): the
 * local one, then by the median estimated round trip from this server to the
 * servers of each, then by name. A datacenter without coordinates sorts last.
 */
export function datacentersByDistance(
  local: string,
  servers: readonly { name: string; datacenter: string }[],
  rttMs: (node: string) => number | undefined,
): string[] {
  const rtts = new Map<string, number[]>();
  for (const s of servers) {
    if (s.datacenter === "") continue;
    const list = rtts.get(s.datacenter) ?? [];
    const rtt = rttMs(s.name);
    if (rtt !== undefined && Number.isFinite(rtt)) list.push(rtt);
    rtts.set(s.datacenter, list);
  }
  rtts.delete(local);
  const median = (xs: number[]): number => {
    if (xs.length === 0) return Number.POSITIVE_INFINITY;
    const sorted = [...xs].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const others = [...rtts].map(([dc, xs]) => ({ dc, rtt: median(xs) }));
  others.sort((a, b) => (a.rtt !== b.rtt ? (a.rtt < b.rtt ? -1 : 1) : a.dc < b.dc ? -1 : a.dc > b.dc ? 1 : 0));
  return [local, ...others.map((o) => o.dc)];
}
