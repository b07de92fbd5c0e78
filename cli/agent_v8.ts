// V8 in a client agent: no TurboFan until the agent is busy. A client's
// usual work (gossip rounds, its own checks, now and then a forwarded
// request) runs at the same idle CPU on the interpreter and the Sparkplug
// baseline tier, and TurboFan's first compile pages about 3 MiB of compiler
// code into the process and leaves about 1.5 MiB of compile zones in a worker
// thread's malloc arena: most of what an idle client carries beyond a bare
// node process. Under load the baseline tier costs 2-2.7x the CPU per
// proxied KV request, so the agent watches its own CPU time and turns
// TurboFan on for good once it spends more than a small share of a core.
// V8 reads the flag at each tier-up decision, so hot functions are optimised
// from the next one on. Servers and -dev keep every tier throughout, with
// a quarter of V8's default tier-up budget (serverBudgetFlags).
// (Keeping the young generation from growing, --semi-space-growth-factor=1,
// was tried as well: no measurable saving in the 50-agent gossip bench.)
//
// Memory in a client agent: the start (and a join storm) grows V8's young
// generation, and V8 gives those pages back only in a memory-reducing full
// collection, which its memory reducer starts only after a full collection
// of its own; an agent that gossips quietly may not have one for a long
// time. So a client that is idle and whose heap grew by reduceAfterGrowthBytes
// since the last time collects once (a few ms on an agent's heap; at most
// every reduceEveryMs): a lone idle client's anonymous memory went from 17.2
// to 12.6-14.3 MiB (docs/performance.md, gossip).
//
// The old generation in servers and -dev: not collected below
// serverHeapFloorBytes. A server's heap is small (~10 MiB: values are
// buffers outside it), and V8 grows a heap that allocates little by little
// (its factor falls towards 1.1 when the collector is fast against the
// mutator). A stream of big buffers (a snapshot restore, on the leader and on
// the follower it sends to) then had V8 finish a full marking every ~100 ms:
// 12-15 mark-compacts in a 100 MiB restore, each with its pause and its
// marking on V8's helper threads, on a machine whose two cores the restore
// keeps busy. V8 has no floor it takes after start-up
// (--initial-old-space-size is read when the heap is set up, before our
// code runs), but it reads --heap-growing-percent at each limit it sets: so
// after each full collection the server sets the factor that puts the next
// limit at the floor, and back to V8's own (0) once the heap is above it.
// With it a restore had 4-5, and the leader used ~0.2 CPU s less per
// 100 MiB, the follower ~0.15 s (docs/performance.md, snapshot).
//
// TurboFan in servers, while their snapshot store is written to (a restore
// on the leader, the bytes a follower is sent ahead, an InstallSnapshot, a
// periodic snapshot): paused (bulkWriting; -dev's store is in memory and
// does not report). A restore into a fresh cluster runs code no request ran
// before, and TurboFan compiled ~110 functions on the leader in the first
// second of a 100 MiB restore: ~0.35 CPU s on V8's helper threads there and
// ~0.1 s on the follower, on a machine whose two cores the restore keeps
// busy. The restore's own work is hashing, copying and system calls, which
// the baseline tier does as well: paused this way, a 100 MiB restore took
// 1.25-1.44 s instead of 1.54-1.60. Code optimised before stays optimised;
// TurboFan comes back bulkIdleMs after the last write (so a sink left open
// cannot keep it off).

/** Share of one core, averaged over one window, above which a client is busy. */
export const busyCpuShare = 0.04;
/** Length of the window the share is measured over. */
export const busyWindowMs = 5_000;

/**
 * V8's own tier-up budget. The single executable's loader (scripts/sea_main.cjs)
 * raises it eightfold before compiling, for idle clients; a client that gets
 * busy gets V8's default back so hot code is optimised as early as V8 would.
 */
export const defaultBudgetFlags: readonly string[] = ["--interrupt-budget=67584"];
/**
 * Servers and -dev: tier up at a quarter of V8's budget. A server exists to
 * be busy, and its first seconds under load ran on unoptimised code: with a
 * 3-server cluster just started, 1 s of writes at 16 connections and then
 * 3 s at one, the leader spent 768-825 us of CPU per PUT at V8's budget and
 * 617-687 us at this one, and the PUT p50 went from ~1.02 to ~0.87 ms
 * (5 interleaved runs each). Optimising a few more lukewarm functions early
 * is a one-time cost a server can afford.
 */
export const serverBudgetFlags: readonly string[] = ["--interrupt-budget=16896"];
/** Growth of V8's heap since the last collection below which an idle client does not collect. */
export const reduceAfterGrowthBytes = 2 * 1024 * 1024;
/** At most one memory-reducing collection in this long. */
export const reduceEveryMs = 10_000;
/** Servers and -dev: the old generation's collection limit is at least this (see the top). */
export const serverHeapFloorBytes = 48 * 1024 * 1024;
/** The largest --heap-growing-percent set for the floor (a factor of 11): a heap below 4 MiB gets less than the floor. */
export const maxHeapGrowingPercent = 1000;

/**
 * The --heap-growing-percent that puts the next collection limit of an old
 * generation holding `usedBytes` at `floor`; 0 (V8's own factor) at or above it.
 */
export function heapGrowingPercent(usedBytes: number, floor = serverHeapFloorBytes): number {
  if (!(usedBytes > 0) || usedBytes >= floor) return 0;
  return Math.min(maxHeapGrowingPercent, Math.ceil((floor / usedBytes - 1) * 100));
}

/** TurboFan comes back this long after the last snapshot write (see the top). */
export const bulkIdleMs = 2_000;

/** Flags while a client is idle. */
export const leanFlags: readonly string[] = ["--no-turbofan"];
/** V8's defaults, restored once a client is busy. */
export const busyFlags: readonly string[] = ["--turbofan", ...defaultBudgetFlags];

export interface V8Deps {
  /** v8.setFlagsFromString for each flag; only the real process has it. */
  setV8Flags(flags: readonly string[]): void;
  /** CPU time of this process (user + system), microseconds. */
  cpuMicros(): number;
  /** V8's heap as committed (bytes): what the process holds for it. */
  heapBytes(): number;
  /** A full collection that gives V8's free pages back to the system. */
  reduceMemory(): void;
  /** Bytes the old generation's objects take (V8's spaces but the young generation's and read-only). */
  oldGenerationBytes(): number;
  /** Calls `fn` after each full collection (mark-compact), until cancelled. */
  onFullGc(fn: () => void): { cancel(): void };
  /** A timer that fires once and does not keep the process alive. */
  after(ms: number, fn: () => void): { cancel(): void };
  nowMs(): number;
  /** A repeating timer that does not keep the process alive. */
  every(ms: number, fn: () => void): { cancel(): void };
}

/**
 * Whether the CPU used between two samples makes the process busy: more than
 * `share` of one core over the time between them.
 */
export function isBusy(prev: { cpuMicros: number; nowMs: number }, cur: { cpuMicros: number; nowMs: number }, share = busyCpuShare): boolean {
  const wallMs = cur.nowMs - prev.nowMs;
  if (wallMs <= 0) return false;
  return (cur.cpuMicros - prev.cpuMicros) / 1000 > share * wallMs;
}

export interface ClientV8 {
  /** Whether V8 runs with its defaults (a server, -dev, or a client that got busy). */
  readonly busy: boolean;
  /** The agent has started: measure from here (start-up itself is busy). */
  started(): void;
  /** The snapshot store took a write: a server pauses TurboFan until bulkIdleMs after the last one. */
  bulkWriting(): void;
  stop(): void;
}

/**
 * Client agents: start without TurboFan and turn it on for good once busy;
 * collect when idle after the heap grew. Servers and -dev get only the
 * server budget.
 */
export function clientV8(config: { server: boolean; dev: boolean }, deps: V8Deps): ClientV8 {
  const watched = !config.server && !config.dev;
  let busy = !watched;
  let timer: { cancel(): void } | undefined;
  let stopped = false;
  deps.setV8Flags(busy ? serverBudgetFlags : leanFlags);
  let fullGcs: { cancel(): void } | undefined;
  if (!watched) {
    let percent = -1;
    const floor = () => {
      const p = heapGrowingPercent(deps.oldGenerationBytes());
      if (p === percent) return;
      percent = p;
      deps.setV8Flags([`--heap-growing-percent=${p}`]);
    };
    floor();
    fullGcs = deps.onFullGc(floor);
  }
  let bulkTimer: { cancel(): void } | undefined;
  let lastBulkMs = 0;
  const bulkOver = (): void => {
    bulkTimer = undefined;
    if (stopped) return;
    const left = lastBulkMs + bulkIdleMs - deps.nowMs();
    if (left > 0) bulkTimer = deps.after(left, bulkOver);
    else deps.setV8Flags(["--turbofan"]);
  };
  return {
    get busy() {
      return busy;
    },
    started() {
      if (!watched || stopped || timer) return;
      let prev = { cpuMicros: deps.cpuMicros(), nowMs: deps.nowMs() };
      let heapAfterLast = 0;
      let lastReduceMs = -Infinity;
      timer = deps.every(busyWindowMs, () => {
        const cur = { cpuMicros: deps.cpuMicros(), nowMs: deps.nowMs() };
        const windowBusy = isBusy(prev, cur);
        prev = cur;
        if (windowBusy) {
          if (!busy) deps.setV8Flags(busyFlags);
          busy = true;
          return;
        }
        if (cur.nowMs - lastReduceMs >= reduceEveryMs && deps.heapBytes() >= heapAfterLast + reduceAfterGrowthBytes) {
          deps.reduceMemory();
          heapAfterLast = deps.heapBytes();
          lastReduceMs = cur.nowMs;
        }
      });
    },
    bulkWriting() {
      if (watched || stopped) return;
      lastBulkMs = deps.nowMs();
      if (bulkTimer) return;
      deps.setV8Flags(["--no-turbofan"]);
      bulkTimer = deps.after(bulkIdleMs, bulkOver);
    },
    stop() {
      stopped = true;
      timer?.cancel();
      fullGcs?.cancel();
      bulkTimer?.cancel();
    },
  };
}
