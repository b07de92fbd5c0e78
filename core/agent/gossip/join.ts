// Joining: Consul's -join (every address at once, at start) and
// -retry-join (in the background until it works or gives up).

import type { Clock } from "../../clock/clock.ts";
import type { Logger } from "../../log/mod.ts";
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
