// The web UI's files in one blob (scripts/build.ts writes it, deflated, as
// the executable's asset "cairn-ui"; core/http/ui_assets_node.ts reads it on
// the first request for the UI). Layout: a 4-byte big-endian length, that
// many bytes of JSON `[{ name, type, size }]`, then the files' bytes in the
// same order. Pure: no I/O, no node: modules.

export interface UiFile {
  readonly body: Uint8Array;
  /** Content-Type header value. */
  readonly type: string;
}

interface Entry {
  name: string;
  type: string;
  size: number;
}

/** Pack files (name → file) into one blob. */
export function packUiFiles(files: ReadonlyMap<string, UiFile>): Uint8Array {
  const entries: Entry[] = [...files].map(([name, f]) => ({ name, type: f.type, size: f.body.length }));
  const header = new TextEncoder().encode(JSON.stringify(entries));
  const total = 4 + header.length + entries.reduce((n, e) => n + e.size, 0);
  const out = new Uint8Array(total);
  new DataView(out.buffer).setUint32(0, header.length);
  out.set(header, 4);
  let at = 4 + header.length;
  for (const f of files.values()) {
    out.set(f.body, at);
    at += f.body.length;
  }
  return out;
}

/** The files of a blob from packUiFiles; a damaged blob is a RangeError (the build made it: never peer input). */
export function unpackUiFiles(blob: Uint8Array): Map<string, UiFile> {
  if (blob.length < 4) throw new RangeError("UI asset is damaged: shorter than its header");
  const headerLength = new DataView(blob.buffer, blob.byteOffset, blob.byteLength).getUint32(0);
  if (4 + headerLength > blob.length) throw new RangeError("UI asset is damaged: header runs past the end");
  const entries = JSON.parse(new TextDecoder().decode(blob.subarray(4, 4 + headerLength))) as Entry[];
  const files = new Map<string, UiFile>();
  let at = 4 + headerLength;
  for (const e of entries) {
    if (at + e.size > blob.length) throw new RangeError(`UI asset is damaged: "${e.name}" runs past the end`);
    files.set(e.name, { body: blob.subarray(at, at + e.size), type: e.type });
    at += e.size;
  }
  return files;
}
