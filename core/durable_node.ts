// The one way cairn persists a small whole file: write it under a temporary
// name beside the target, fsync it, rename it over the target, fsync the
// directory. A crash leaves the old file or the new one, never a torn one,
// and once the call returns the new one survives a power cut. Used for the
// Raft stable state and snapshots, the bootstrap configuration, the gossip
// keyring, the serf snapshot and the local service definitions.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { lazyFsPromises } from "./lazy_builtins_node.ts";

const open = lazyFsPromises("open");
const rename = lazyFsPromises("rename");
const rm = lazyFsPromises("rm");

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
  let h: Awaited<ReturnType<typeof open>> | undefined;
  try {
    h = await open(dir, "r");
    await h.sync();
  } catch (err) {
    if (!isDirSyncUnsupported(err)) throw err;
  } finally {
    await h?.close().catch(() => {});
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
  const h = await open(tmp, "w", options.mode ?? 0o644);
  try {
    await h.writeFile(data);
    await h.sync();
  } finally {
    await h.close();
  }
  if (options.signal?.aborted) {
    await rm(tmp, { force: true });
    return;
  }
  await rename(tmp, path);
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
