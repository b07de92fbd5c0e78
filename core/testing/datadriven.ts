// Data-driven test scripts (cockroachdb/datadriven, as etcd-io/raft's
// interaction_test.go uses it): a file of commands, each followed by `----`
// and its expected output up to the next blank line. Lines starting with `#`
// between commands are comments. A command is `name word key=value ...`;
// lines between the command and `----` are its input.
//
//   # A comment.
//   add-nodes 3 seed=7
//   ----
//   ok
//
// `runFile` runs a file through a handler and compares each output, or with
// REWRITE=1 writes every output back into the file (comments, commands and
// inputs kept): review the diff. An empty output renders as `ok`; blank lines
// inside an output are dropped (a blank line ends the block).
// Test-only (reads and writes files).
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";

export interface TestData {
  /** "file.txt:line" of the command, for messages. */
  pos: string;
  /** The command's first word. */
  cmd: string;
  /** The other words without `=`, in order. */
  args: string[];
  /** The `key=value` words. */
  kv: Record<string, string>;
  /** Lines between the command and `----`, joined with newlines ("" if none). */
  input: string;
  /** The expected output as written in the file. */
  expected: string;
}

interface Block {
  data: TestData;
  /** The file's lines from the command to the `----` line (kept by a rewrite). */
  head: string[];
}

type Part = { kind: "text"; line: string } | { kind: "block"; block: Block };

/** Split a script into comments/blank lines and command blocks. */
export function parseScript(text: string, file = "script"): TestData[] {
  return parse(text, file).flatMap((p) => (p.kind === "block" ? [p.block.data] : []));
}

function parse(text: string, file: string): Part[] {
  const lines = text.replace(/\n$/, "").split("\n");
  const parts: Part[] = [];
  let i = 0;
  while (i < lines.length) {
    const l = lines[i]!;
    if (l.trim() === "" || l.startsWith("#")) {
      parts.push({ kind: "text", line: l });
      i++;
      continue;
    }
    const start = i;
    const input: string[] = [];
    i++;
    while (i < lines.length && lines[i] !== "----") {
      if (lines[i]!.trim() === "") throw new SyntaxError(`${file}:${start + 1}: expected ---- after "${l.trim()}"`);
      input.push(lines[i++]!);
    }
    if (i >= lines.length) throw new SyntaxError(`${file}:${start + 1}: expected ---- after "${l.trim()}"`);
    const head = lines.slice(start, i + 1);
    i++;
    const out: string[] = [];
    while (i < lines.length && lines[i] !== "") out.push(lines[i++]!);
    const words = l.trim().split(/\s+/);
    const args: string[] = [];
    const kv: Record<string, string> = {};
    for (const w of words.slice(1)) {
      const eq = w.indexOf("=");
      if (eq > 0) kv[w.slice(0, eq)] = w.slice(eq + 1);
      else args.push(w);
    }
    parts.push({
      kind: "block",
      block: { head, data: { pos: `${file}:${start + 1}`, cmd: words[0]!, args, kv, input: input.join("\n"), expected: out.join("\n") } },
    });
  }
  return parts;
}

/** How an output is written into a script: never empty, no blank lines, no trailing white space. */
export function normalizeOutput(out: string): string {
  const s = out.replace(/\n\s*\n/g, "\n").replace(/^\n+/, "").trimEnd();
  return s.trim() === "" ? "ok" : s;
}

/**
 * Run every command of the script at `path` through `handle` (one handler
 * per file: it holds the file's world) and assert each output, or rewrite
 * the file when `rewrite` (default: REWRITE=1 in the environment).
 */
export function runFile(path: string, handle: (d: TestData) => string, options: { rewrite?: boolean } = {}): void {
  const rewrite = options.rewrite ?? process.env.REWRITE === "1";
  const file = basename(path);
  const parts = parse(readFileSync(path, "utf8"), file);
  const out: string[] = [];
  for (const p of parts) {
    if (p.kind === "text") {
      out.push(p.line);
      continue;
    }
    const d = p.block.data;
    let got: string;
    try {
      got = normalizeOutput(handle(d));
    } catch (err) {
      if (err instanceof Error) err.message = `${d.pos}: ${d.cmd}: ${err.message}`;
      throw err;
    }
    if (!rewrite) assert.equal(got, d.expected, `${d.pos}: ${p.block.head[0]!.trim()} (REWRITE=1 regenerates; review the diff)`);
    out.push(...p.block.head, got);
  }
  if (rewrite) writeFileSync(path, out.join("\n").replace(/\n*$/, "\n"));
}

/** The `*.txt` scripts in `dir`, sorted, as full paths. */
export function scriptFiles(dir: string): string[] {
  return readdirSync(dir).filter((f) => f.endsWith(".txt")).sort().map((f) => join(dir, f));
}
