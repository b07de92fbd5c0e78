// `cairn snapshot save | restore | inspect`, as consul command/snapshot: the
// whole server state as one verified archive file. Files of any size: save
// streams the agent's answer to disk while checking it, restore streams the
// file to the agent, inspect reads it once; none holds the archive in memory.
import { lazyFsPromises } from "../core/lazy_builtins_node.ts";
import { encode } from "@msgpack/msgpack";
import { apiStream, type HttpGetAnswer, type HttpUpload } from "../core/api/http_get_node.ts";
import { errorMessage } from "../core/errors.ts";
import type { SnapshotArchiveMeta } from "../core/server/snapshot_archive.ts";
import { ByteQueue, readSnapshotArchiveStream } from "../core/server/snapshot_archive_node.ts";
import { checkSnapshotArchiveStream } from "../core/server/snapshot_check_node.ts";
import { decodeSnapshot } from "../core/state/snapshot.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiTransportFromFlags, bool, formatHelp, httpFlags, num, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const open = lazyFsPromises("open");
const rename = lazyFsPromises("rename");
const rm = lazyFsPromises("rm");

function oneFile(positionals: string[], io: CliIo): string | undefined {
  if (positionals.length === 1) return positionals[0]!;
  io.stderr(positionals.length === 0 ? "Missing FILE argument\n" : `Too many arguments (expected 1, got ${positionals.length})\n`);
  return undefined;
}

const progressFlag: FlagSpec = {
  name: "progress",
  kind: "bool",
  usage: "Show how many bytes have passed, on stderr. On by default when stderr is a terminal. (cairn only)",
};

/**
 * Progress on stderr for big files: a line rewritten in place at most four
 * times a second, finished with a newline. Consul prints none; cairn shows it
 * when stderr is a terminal or `-progress` is given, never into a pipe
 * unless asked.
 */
export class Progress {
  readonly #io: CliIo;
  readonly #label: string;
  readonly #total: number | undefined;
  readonly #now: () => number;
  readonly #start: number;
  #bytes = 0;
  #lastDraw = -Infinity;
  #drawn = false;

  constructor(io: CliIo, label: string, options: { total?: number; now?: () => number } = {}) {
    this.#io = io;
    this.#label = label;
    this.#total = options.total;
    this.#now = options.now ?? (() => performance.now());
    this.#start = this.#now();
  }

  add(n: number): void {
    this.#bytes += n;
    const t = this.#now();
    if (t - this.#lastDraw < 250) return;
    this.#lastDraw = t;
    this.#draw(t, false);
  }

  done(): void {
    if (this.#drawn || this.#bytes > 0) this.#draw(this.#now(), true);
  }

  #draw(t: number, last: boolean): void {
    const secs = Math.max(0.001, (t - this.#start) / 1000);
    const pct = this.#total ? ` of ${byteSize(this.#total)} (${Math.floor((this.#bytes / this.#total) * 100)}%)` : "";
    this.#io.stderr(`\r${this.#label}: ${byteSize(this.#bytes)}${pct}, ${byteSize(this.#bytes / secs)}/s${last ? "\n" : ""}`);
    this.#drawn = true;
  }
}

function wantProgress(p: ParsedFlags): boolean {
  return bool(p, "progress") || process.stderr.isTTY === true;
}

const saveFlags: readonly FlagSpec[] = [...httpFlags, progressFlag];

/**
 * How many bytes may wait for the file while the check goes on (and, as
 * much again, be read ahead of the check). The body comes in ~1 MiB pieces
 * (core/api/http_get_node.ts): each costs a file write in the thread pool
 * and, on the main thread, its CRC-32, SHA-256 and a tar walker step
 * (core/server/snapshot_check_node.ts).
 */
const saveWriteAheadBytes = 8 * 1024 * 1024;

/**
 * Written data is flushed to disk in the background every this many bytes,
 * one flush at a time, so the fsync before the rename finds little left:
 * 100 MiB written at download speed took ~165 ms to fsync at the end, ~10
 * with these flushes, which slowed the writes by ~2%; at 1 GiB written as
 * fast as it goes, 1.6 s of writes + 1.8 s of fsync became 2.1 s + 0.1 s.
 */
const saveFlushEveryBytes = 16 * 1024 * 1024;

/**
 * Writes pieces to a file in order while the caller goes on: the thread
 * pool writes one piece while the main thread checks the next, where an
 * awaited write left the check idle. At most `limitBytes` wait; `write`
 * waits beyond that. The first failure is kept (`error`) and thrown by the
 * next `write` and by `flush`. Written data is flushed to disk on the way
 * (`saveFlushEveryBytes`).
 */
class FileWriter {
  readonly #fh: Awaited<ReturnType<typeof open>>;
  readonly #limitBytes: number;
  #tail: Promise<void> = Promise.resolve();
  #queuedBytes = 0;
  #unflushedBytes = 0;
  #flushing: Promise<void> | undefined;
  #failed = false;
  #error: unknown;

  constructor(fh: Awaited<ReturnType<typeof open>>, limitBytes: number) {
    this.#fh = fh;
    this.#limitBytes = limitBytes;
  }

  /** The write that failed, if one did. */
  get error(): unknown {
    return this.#failed ? this.#error : undefined;
  }

  async write(c: Uint8Array): Promise<void> {
    if (this.#failed) throw this.#error;
    this.#queuedBytes += c.length;
    this.#tail = this.#tail.then(async () => {
      try {
        if (this.#failed) return;
        let off = 0;
        while (off < c.length) off += (await this.#fh.write(c, off, c.length - off)).bytesWritten;
        this.#unflushedBytes += c.length;
        if (this.#unflushedBytes >= saveFlushEveryBytes && this.#flushing === undefined) {
          this.#unflushedBytes = 0;
          this.#flushing = this.#fh.datasync().catch((err: unknown) => this.#fail(err)).finally(() => (this.#flushing = undefined));
        }
      } catch (err) {
        this.#fail(err);
      } finally {
        this.#queuedBytes -= c.length;
      }
    });
    if (this.#queuedBytes > this.#limitBytes) await this.#tail;
    if (this.#failed) throw this.#error;
  }

  #fail(err: unknown): void {
    if (this.#failed) return;
    this.#failed = true;
    this.#error = err;
  }

  /** Wait for every write and background flush; throws the first failure. */
  async flush(): Promise<void> {
    await this.#tail;
    await this.#flushing;
    if (this.#failed) throw this.#error;
  }
}

/**
 * The answer's body as an async iterable of pieces (views of the
 * download's own buffers, ~1 MiB each), read ahead at most `limitBytes`:
 * beyond that the socket stops until the consumer catches up.
 */
async function* receive(answer: HttpGetAnswer, limitBytes: number): AsyncGenerator<Uint8Array> {
  const queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let wake: (() => void) | undefined;
  let ended = false;
  let error: unknown;
  answer.read((piece) => {
    queue.push(piece);
    queuedBytes += piece.length;
    wake?.();
    return queuedBytes < limitBytes;
  }).then(
    () => (ended = true),
    (err: unknown) => {
      ended = true;
      error = err ?? new Error("The download failed");
    },
  ).finally(() => wake?.());
  try {
    for (;;) {
      const piece = queue.shift();
      if (piece !== undefined) {
        queuedBytes -= piece.length;
        if (queuedBytes < limitBytes) answer.resume();
        yield piece;
        continue;
      }
      if (ended) {
        if (error !== undefined) throw error;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    if (!ended) answer.close();
  }
}

export const snapshotSave: Command = {
  name: "snapshot save",
  synopsis: "Saves snapshot of Cairn server state",
  help: () => formatHelp(`
Usage: cairn snapshot save [options] FILE

  Retrieves an atomic, point-in-time snapshot of the state of the Cairn servers
  which includes key/value entries, service catalog, sessions and checks, and
  saves it to FILE. The archive is written as it arrives and checked on the
  way; FILE only takes its name once it verified, so a failed save never
  replaces a good one.

  To create a snapshot from the leader server and save it to "backup.snap":

      $ cairn snapshot save backup.snap

  To create a potentially stale snapshot from any available server (useful if no
  leader is available):

      $ cairn snapshot save -stale backup.snap
`, saveFlags),
  async run(args, io) {
    const p = parseCommandFlags(snapshotSave, args, saveFlags, io);
    if (typeof p === "number") return p;
    const file = oneFile(p.positionals, io);
    if (file === undefined) return 1;
    let answer: HttpGetAnswer;
    try {
      const { client, tls, tlsMaterial } = apiTransportFromFlags(p, io);
      answer = await apiStream(client, { method: "GET", path: "/v1/snapshot", params: { stale: bool(p, "stale") } }, { tls, tlsMaterial });
    } catch (err) {
      io.stderr(`Error saving snapshot: ${apiErrorText(err)}\n`);
      return 1;
    }
    const body = receive(answer, saveWriteAheadBytes);
    // Written to a temporary name while it is checked; renamed once it verified.
    const tmp = `${file}.tmp`;
    const progress = wantProgress(p) ? new Progress(io, "Saving snapshot") : undefined;
    let fh: Awaited<ReturnType<typeof open>> | undefined;
    let writer: FileWriter | undefined;
    let stage = "writing";
    try {
      fh = await open(tmp, "w", 0o600);
      const out = new FileWriter(fh, saveWriteAheadBytes);
      writer = out;
      async function* tee(): AsyncGenerator<Uint8Array> {
        for await (const c of body) {
          await out.write(c);
          progress?.add(c.length);
          yield c;
        }
      }
      stage = "verifying";
      const { meta } = await checkSnapshotArchiveStream(tee());
      progress?.done();
      stage = "writing";
      await out.flush();
      await fh.sync();
      await fh.close();
      fh = undefined;
      await rename(tmp, file);
      io.stdout(`Saved and verified snapshot to index ${meta.Index}\n`);
      return 0;
    } catch (err) {
      answer.close();
      progress?.done();
      // A write still in flight must end before the file is closed and removed.
      await writer?.flush().catch(() => {});
      await fh?.close().catch(() => {});
      await rm(tmp, { force: true });
      const failedWrite = writer?.error;
      if (failedWrite !== undefined) io.stderr(`Error writing snapshot file: ${errorMessage(failedWrite)}\n`);
      else io.stderr(stage === "verifying" ? `Error verifying snapshot file: ${errorMessage(err)}\n` : `Error writing snapshot file: ${errorMessage(err)}\n`);
      return 1;
    }
  },
};

const restoreFlags: readonly FlagSpec[] = [...httpFlags.filter((f) => f.name !== "stale"), progressFlag];

export const snapshotRestore: Command = {
  name: "snapshot restore",
  synopsis: "Restores snapshot of Cairn server state",
  help: () => formatHelp(`
Usage: cairn snapshot restore [options] FILE

  Restores an atomic, point-in-time snapshot of the state of the Cairn servers
  which includes key/value entries, service catalog, sessions and checks.

  Restores involve a potentially dangerous low-level Raft operation that is not
  designed to handle server failures during a restore. This command is primarily
  intended to be used when recovering from a disaster, restoring into a fresh
  cluster of Cairn servers.

  The file is streamed to the leader, which checks it whole (gzip, tar,
  SHA256SUMS, metadata) before it changes anything: a damaged file is refused
  with the reason and the cluster keeps its state.

  To restore a snapshot from the file "backup.snap":

      $ cairn snapshot restore backup.snap
`, restoreFlags),
  async run(args, io) {
    const p = parseCommandFlags(snapshotRestore, args, restoreFlags, io);
    if (typeof p === "number") return p;
    const file = oneFile(p.positionals, io);
    if (file === undefined) return 1;
    let fh: Awaited<ReturnType<typeof open>>;
    let size: number;
    try {
      fh = await open(file, "r");
      size = (await fh.stat()).size;
    } catch (err) {
      io.stderr(`Error opening snapshot file: ${errorMessage(err)}\n`);
      return 1;
    }
    const progress = wantProgress(p) ? new Progress(io, "Restoring snapshot", { total: size }) : undefined;
    const chunkBytes = 1024 * 1024;
    let pos = 0;
    // Each read in a buffer of its own: the socket may still hold the last one.
    const upload: HttpUpload = {
      length: size,
      async next() {
        if (pos >= size) return undefined;
        const buf = Buffer.allocUnsafeSlow(Math.min(chunkBytes, size - pos));
        const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
        if (bytesRead === 0) throw new Error(`${file} ended at byte ${pos}, not ${size}`);
        pos += bytesRead;
        progress?.add(bytesRead);
        return bytesRead === buf.length ? buf : buf.subarray(0, bytesRead);
      },
    };
    try {
      // Sent off our own socket (core/api/http_get_node.ts): node:http and a web stream cost ~0.4 CPU s per 100 MiB.
      const { client, tls, tlsMaterial } = apiTransportFromFlags(p, io);
      const answer = await apiStream(client, { method: "PUT", path: "/v1/snapshot" }, { tls, tlsMaterial, upload });
      await answer.read(() => {});
    } catch (err) {
      progress?.done();
      io.stderr(`Error restoring snapshot: ${apiErrorText(err)}\n`);
      return 1;
    } finally {
      await fh.close().catch(() => {});
    }
    progress?.done();
    io.stdout("Restored snapshot\n");
    return 0;
  },
};

/** Consul's inspect ByteSize: 1024-based, one decimal, "0" for nothing. */
export function byteSize(n: number): string {
  if (n <= 0) return "0";
  const units: [number, string][] = [[2 ** 40, "TB"], [2 ** 30, "GB"], [2 ** 20, "MB"], [2 ** 10, "KB"]];
  for (const [size, unit] of units) if (n >= size) return `${(n / size).toFixed(1).replace(/\.0$/, "")}${unit}`;
  return `${Math.floor(n)}B`;
}

/**
 * Go's text/tabwriter for the rows given: every cell but a row's last is
 * tab-terminated and padded to its column's widest cell plus `padding` (at
 * least `minWidth`); `terminated` says whether the last cell is too (Consul's
 * tables end each line with a tab, so their last column is padded as well).
 */
function tabwrite(rows: string[][], minWidth: number, padding: number, terminated: boolean): string {
  const cols = Math.max(...rows.map((r) => r.length));
  const width: number[] = [];
  for (let c = 0; c < cols; c++) {
    const cells = rows.filter((r) => c < r.length - (terminated ? 0 : 1)).map((r) => r[c]!.length);
    width.push(cells.length === 0 ? 0 : Math.max(minWidth, Math.max(...cells) + padding));
  }
  return rows
    .map((r) => r.map((cell, c) => (c < r.length - 1 || terminated ? cell.padEnd(width[c]!) : cell)).join(""))
    .join("\n");
}

interface TypeStats {
  Name: string;
  Sum: number;
  Count: number;
}

function sortStats(stats: Iterable<TypeStats>): TypeStats[] {
  return [...stats].sort((a, b) => b.Sum - a.Sum || (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
}

const inspectFlags: readonly FlagSpec[] = [
  { name: "kvdetails", kind: "bool", usage: "Provides a detailed KV space usage breakdown for any KV data that's been stored." },
  { name: "kvdepth", kind: "int", usage: "Can only be used with -kvdetails. The key prefix depth used to breakdown KV store data. Defaults to 2.", defaultText: "2" },
  { name: "kvfilter", kind: "string", usage: "Can only be used with -kvdetails. Limits KV key breakdown using this prefix filter." },
  { name: "format", kind: "string", usage: "Output format {pretty|json}", defaultText: "pretty" },
];

export const snapshotInspect: Command = {
  name: "snapshot inspect",
  synopsis: "Displays information about a Cairn snapshot file",
  help: () => formatHelp(`
Usage: cairn snapshot inspect [options] FILE

  Displays information about a snapshot file on disk: its ID, size, Raft index
  and term and format version, then how many rows of each table it holds and
  their size; with -kvdetails, the same for KV keys grouped by prefix.

  To inspect the file "backup.snap":

      $ cairn snapshot inspect backup.snap

  KV space by the first three levels of keys under "app/":

      $ cairn snapshot inspect -kvdetails -kvdepth 3 -kvfilter app/ backup.snap
`, inspectFlags),
  async run(args, io) {
    const p = parseCommandFlags(snapshotInspect, args, inspectFlags, io);
    if (typeof p === "number") return p;
    const file = oneFile(p.positionals, io);
    if (file === undefined) return 1;
    const format = str(p, "format", "pretty");
    if (format !== "pretty" && format !== "json") {
      io.stderr(`Error outputting enhanced snapshot data: Unknown format: ${format}\n`);
      return 1;
    }
    const kvDetails = bool(p, "kvdetails");
    const kvDepth = num(p, "kvdepth") ?? 2;
    const kvFilter = str(p, "kvfilter");
    if (!kvDetails && (p.values.has("kvdepth") || p.values.has("kvfilter"))) {
      io.stderr("Error: -kvdepth and -kvfilter can only be used with -kvdetails\n");
      return 1;
    }
    if (kvDepth < 1) {
      io.stderr("Error: -kvdepth must be at least 1\n");
      return 1;
    }
    let fh: Awaited<ReturnType<typeof open>>;
    try {
      fh = await open(file, "r");
    } catch (err) {
      io.stderr(`Error opening snapshot file: ${errorMessage(err)}\n`);
      return 1;
    }
    const tables = new Map<string, TypeStats>();
    const kv = new Map<string, TypeStats>();
    let total = 0;
    let totalKv = 0;
    let meta: SnapshotArchiveMeta;
    // The state is decoded while the archive is read; its records are only
    // trusted once the archive verified (the counts are printed after).
    const state = new ByteQueue();
    const decoding = (async () => {
      for await (const rec of decodeSnapshot(state)) {
        if (rec.t !== "rows") continue;
        const t = tables.get(rec.table) ?? { Name: rec.table, Sum: 0, Count: 0 };
        for (const row of rec.rows) {
          const size = encode(row).length;
          t.Count++;
          t.Sum += size;
          total += size;
          if (kvDetails && rec.table === "kvs") {
            const key = (row as { key?: unknown }).key;
            if (typeof key !== "string" || !key.startsWith(kvFilter)) continue;
            const prefix = key.split("/").slice(0, kvDepth).join("/");
            const s = kv.get(prefix) ?? { Name: prefix, Sum: 0, Count: 0 };
            s.Count++;
            s.Sum += size;
            totalKv += size;
            kv.set(prefix, s);
          }
        }
        tables.set(rec.table, t);
      }
    })();
    decoding.catch((err: unknown) => state.end(err));
    try {
      async function* chunks(): AsyncGenerator<Uint8Array> {
        for (let pos = 0; ;) {
          const buf = new Uint8Array(1024 * 1024);
          const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
          if (bytesRead === 0) return;
          pos += bytesRead;
          yield buf.subarray(0, bytesRead);
        }
      }
      try {
        meta = (await readSnapshotArchiveStream(chunks(), (c) => state.push(c))).meta;
      } finally {
        state.end();
      }
      await decoding;
    } catch (err) {
      state.end();
      // A state the decoder refused is the reason the reader stopped.
      const refused = await decoding.then(() => undefined, (e: unknown) => e);
      const why = refused !== undefined && errorMessage(err) === "queue has ended" ? refused : err;
      io.stderr(`Error verifying snapshot: ${errorMessage(why)}\n`);
      return 1;
    } finally {
      await fh.close().catch(() => {});
    }
    const stats = sortStats(tables.values());
    const kvStats = sortStats(kv.values());
    const metaOut = { ID: meta.ID, Size: meta.Size, Index: meta.Index, Term: meta.Term ?? 0, Version: meta.Version };
    if (format === "json") {
      const out: Record<string, unknown> = { Meta: metaOut, Stats: stats };
      if (kvDetails) out.StatsKV = kvStats;
      out.TotalSize = total;
      if (kvDetails) out.TotalSizeKV = totalKv;
      io.stdout(`${JSON.stringify(out, null, 3)}\n`);
      return 0;
    }
    const head = tabwrite(Object.entries(metaOut).map(([k, v]) => [` ${k}`, String(v)]), 8, 6, false);
    const dashes = [" ----", "----", "----"];
    const table = (first: string, rows: TypeStats[], sum: number, minWidth: number, padding: number) =>
      tabwrite([[` ${first}`, "Count", "Size"], dashes, ...rows.map((s) => [` ${s.Name}`, String(s.Count), byteSize(s.Sum)]), dashes, [" Total", "", byteSize(sum)]], minWidth, padding, true);
    let text = `${head}\n\n${table("Type", stats, total, 8, 6)}\n`;
    if (kvDetails) text += `\n${table("Key Name", kvStats, totalKv, 30, 12)}\n`;
    // tabwriter leaves the last cell of its final, unfinished line unpadded.
    io.stdout(text.replace(/ +\n$/, "\n"));
    return 0;
  },
};
