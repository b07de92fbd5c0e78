// The file `cairn snapshot save` writes and `/v1/snapshot` carries, shaped
// like Consul's (snapshot/archive.go): a gzipped tar of `meta.json`,
// `state.bin` (the state store's snapshot stream) and `SHA256SUMS`, so a
// truncated or altered file is refused before anything is restored. Web
// APIs only (CompressionStream, crypto.subtle): the same code runs in Deno.

import { CorruptionError } from "../errors.ts";

/** meta.json (Consul writes raft.SnapshotMeta here). */
export interface SnapshotArchiveMeta {
  /** Format version of the archive. */
  Version: number;
  /** `<index>-<unix ms>`: tells saves apart. */
  ID: string;
  /** Raft index of the last entry in the state. */
  Index: number;
  /** Bytes of state.bin. */
  Size: number;
  /** Raft term of the entry at Index, when the saving server knew it (older archives lack it). */
  Term?: number;
}

export const archiveVersion = 1;

const block = 512;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function sha256Hex(data: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data as BufferSource));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function pipeThrough(data: Uint8Array, transform: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Response(new Blob([data as BlobPart]).stream().pipeThrough(transform));
  return new Uint8Array(await out.arrayBuffer());
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

/** A ustar header for a regular file of `size` bytes. */
export function tarHeader(name: string, size: number, mtimeS: number): Uint8Array {
  const header = new Uint8Array(block);
  const put = (text: string, offset: number) => header.set(encoder.encode(text), offset);
  put(name, 0);
  put(octal(0o644, 8), 100);
  put(octal(0, 8), 108);
  put(octal(0, 8), 116);
  put(octal(size, 12), 124);
  put(octal(mtimeS, 12), 136);
  put("        ", 148);
  put("0", 156);
  put("ustar\0", 257);
  put("00", 263);
  let sum = 0;
  for (const b of header) sum += b;
  put(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
  return header;
}

function tarEntry(name: string, data: Uint8Array, mtimeS: number): Uint8Array {
  const padded = Math.ceil(data.length / block) * block;
  const out = new Uint8Array(block + padded);
  out.set(tarHeader(name, data.length, mtimeS), 0);
  out.set(data, block);
  return out;
}

/** A tar header's name and size (NaN when unreadable), and whether its checksum holds. */
export function parseTarHeader(header: Uint8Array): { name: string; size: number; checksumOk: boolean } {
  const field = (start: number, len: number) => {
    const raw = header.subarray(start, start + len);
    const end = raw.indexOf(0);
    return decoder.decode(end < 0 ? raw : raw.subarray(0, end)).trim();
  };
  let sum = 0;
  for (let i = 0; i < block; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return { name: field(0, 100), size: Number.parseInt(field(124, 12), 8), checksumOk: Number.parseInt(field(148, 8), 8) === sum };
}

function readTar(tar: Uint8Array): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let off = 0;
  while (off + block <= tar.length) {
    const header = tar.subarray(off, off + block);
    if (header.every((b) => b === 0)) break;
    const { name, size, checksumOk } = parseTarHeader(header);
    if (!checksumOk) throw new CorruptionError("Snapshot archive has a bad tar header checksum", { offset: off });
    if (!Number.isSafeInteger(size) || size < 0 || off + block + size > tar.length) {
      throw new CorruptionError(`Snapshot archive entry ${JSON.stringify(name)} is truncated`, { offset: off });
    }
    files.set(name, tar.subarray(off + block, off + block + size));
    off += block + Math.ceil(size / block) * block;
  }
  return files;
}

/** SHA256SUMS (`<hex>  <name>` lines) as name → hex digest. */
export function parseSha256Sums(sums: Uint8Array): Map<string, string> {
  const want = new Map<string, string>();
  for (const line of decoder.decode(sums).split("\n")) {
    const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
    if (m) want.set(m[2]!, m[1]!);
  }
  return want;
}

/** meta.json, checked for the fields every archive has and for this version. Throws CorruptionError. */
export function parseArchiveMeta(metaBytes: Uint8Array): Partial<SnapshotArchiveMeta> & Pick<SnapshotArchiveMeta, "Version" | "ID" | "Index"> {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(metaBytes));
  } catch {
    throw new CorruptionError("Snapshot archive meta.json is not valid JSON");
  }
  const m = raw as Partial<SnapshotArchiveMeta> | null;
  if (typeof m !== "object" || m === null || typeof m.Version !== "number" || typeof m.Index !== "number" || typeof m.ID !== "string") {
    throw new CorruptionError("Snapshot archive meta.json lacks Version, ID or Index");
  }
  if (m.Version !== archiveVersion) throw new CorruptionError(`Snapshot archive version ${m.Version} is not supported (want ${archiveVersion})`);
  return m as Partial<SnapshotArchiveMeta> & Pick<SnapshotArchiveMeta, "Version" | "ID" | "Index">;
}

/** Build the archive around a state snapshot. */
export async function writeSnapshotArchive(state: Uint8Array, options: { index: number; nowMs: number }): Promise<Uint8Array> {
  const meta: SnapshotArchiveMeta = { Version: archiveVersion, ID: `${options.index}-${options.nowMs}`, Index: options.index, Size: state.length };
  const metaBytes = encoder.encode(JSON.stringify(meta));
  const sums = encoder.encode(`${await sha256Hex(metaBytes)}  meta.json\n${await sha256Hex(state)}  state.bin\n`);
  const mtimeS = Math.floor(options.nowMs / 1000);
  const parts = [tarEntry("meta.json", metaBytes, mtimeS), tarEntry("state.bin", state, mtimeS), tarEntry("SHA256SUMS", sums, mtimeS), new Uint8Array(block * 2)];
  const tar = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    tar.set(p, off);
    off += p.length;
  }
  return pipeThrough(tar, new CompressionStream("gzip"));
}

/** Open an archive: gunzip, untar, check every checksum. Throws CorruptionError with the reason. */
export async function readSnapshotArchive(archive: Uint8Array): Promise<{ meta: SnapshotArchiveMeta; state: Uint8Array }> {
  let tar: Uint8Array;
  try {
    tar = await pipeThrough(archive, new DecompressionStream("gzip"));
  } catch (err) {
    throw new CorruptionError(`Snapshot archive is not valid gzip: ${err instanceof Error ? err.message : String(err)}`);
  }
  const files = readTar(tar);
  const metaBytes = files.get("meta.json");
  const state = files.get("state.bin");
  const sums = files.get("SHA256SUMS");
  if (!metaBytes || !state || !sums) throw new CorruptionError("Snapshot archive must hold meta.json, state.bin and SHA256SUMS");
  const want = parseSha256Sums(sums);
  for (const [name, data] of [["meta.json", metaBytes], ["state.bin", state]] as const) {
    if (want.get(name) !== (await sha256Hex(data))) throw new CorruptionError(`Snapshot archive checksum mismatch for ${name}`);
  }
  const m = parseArchiveMeta(metaBytes);
  return { meta: { Version: m.Version, ID: m.ID, Index: m.Index, Size: state.length }, state };
}
