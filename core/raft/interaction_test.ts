// Data-driven interaction tests (etcd-io/raft `interaction_test.go`): each
// testdata/*.txt file is a script of commands, each followed by `----` and
// the expected output. REWRITE=1 regenerates the expected output; review the diff.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InteractionEnv } from "./_interaction_env.ts";

const dir = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "testdata");
const rewrite = process.env.REWRITE === "1";

interface Block {
  line: number;
  command: string;
  expected: string;
}

function parse(text: string): { blocks: Block[]; preamble: string[] } {
  const lines = text.split("\n");
  const blocks: Block[] = [];
  let i = 0;
  const comments: string[] = [];
  while (i < lines.length) {
    const l = lines[i]!;
    if (l.trim() === "" || l.startsWith("#")) {
      i++;
      continue;
    }
    const start = i;
    const command = l.trim();
    i++;
    if (lines[i] !== "----") throw new Error(`line ${i + 1}: expected ---- after "${command}"`);
    i++;
    const out: string[] = [];
    while (i < lines.length && lines[i] !== "") out.push(lines[i++]!);
    blocks.push({ line: start + 1, command, expected: out.join("\n") });
  }
  return { blocks, preamble: comments };
}

function run(env: InteractionEnv, command: string): string {
  const words = command.split(/\s+/);
  const cmd = words[0]!;
  const pos: string[] = [];
  const args: Record<string, string> = {};
  for (const w of words.slice(1)) {
    const eq = w.indexOf("=");
    if (eq > 0) args[w.slice(0, eq)] = w.slice(eq + 1);
    else pos.push(w);
  }
  const out = env.handle(cmd, args, pos);
  return out.trim() === "" ? "ok" : out.replace(/\n\s*\n/g, "\n");
}

for (const file of readdirSync(dir).filter((f) => f.endsWith(".txt")).sort()) {
  test(`raft interaction: ${file}`, () => {
    const path = join(dir, file);
    const text = readFileSync(path, "utf8");
    const { blocks } = parse(text);
    const env = new InteractionEnv();
    if (rewrite) {
      // Keep comments and commands, replace every output.
      const lines = text.split("\n");
      const out: string[] = [];
      let i = 0;
      while (i < lines.length) {
        const l = lines[i]!;
        if (l.trim() === "" || l.startsWith("#")) {
          out.push(l);
          i++;
          continue;
        }
        out.push(l, "----", run(env, l.trim()));
        i += 2;
        while (i < lines.length && lines[i] !== "") i++;
      }
      writeFileSync(path, out.join("\n").replace(/\n*$/, "\n"));
      return;
    }
    for (const b of blocks) {
      const got = run(env, b.command);
      assert.equal(got, b.expected, `${file}:${b.line}: ${b.command}`);
    }
  });
}
