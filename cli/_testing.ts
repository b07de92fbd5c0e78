// Test support: a CliIo that records output and serves stdin/files from memory.
import { FakeAgent } from "../core/api/fake_agent.ts";
import type { CliIo } from "./_io.ts";

export interface TestIo extends CliIo {
  out: string[];
  err: string[];
  readonly stdoutText: string;
  readonly stderrText: string;
}

export function testIo(options: {
  agent?: FakeAgent;
  stdin?: string;
  files?: Record<string, string>;
  env?: Record<string, string>;
} = {}): TestIo {
  const out: string[] = [];
  const err: string[] = [];
  const enc = new TextEncoder();
  return {
    out,
    err,
    get stdoutText() {
      return out.join("");
    },
    get stderrText() {
      return err.join("");
    },
    stdout: (s) => void out.push(s),
    stderr: (s) => void err.push(s),
    stdin: async () => enc.encode(options.stdin ?? ""),
    env: options.env ?? {},
    readFile: async (path) => {
      const text = options.files?.[path];
      if (text === undefined) throw new Error(`open ${path}: no such file or directory`);
      return enc.encode(text);
    },
    fetch: (options.agent ?? new FakeAgent()).fetch,
  };
}

export { FakeAgent };
