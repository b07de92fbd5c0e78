// `cairn snapshot save | restore | inspect`, as consul command/snapshot: the
// whole server state as one verified archive file.
import { lazyFsPromises } from "../core/lazy_builtins_node.ts";
import { encode } from "@msgpack/msgpack";
import { errorMessage } from "../core/errors.ts";
import { readSnapshotArchive } from "../core/server/snapshot_archive.ts";
import { decodeSnapshot } from "../core/state/snapshot.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const rename = lazyFsPromises("rename");
const rm = lazyFsPromises("rm");
const writeFile = lazyFsPromises("writeFile");

function oneFile(positionals: string[], io: CliIo): string | undefined {
  if (positionals.length === 1) return positionals[0]!;
  io.stderr(positionals.length === 0 ? "Missing FILE argument\n" : `Too many arguments (expected 1, got ${positionals.length})\n`);
  return undefined;
}

/** Flags, exactly one FILE, and its bytes; an exit code when any of that fails. */
async function openSnapshotFile(cmd: Command, args: string[], flags: readonly FlagSpec[], io: CliIo): Promise<{ p: ParsedFlags; archive: Uint8Array } | number> {
  const p = parseCommandFlags(cmd, args, flags, io);
  if (typeof p === "number") return p;
  const file = oneFile(p.positionals, io);
  if (file === undefined) return 1;
  try {
    return { p, archive: await io.readFile(file) };
  } catch (err) {
    io.stderr(`Error opening snapshot file: ${errorMessage(err)}\n`);
    return 1;
  }
}

const saveFlags: readonly FlagSpec[] = [...httpFlags];

export const snapshotSave: Command = {
  name: "snapshot save",
  synopsis: "Saves snapshot of Cairn server state",
  help: () => formatHelp(`
Usage: cairn snapshot save [options] FILE

  Retrieves an atomic, point-in-time snapshot of the state of the Cairn servers
  which includes key/value entries, service catalog, sessions and checks, and
  saves it to FILE.

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
    let archive: Uint8Array;
    try {
      archive = (await apiClientFromFlags(p, io).requestBytes({ method: "GET", path: "/v1/snapshot", params: { stale: bool(p, "stale") } })).bytes;
    } catch (err) {
      io.stderr(`Error saving snapshot: ${apiErrorText(err)}\n`);
      return 1;
    }
    // Verify before the file takes its name, so a bad save never replaces a good one.
    let index: number;
    try {
      index = (await readSnapshotArchive(archive)).meta.Index;
    } catch (err) {
      io.stderr(`Error verifying snapshot file: ${errorMessage(err)}\n`);
      return 1;
    }
    const tmp = `${file}.tmp`;
    try {
      await writeFile(tmp, archive, { flush: true });
      await rename(tmp, file);
    } catch (err) {
      await rm(tmp, { force: true });
      io.stderr(`Error writing snapshot file: ${errorMessage(err)}\n`);
      return 1;
    }
    io.stdout(`Saved and verified snapshot to index ${index}\n`);
    return 0;
  },
};

const restoreFlags: readonly FlagSpec[] = [...httpFlags.filter((f) => f.name !== "stale")];

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

  To restore a snapshot from the file "backup.snap":

      $ cairn snapshot restore backup.snap
`, restoreFlags),
  async run(args, io) {
    const opened = await openSnapshotFile(snapshotRestore, args, restoreFlags, io);
    if (typeof opened === "number") return opened;
    const { p, archive } = opened;
    try {
      await apiClientFromFlags(p, io).request({ method: "PUT", path: "/v1/snapshot", body: archive });
    } catch (err) {
      io.stderr(`Error restoring snapshot: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout("Restored snapshot\n");
    return 0;
  },
};

/** Consul's humanize.Bytes-like sizes: 667B, 1.7KB, 12MB. */
function formatSize(n: number): string {
  const units = ["B", "KB", "MB", "GB"];
  let v = n;
  let u = 0;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return u === 0 ? `${n}B` : `${v < 10 ? v.toFixed(1).replace(/\.0$/, "") : Math.round(v)}${units[u]}`;
}

function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => ` ${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]! + 2))).join("")}`.trimEnd()).join("\n");
}

const inspectFlags: readonly FlagSpec[] = [];

export const snapshotInspect: Command = {
  name: "snapshot inspect",
  synopsis: "Displays information about a Cairn snapshot file",
  help: () => formatHelp(`
Usage: cairn snapshot inspect [options] FILE

  Displays information about a snapshot file on disk: its ID, size, Raft index
  and format version, then how many rows of each table it holds and their size.

  To inspect the file "backup.snap":

      $ cairn snapshot inspect backup.snap
`, inspectFlags),
  async run(args, io) {
    const opened = await openSnapshotFile(snapshotInspect, args, inspectFlags, io);
    if (typeof opened === "number") return opened;
    const { archive } = opened;
    const tables = new Map<string, { count: number; size: number }>();
    let meta;
    try {
      const opened = await readSnapshotArchive(archive);
      meta = opened.meta;
      for await (const rec of decodeSnapshot(opened.state)) {
        if (rec.t !== "rows") continue;
        const t = tables.get(rec.table) ?? { count: 0, size: 0 };
        for (const row of rec.rows) {
          t.count++;
          t.size += encode(row).length;
        }
        tables.set(rec.table, t);
      }
    } catch (err) {
      io.stderr(`Error verifying snapshot: ${errorMessage(err)}\n`);
      return 1;
    }
    const head = columns([["ID", meta.ID], ["Size", String(meta.Size)], ["Index", String(meta.Index)], ["Version", String(meta.Version)]]);
    const sorted = [...tables].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1));
    const total = sorted.reduce((n, [, t]) => n + t.size, 0);
    const body = columns([
      ["Type", "Count", "Size"],
      ["----", "----", "----"],
      ...sorted.map(([name, t]) => [name, String(t.count), formatSize(t.size)]),
      ["----", "----", "----"],
      ["Total", "", formatSize(total)],
    ]);
    io.stdout(`${head}\n\n${body}\n`);
    return 0;
  },
};
