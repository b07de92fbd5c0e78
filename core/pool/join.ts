// Joining: Consul's -join (every address at once, at start) and
// -retry-join (in the background until it works or gives up).

import type { Clock } from "../clock/clock.ts";
import type { Logger } from "../log/mod.ts";
import type { GossipPool } from "./types.ts";

// ---------------------------------------------------------------------------
// start_join / retry_join

/** Consul's -join: every address at once; an error when none could be contacted. */
export async function startJoin(pool: GossipPool, addrs: readonly string[], logger: Logger): Promise<void> {
  if (addrs.length === 0) return;
  const r = await pool.join([...addrs]);
  if (r.joined === 0) throw new Error(`Failed to join ${pool.name.toUpperCase()} cluster: ${r.errors.join("; ") || "no node could be contacted"}`);
  logger.info(`Join ${pool.name.toUpperCase()} completed. Synced with ${r.joined} initial agents`);
}

/**
 * Consul's -retry-join: try every interval until one join works; after
 * `maxAttempts` (0 = forever) failed attempts reject. `cancel()` stops it.
 */
export function retryJoin(
  pool: GossipPool,
  options: { addrs: readonly string[]; intervalMs: number; maxAttempts: number; clock: Clock; logger: Logger },
): { done: Promise<void>; cancel(): void } {
  let cancelled = false;
  let timer: { cancel(): void } | undefined;
  let wake: (() => void) | undefined;
  const cluster = pool.name.toUpperCase();
  const done = (async () => {
    for (let attempt = 1; !cancelled; attempt++) {
      options.logger.info("Joining cluster...", { cluster });
      const r = await pool.join([...options.addrs]);
      if (cancelled) return;
      if (r.joined > 0) {
        options.logger.info("Join cluster completed. Synced with initial agents", { cluster, num_agents: r.joined });
        return;
      }
      const error = r.errors.join("; ") || "no node could be contacted";
      if (options.maxAttempts > 0 && attempt >= options.maxAttempts) {
        options.logger.error("Join cluster failed, max attempts reached", { cluster, attempts: attempt, error });
        throw new Error(`agent: Join ${cluster} cluster failed after ${attempt} attempts: ${error}`);
      }
      options.logger.warn("Join cluster failed, will retry", { cluster, retry_interval: `${options.intervalMs}ms`, attempt, error });
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = options.clock.setTimer(options.intervalMs, resolve);
      });
    }
  })();
  return {
    done,
    cancel() {
      cancelled = true;
      timer?.cancel();
      wake?.();
    },
  };
}

// ---------------------------------------------------------------------------
// WAN flood join

/** The WAN address to join for each server of our datacenter in the LAN pool that the WAN pool lacks (pure). */
export function floodTargets(
  lan: ReadonlyArray<{ name: string; addr: string; status: string; tags: Readonly<Record<string, string>> }>,
  wanNames: ReadonlySet<string>,
  options: { datacenter: string; self: string },
): string[] {
  const out: string[] = [];
  for (const m of lan) {
    if (m.name === options.self || m.status !== "alive") continue;
    if (m.tags.role !== "consul" || m.tags.dc !== options.datacenter) continue;
    const port = Number(m.tags.wan_join_port);
    if (!Number.isInteger(port) || port <= 0 || port > 65535) continue;
    if (wanNames.has(`${m.name}.${options.datacenter}`)) continue;
    out.push(joinHostPortLoose(m.addr, port));
  }
  return out;
}

function joinHostPortLoose(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Consul's WAN flooder (agent/consul/flood.go): a server joins the WAN pool
 * through every server of its own datacenter that the LAN pool has and the
 * WAN pool lacks, on each LAN join and every `intervalMs` (60 s). So one
 * `join -wan` of one server of a datacenter brings in all of them.
 */
export function floodWanJoins(
  lan: GossipPool,
  wan: GossipPool,
  options: { datacenter: string; nodeName: string; clock: Clock; logger: Logger; intervalMs?: number },
): { cancel(): void } {
  let timer: { cancel(): void } | undefined;
  let running = false;
  let again = false;
  let cancelled = false;
  const flood = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const wanNames = new Set(wan.members().filter((m) => m.status === "alive").map((m) => m.name));
        const targets = floodTargets(lan.members(), wanNames, { datacenter: options.datacenter, self: options.nodeName });
        for (const addr of targets) {
          if (cancelled) return;
          const r = await wan.join([addr]);
          if (r.joined > 0) options.logger.info("Added LAN server to the WAN pool", { address: addr });
          else options.logger.debug("Failed to join a LAN server to the WAN pool", { address: addr, error: r.errors.join("; ") });
        }
      } while (again && !cancelled);
    } finally {
      running = false;
    }
  };
  const tick = (): void => {
    if (cancelled) return;
    void flood();
    timer = options.clock.setTimer(options.intervalMs ?? 60_000, tick);
  };
  const unsubscribe = lan.onMemberEvent((e) => {
    if ((e.type === "join" || e.type === "update") && e.members.some((m) => m.tags.role === "consul")) void flood();
  });
  tick();
  return {
    cancel() {
      cancelled = true;
      timer?.cancel();
      unsubscribe();
    },
  };
}
