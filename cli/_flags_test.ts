import assert from "node:assert/strict";
import { test } from "node:test";
import { FlagError, HelpRequested, normalizeArgs, parseFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";

test("normalizeArgs: single-dash long flags become double-dash", () => {
  const table: [string[], string[]][] = [
    [["-recurse"], ["--recurse"]],
    [["-http-addr=1.2.3.4:8500"], ["--http-addr=1.2.3.4:8500"]],
    [["--token", "x"], ["--token", "x"]],
    [["-"], ["-"]],
    [["-5"], ["-5"]],
    [["-1.5", "-.5"], ["-1.5", "-.5"]],
    [["-cas", "--", "-x"], ["--cas", "--", "-x"]],
    [["key", "-flags=3"], ["key", "--flags=3"]],
  ];
  for (const [input, want] of table) assert.deepEqual(normalizeArgs(input), want, JSON.stringify(input));
});

const specs: FlagSpec[] = [
  { name: "recurse", kind: "bool", usage: "" },
  { name: "http-addr", kind: "string", usage: "" },
  { name: "flags", kind: "uint", usage: "" },
  { name: "delta", kind: "int", usage: "" },
  { name: "retry-interval", kind: "duration", usage: "" },
  { name: "join", kind: "list", usage: "" },
];

test("parseFlags: Go flag semantics", () => {
  const p = parseFlags(["-recurse", "--http-addr", "h:1", "-flags=7", "-join=a", "-join", "b", "key", "-flags=9"], specs);
  assert.equal(p.values.get("recurse"), true);
  assert.equal(p.values.get("http-addr"), "h:1");
  assert.equal(p.values.get("flags"), 7);
  assert.deepEqual(p.values.get("join"), ["a", "b"]);
  // Parsing stops at the first positional: the rest is data.
  assert.deepEqual(p.positionals, ["key", "-flags=9"]);
  assert.deepEqual(parseFlags(["-recurse=false"], specs).values.get("recurse"), false);
  assert.deepEqual(parseFlags(["-recurse=1"], specs).values.get("recurse"), true);
  assert.deepEqual(parseFlags(["-", "x"], specs).positionals, ["-", "x"]);
  assert.deepEqual(parseFlags(["-5"], specs).positionals, ["-5"]);
  assert.deepEqual(parseFlags(["--", "-recurse"], specs).positionals, ["-recurse"]);
  assert.equal(parseFlags(["-delta=-3"], specs).values.get("delta"), -3);
  assert.equal(parseFlags(["-retry-interval=1m30s"], specs).values.get("retry-interval"), 90_000);
  assert.deepEqual(
    parseFlags(["-join=a", "-recurse", "-join=b"], specs).occurrences.map((o) => o.name),
    ["join", "recurse", "join"],
  );
});

test("parseFlags: errors name the flag", () => {
  const msg = (args: string[]) => {
    try {
      parseFlags(args, specs);
    } catch (err) {
      assert.ok(err instanceof FlagError, String(err));
      return err.message;
    }
    return "no error";
  };
  assert.equal(msg(["-bogus"]), "flag provided but not defined: -bogus");
  assert.equal(msg(["--bogus=1"]), "flag provided but not defined: -bogus");
  assert.equal(msg(["-flags=abc"]), 'invalid value "abc" for flag -flags: parse error');
  assert.equal(msg(["-flags=-1"]), 'invalid value "-1" for flag -flags: parse error');
  assert.equal(msg(["-recurse=maybe"]), 'invalid boolean value "maybe" for -recurse: parse error');
  assert.equal(msg(["-http-addr"]), "flag needs an argument: -http-addr");
  assert.equal(msg(["-retry-interval=10"]), 'invalid value "10" for flag -retry-interval: parse error');
  assert.equal(msg(["---x"]), "bad flag syntax: ---x");
  assert.throws(() => parseFlags(["-h"], specs), HelpRequested);
  assert.throws(() => parseFlags(["--help"], specs), HelpRequested);
});
