// Serf's member snapshot (serf/snapshot.go), Consul's serf/local.snapshot and
// serf/remote.snapshot: text lines `alive: <name> <ip:port>`, `not-alive:
// <name>`, `clock: <n>`, `event-clock: <n>`, `query-clock: <n>` and `leave`.
// We rewrite the whole (compacted) file after membership changes, so it
// stays small, and read it back on start to rejoin the previous members.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Clock, Timer } from "../clock/clock.ts";
import { writeFileDurable, writeFileDurableSync } from "../durable_node.ts";
import type { Logger } from "../log/mod.ts";

// node:fs's callback forms, not node:fs/promises: every agent writes this
// file, and node:fs/promises is not loaded in a client otherwise (see
// lazy_builtins_node.ts).

export interface SerfSnapshot {
  /** Members alive at the last write (name → "ip:port"). */
  alive: Map<string, string>;
  clock: number;
  eventClock: number;
  queryClock: number;
  /** The node left gracefully after the last write. */
  left: boolean;
}

/** Parse a snapshot; unknown or bad lines are skipped (counted in `skipped`). */
export function parseSerfSnapshot(text: string): SerfSnapshot & { skipped: number } {
  const snap = { alive: new Map<string, string>(), clock: 0, eventClock: 0, queryClock: 0, left: false, skipped: 0 };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "") continue;
    if (line === "leave") {
      snap.left = true;
      continue;
    }
    const colon = line.indexOf(": ");
    const key = colon < 0 ? "" : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 2);
    if (key === "alive") {
      const sp = value.lastIndexOf(" ");
      if (sp <= 0) {
        snap.skipped++;
        continue;
      }
      snap.alive.set(value.slice(0, sp), value.slice(sp + 1));
      snap.left = false;
    } else if (key === "not-alive") {
      snap.alive.delete(value);
    } else if (key === "clock" || key === "event-clock" || key === "query-clock") {
      const n = Number(value);
      if (!Number.isSafeInteger(n) || n < 0) {
        snap.skipped++;
        continue;
      }
      if (key === "clock") snap.clock = n;
      else if (key === "event-clock") snap.eventClock = n;
      else snap.queryClock = n;
    } else if (key === "coordinate") {
      // Serf writes its own coordinate too; we start fresh.
    } else {
      snap.skipped++;
    }
  }
  return snap;
}

export function formatSerfSnapshot(s: Omit<SerfSnapshot, "left">): string {
  const lines: string[] = [];
  for (const [name, addr] of s.alive) lines.push(`alive: ${name} ${addr}`);
  lines.push(`clock: ${s.clock}`, `event-clock: ${s.eventClock}`, `query-clock: ${s.queryClock}`);
  return lines.join("\n") + "\n";
}

export function readSerfSnapshot(file: string, logger: Logger): SerfSnapshot | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const snap = parseSerfSnapshot(readFileSync(file, "utf8"));
    if (snap.skipped > 0) logger.warn("skipped bad lines in the serf snapshot", { file, lines: snap.skipped });
    return snap;
  } catch (err) {
    logger.warn("cannot read the serf snapshot", { file, error: String(err) });
    return undefined;
  }
}

/**
 * Rewrites the snapshot at most every `delayMs` (default 2 s) after a change,
 * so a join storm costs a handful of writes; `flush()` writes at once (stop, leave).
 */
export class SerfSnapshotWriter {
  #file: string;
  #clock: Clock;
  #log: Logger;
  #state: () => Omit<SerfSnapshot, "left">;
  #timer: Timer | undefined;
  #delayMs: number;

  constructor(options: { file: string; clock: Clock; logger: Logger; state: () => Omit<SerfSnapshot, "left">; delayMs?: number }) {
    this.#file = options.file;
    this.#clock = options.clock;
    this.#log = options.logger;
    this.#state = options.state;
    this.#delayMs = options.delayMs ?? 2_000;
  }

  #dirReady = false;

  changed(): void {
    if (this.#timer || this.#stopped) return;
    this.#timer = this.#clock.setTimer(this.#delayMs, () => {
      this.#timer = undefined;
      void this.#flushAsync();
    });
  }

  #writing = false;
  #again = false;
  #stopped = false;
  readonly #stopSignal = new AbortController();

  #ensureDir(): void {
    if (this.#dirReady) return;
    mkdirSync(dirname(this.#file), { recursive: true });
    this.#dirReady = true;
  }

  /** Background rewrite off the event loop (a join storm must not stall gossip on file renames). */
  async #flushAsync(): Promise<void> {
    if (this.#writing) {
      this.#again = true;
      return;
    }
    this.#writing = true;
    try {
      this.#ensureDir();
      // A stop during the write flushes synchronously; this older state must not land after it.
      await writeFileDurable(this.#file, formatSerfSnapshot(this.#state()), { signal: this.#stopSignal.signal });
    } catch (err) {
      this.#log.warn("cannot write the serf snapshot", { file: this.#file, error: String(err) });
    } finally {
      this.#writing = false;
    }
    if (this.#again && !this.#stopped) {
      this.#again = false;
      this.changed();
    }
  }

  /** Synchronous rewrite (stop, leave). */
  flush(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    try {
      this.#ensureDir();
      writeFileDurableSync(this.#file, formatSerfSnapshot(this.#state()), { tmpTag: "sync" });
    } catch (err) {
      this.#log.warn("cannot write the serf snapshot", { file: this.#file, error: String(err) });
    }
  }

  /** Record a graceful leave (so a restart does not rejoin unless rejoin_after_leave). */
  leave(): void {
    this.flush();
    this.#stopped = true;
    this.#stopSignal.abort();
    try {
      appendFileSync(this.#file, "leave\n");
    } catch (err) {
      this.#log.warn("cannot write the serf snapshot", { file: this.#file, error: String(err) });
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#stopSignal.abort();
    this.#timer?.cancel();
    this.#timer = undefined;
  }
}
