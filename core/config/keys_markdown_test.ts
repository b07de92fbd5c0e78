import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { KEYS_BEGIN, KEYS_END, keysMarkdown } from "./keys_markdown.ts";

const page = join(import.meta.dirname, "../../docs/configuration.md");

test("docs/configuration.md shows the key table as keys.ts has it (REWRITE=1 regenerates)", () => {
  const text = readFileSync(page, "utf8");
  const begin = text.indexOf(KEYS_BEGIN);
  const end = text.indexOf(KEYS_END);
  assert.ok(begin >= 0 && end > begin, `docs/configuration.md must hold the markers ${KEYS_BEGIN} … ${KEYS_END}`);
  const current = text.slice(begin, end + KEYS_END.length);
  const wanted = keysMarkdown();
  if (process.env.REWRITE === "1" && current !== wanted) {
    writeFileSync(page, text.slice(0, begin) + wanted + text.slice(end + KEYS_END.length));
    return;
  }
  assert.equal(current, wanted, "the key table in docs/configuration.md is out of date: run REWRITE=1 node --import tsx --test core/config/keys_markdown_test.ts");
});
