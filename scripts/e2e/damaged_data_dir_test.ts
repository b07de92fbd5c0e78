// End-to-end: the real binary on a damaged data dir. One server writes some
// keys and stops; then copies of its data dir are damaged and it is started
// on each: a torn last log record is cut (the start goes on, every key is
// there, and the output names the segment); a flipped
// byte inside the log, a damaged Raft stable state and a damaged node-id
// each stop the start with a non-zero exit and a message naming the file.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, cpSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getJson, startAgent, tempDir, waitFor, waitUp, type Agent } from "./harness.ts";

const root = tempDir("cairn-damaged-e2e-");
after(() => {
  if (process.env.KEEP_E2E_DIRS) console.log(`kept ${root.path}`);
  else root.remove();
});

/** The one server, on the data dir `dir`; not waited for. */
function start(dir: string): Promise<Agent> {
  return startAgent("s1", { server: true, dir, args: ["-bootstrap-expect=1"], ready: false });
}

/** The server must exit non-zero on its own, saying what is wrong with `file`. */
async function assertRefuses(dir: string, file: string, what: string): Promise<void> {
  const s = await start(dir);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const code = await Promise.race([s.proc.exited, new Promise<string>((r) => (timer = setTimeout(() => r("still running after 30 s"), 30_000)))]);
  clearTimeout(timer);
  const output = s.proc.output();
  await s.proc.kill("SIGKILL");
  assert.notEqual(code, 0, `${what}: exit code ${code}\n${output.slice(-3000)}`);
  assert.notEqual(code, "still running after 30 s", `${what}: the server started on a damaged file\n${output.slice(-3000)}`);
  assert.ok(output.includes(file), `${what}: the output does not name "${file}":\n${output.slice(-3000)}`);
}

function segmentsOf(dir: string): string[] {
  return readdirSync(join(dir, "raft")).filter((n) => /^\d{20}\.log$/.test(n)).sort();
}

test("a damaged data dir: a torn log tail is cut and the server starts; other damage stops it naming the file", { timeout: 240_000 }, async () => {
  const pristine = join(root.path, "pristine");
  const first = await start(pristine);
  await waitUp(first, "leader");
  const keys = 25;
  for (let i = 0; i < keys; i++) {
    const r = await fetch(`${first.http}/v1/kv/damage/k${i}`, { method: "PUT", body: `v${i}` });
    assert.equal(r.status, 200, await r.text());
  }
  await first.proc.kill("SIGTERM");
  const segs = segmentsOf(pristine);
  assert.ok(segs.length >= 1, "a Raft log segment on disk");
  const copy = (name: string): string => {
    const dir = join(root.path, name);
    rmSync(dir, { recursive: true, force: true });
    cpSync(pristine, dir, { recursive: true });
    return dir;
  };

  // 1. A torn last record (a crash mid-append): cut on start, the rest served.
  {
    const dir = copy("torn");
    const last = join(dir, "raft", segmentsOf(dir).at(-1)!);
    appendFileSync(last, new Uint8Array([0, 0, 1, 0, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3]));
    const s = await start(dir);
    await waitUp(s, "leader");
    // Every write was acknowledged before the stop, so the cut record is the junk only: all keys are there.
    const entries = await waitFor(async () => {
      const e = await getJson(`${s.http}/v1/kv/damage/?recurse`, 10_000);
      return Array.isArray(e) && e.length === keys ? e : undefined;
    }, { timeoutMs: 30_000, what: `all ${keys} keys after the restart` }).catch((err) => {
      throw new Error(`${String(err)}\n--- output ---\n${s.proc.output().slice(-3000)}`);
    });
    assert.equal(entries.length, keys);
    assert.match(s.proc.output(), /torn tail/i, "the cut is logged");
    assert.ok(s.proc.output().includes(last), `the warning names "${last}":\n${s.proc.output().slice(-3000)}`);
    await s.proc.kill("SIGTERM");
  }

  // 2. A flipped byte inside the log (before the last record): refused, naming the segment.
  {
    const dir = copy("flipped");
    const seg = join(dir, "raft", segmentsOf(dir)[0]!);
    const bytes = readFileSync(seg);
    bytes[Math.floor(bytes.length / 3)]! ^= 0x10;
    writeFileSync(seg, bytes);
    await assertRefuses(dir, seg, "a flipped byte in the log");
  }

  // 3. A damaged Raft stable state (term, vote, commit): refused, naming it.
  {
    const dir = copy("stable");
    const stable = join(dir, "raft", "stable");
    const bytes = readFileSync(stable);
    bytes[bytes.length - 2]! ^= 0x01;
    writeFileSync(stable, bytes);
    await assertRefuses(dir, stable, "a damaged stable state");
  }

  // 4. A damaged node-id: refused, naming it (a new ID would be a new Raft member).
  {
    const dir = copy("node-id");
    const file = join(dir, "node-id");
    const text = readFileSync(file, "utf8");
    writeFileSync(file, text.slice(0, 20));
    await assertRefuses(dir, file, "a damaged node-id");
  }
});
