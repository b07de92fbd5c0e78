// `log_file`: the agent's log in a file, rotated by size and age, as
// Consul's logging/logfile.go does it:
//   - a path ending in a separator is a directory: the file is `consul.log`
//     in it; otherwise the path names the file;
//   - the active file always has that name, and is truncated at start;
//   - before a write, when the file holds `rotateBytes` or more (0 = no
//     limit) or was opened `rotateDurationMs` or longer ago, it is renamed
//     to `<name>-<unix nanoseconds><ext>` (`.log` when the name has no
//     extension) and a new one is opened;
//   - then archives beyond the newest `maxFiles` are deleted (0 keeps
//     every archive, -1 keeps none).
import { closeSync, fstatSync, openSync, readdirSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, extname, join } from "node:path";
import { formatJson, formatText, type LogRecord, type LogSink } from "./logger.ts";

export interface LogFileOptions {
  /** `log_file`: a file path, or a directory when it ends in `/`. */
  path: string;
  json?: boolean;
  /** `log_rotate_bytes`; 0 = no size limit. */
  rotateBytes?: number;
  /** `log_rotate_duration`; 0 = Consul's default, 24 h. */
  rotateDurationMs?: number;
  /** `log_rotate_max_files`: 0 keeps every archive, -1 none. */
  maxFiles?: number;
  /** Wall clock in ms (archive names) and elapsed time (rotation by age). */
  now?: () => number;
  /** Each record's line instead of the log formats (the audit log's own JSON). */
  format?: (record: LogRecord) => string;
  /** Keep what the active file holds instead of truncating it at start (the audit log). */
  append?: boolean;
}

export const DEFAULT_LOG_ROTATE_DURATION_MS = 24 * 3_600_000;

/** The active file's directory and name for a `log_file` value. */
export function logFileTarget(path: string): { dir: string; name: string } {
  if (path.endsWith("/") || path.endsWith("\\")) return { dir: path, name: "consul.log" };
  return { dir: dirname(path), name: basename(path) };
}

export class LogFileSink implements LogSink {
  readonly #dir: string;
  readonly #name: string;
  readonly #prefix: string;
  readonly #ext: string;
  readonly #json: boolean;
  readonly #rotateBytes: number;
  readonly #rotateDurationMs: number;
  readonly #maxFiles: number;
  readonly #now: () => number;
  #fd: number | undefined;
  #bytes = 0;
  #openedAt = 0;
  #lastStamp = 0n;
  readonly #format: ((record: LogRecord) => string) | undefined;
  #append: boolean;

  /** Opens (and truncates) the active file; throws when it cannot. */
  constructor(options: LogFileOptions) {
    const { dir, name } = logFileTarget(options.path);
    this.#dir = dir;
    this.#name = name;
    const ext = extname(name);
    this.#ext = ext || ".log";
    this.#prefix = ext ? name.slice(0, -ext.length) : name;
    this.#json = options.json ?? false;
    this.#rotateBytes = options.rotateBytes ?? 0;
    this.#rotateDurationMs = options.rotateDurationMs || DEFAULT_LOG_ROTATE_DURATION_MS;
    this.#maxFiles = options.maxFiles ?? 0;
    this.#now = options.now ?? Date.now;
    this.#format = options.format;
    this.#append = options.append === true;
    this.#open();
  }

  /** The active file's path. */
  get path(): string {
    return join(this.#dir, this.#name);
  }

  write(record: LogRecord): void {
    const line = (this.#format ? this.#format(record) : this.#json ? formatJson(record) : formatText(record)) + "\n";
    try {
      if (this.#fd === undefined) this.#open();
      this.#rotateIfDue();
      const bytes = Buffer.from(line);
      writeSync(this.#fd!, bytes);
      this.#bytes += bytes.length;
    } catch {
      // A log line that cannot be written must not take the agent down (Consul drops it too).
    }
  }

  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): void {
    this.#fd = openSync(this.path, this.#append ? "a" : "w", 0o640);
    this.#bytes = this.#append ? fstatSync(this.#fd).size : 0;
    // Only the first open appends; a rotated file starts empty anyway.
    this.#append = false;
    this.#openedAt = this.#now();
  }

  #rotateIfDue(): void {
    const bySize = this.#rotateBytes > 0 && this.#bytes >= this.#rotateBytes;
    const byAge = this.#now() - this.#openedAt >= this.#rotateDurationMs;
    if (!bySize && !byAge) return;
    this.close();
    renameSync(this.path, join(this.#dir, `${this.#prefix}-${this.#stamp()}${this.#ext}`));
    this.#prune();
    this.#open();
  }

  /** Unix nanoseconds, strictly increasing so archives sort in the order they were made. */
  #stamp(): string {
    let ns = BigInt(Math.floor(this.#now())) * 1_000_000n;
    if (ns <= this.#lastStamp) ns = this.#lastStamp + 1n;
    this.#lastStamp = ns;
    return ns.toString();
  }

  #prune(): void {
    if (this.#maxFiles === 0) return;
    const head = `${this.#prefix}-`;
    const archives = readdirSync(this.#dir)
      .filter((f) => f.startsWith(head) && f.endsWith(this.#ext) && f.length > head.length + this.#ext.length)
      .sort();
    const keep = this.#maxFiles < 0 ? 0 : this.#maxFiles;
    for (const f of archives.slice(0, Math.max(0, archives.length - keep))) rmSync(join(this.#dir, f), { force: true });
  }
}
