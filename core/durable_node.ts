// The one way cairn persists a small whole file: write it under a temporary
// name beside the target, fsync it, rename it over the target, fsync the
// directory. A crash leaves the old file or the new one, never a torn one,
// and once the call returns the new one survives a power cut. Used for the
// Raft stable state and snapshots, the bootstrap configuration, the gossip
// keyring, the serf snapshot and the local service definitions.
import { close, closeSync, fsync, fsyncSync, open, openSync, rename, renameSync, rm, write, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";

// The callback API, promisified: node:fs/promises would load readline and
// most of the stream modules into every client agent (see
// core/lazy_builtins_node.ts), and a client writes its serf snapshot.
const openAsync = promisify(open);
const closeAsync = promisify(close);
const fsyncAsync = promisify(fsync);
const renameAsync = promisify(rename);
const rmAsync = promisify(rm);

function writeAll(fd: number, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    const step = (off: number): void => {
      if (off >= bytes.length) return resolve();
      write(fd, bytes, off, bytes.length - off, null, (err, n) => (err ? reject(err) : step(off + n)));
    };
    step(0);
  });
}

/** Errors a platform gives when a directory cannot be opened or fsynced (Deno's node:fs among them): the rename is still atomic. */
function isDirSyncUnsupported(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" && ["EISDIR", "EPERM", "EINVAL", "EACCES", "ENOTSUP", "EBADF"].includes(code);
}

/** The temporary name beside `path`; writers that may overlap (a flush during a background write) pass different tags. */
function tempPath(path: string, tag = ""): string {
  return join(dirname(path), `.${basename(path)}${tag ? `.${tag}` : ""}.tmp`);
}

export interface DurableWriteOptions {
  /** Mode of a new file. Default 0644. */
  mode?: number;
  /** Tells the temporary files of overlapping writers apart. */
  tmpTag?: string;
}

/** fsync a directory, so a create, rename or unlink in it survives a crash. */
export async function syncDir(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = await openAsync(dir, "r");
    await fsyncAsync(fd);
  } catch (err) {
    if (!isDirSyncUnsupported(err)) throw err;
  } finally {
    if (fd !== undefined) await closeAsync(fd).catch(() => {});
  }
}

export function syncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch (err) {
    if (!isDirSyncUnsupported(err)) throw err;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Replace `path` with `data` durably (temp, fsync, rename, fsync dir). When
 * `signal` is aborted before the rename, the file is left as it was and the
 * temporary one removed.
 */
export async function writeFileDurable(path: string, data: Uint8Array | string, options: DurableWriteOptions & { signal?: AbortSignal } = {}): Promise<void> {
  const tmp = tempPath(path, options.tmpTag);
  const fd = await openAsync(tmp, "w", options.mode ?? 0o644);
  try {
    await writeAll(fd, typeof data === "string" ? Buffer.from(data) : data);
    await fsyncAsync(fd);
  } finally {
    await closeAsync(fd);
  }
  if (options.signal?.aborted) {
    await rmAsync(tmp, { force: true });
    return;
  }
  await renameAsync(tmp, path);
  await syncDir(dirname(path));
}

/** The same, synchronously (stop and leave paths that must finish before the process exits). */
export function writeFileDurableSync(path: string, data: Uint8Array | string, options: DurableWriteOptions = {}): void {
  const tmp = tempPath(path, options.tmpTag);
  const fd = openSync(tmp, "w", options.mode ?? 0o644);
  try {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  syncDirSync(dirname(path));
}
