// A gzipped ustar archive of a directory, for `cairn debug` (Go's
// archive/tar + compress/gzip, as Consul's debug command writes its bundle).
// Entries are named `<base>/<relative path>`, directories first, sorted, so
// `tar -xzf` recreates the directory. node:zlib is loaded on first use.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, join, relative } from "node:path";
import type * as Zlib from "node:zlib";

const block = 512;

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

/** One 512-byte ustar header; names over 100 bytes use the prefix field (up to 155 more). */
export function tarHeader(entry: { name: string; size: number; mode: number; mtimeSec: number; dir: boolean }): Uint8Array {
  const h = new Uint8Array(block);
  const enc = new TextEncoder();
  const put = (text: string, at: number, width: number) => h.set(enc.encode(text).subarray(0, width), at);
  let name = entry.name;
  let prefix = "";
  if (enc.encode(name).length > 100) {
    const cut = name.lastIndexOf("/", name.length - 1 - (entry.dir ? 1 : 0));
    prefix = name.slice(0, cut);
    name = name.slice(cut + 1);
    if (enc.encode(name).length > 100 || enc.encode(prefix).length > 155) throw new RangeError(`Path too long for a tar archive: "${entry.name}"`);
  }
  put(name, 0, 100);
  put(octal(entry.mode, 8), 100, 8);
  put(octal(0, 8), 108, 8); // uid
  put(octal(0, 8), 116, 8); // gid
  put(octal(entry.dir ? 0 : entry.size, 12), 124, 12);
  put(octal(entry.mtimeSec, 12), 136, 12);
  put("        ", 148, 8); // checksum is computed with spaces here
  put(entry.dir ? "5" : "0", 156, 1);
  put("ustar\0", 257, 6);
  put("00", 263, 2);
  put(prefix, 345, 155);
  let sum = 0;
  for (const b of h) sum += b;
  put(sum.toString(8).padStart(6, "0") + "\0 ", 148, 8);
  return h;
}

/** Every directory and file under `dir`, as tar entries named `<basename(dir)>/...`. */
function tarDirectory(dir: string): Uint8Array {
  const base = basename(dir);
  const parts: Uint8Array[] = [];
  const walk = (path: string): void => {
    const st = statSync(path);
    const rel = relative(dir, path);
    const name = rel === "" ? `${base}/` : `${base}/${rel}${st.isDirectory() ? "/" : ""}`;
    const mtimeSec = Math.floor(st.mtimeMs / 1000);
    if (st.isDirectory()) {
      parts.push(tarHeader({ name, size: 0, mode: 0o755, mtimeSec, dir: true }));
      for (const child of readdirSync(path).sort()) walk(join(path, child));
      return;
    }
    if (!st.isFile()) return;
    const data = readFileSync(path);
    parts.push(tarHeader({ name, size: data.length, mode: 0o644, mtimeSec, dir: false }));
    parts.push(data);
    const pad = (block - (data.length % block)) % block;
    if (pad) parts.push(new Uint8Array(pad));
  };
  walk(dir);
  parts.push(new Uint8Array(block * 2)); // end of archive
  return Buffer.concat(parts);
}

/** tar + gzip of a directory. */
export function tarGzDirectory(dir: string): Uint8Array {
  const zlib = process.getBuiltinModule("node:zlib") as typeof Zlib;
  return zlib.gzipSync(tarDirectory(dir));
}
