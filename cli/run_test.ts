import assert from "node:assert/strict";
import { test } from "node:test";
import { commands, findCommand, runCli, usage } from "./run.ts";
import { testIo } from "./_testing.ts";

test("findCommand: longest match of leading words", () => {
  assert.equal(findCommand(["kv", "get", "foo"])?.command.name, "kv get");
  assert.deepEqual(findCommand(["kv", "get", "foo"])?.args, ["foo"]);
  assert.equal(findCommand(["kv"])?.command.name, "kv");
  assert.equal(findCommand(["kv", "nope"])?.command.name, "kv");
  assert.deepEqual(findCommand(["kv", "-recurse", "get"])?.args, ["-recurse", "get"]);
  assert.equal(findCommand(["version"])?.command.name, "version");
  assert.equal(findCommand(["nope"]), undefined);
  assert.equal(findCommand([]), undefined);
  // Every leaf's parent exists, so `cairn kv` style help always works.
  for (const c of commands) {
    const words = c.name.split(" ");
    for (let n = 1; n < words.length; n++) assert.ok(findCommand(words.slice(0, n)), `parent of ${c.name}`);
  }
});

test("usage and exit codes", async () => {
  let io = testIo();
  assert.equal(await runCli([], io), 1);
  assert.match(io.stderrText, /^Usage: cairn \[--version\] \[--help\] <command> \[<args>\]/);
  assert.match(io.stderrText, /\n    kv +Interact with the key-value store\n/);
  assert.doesNotMatch(io.stderrText, /kv get/);

  io = testIo();
  assert.equal(await runCli(["--help"], io), 0);
  assert.equal(io.stdoutText, usage());
  io = testIo();
  assert.equal(await runCli(["-h"], io), 0);

  io = testIo();
  assert.equal(await runCli(["frobnicate"], io), 1);
  assert.match(io.stderrText, /Unknown command: "frobnicate"/);
  assert.equal(io.stdoutText, "");

  io = testIo();
  assert.equal(await runCli(["kv", "get", "-h"], io), 0);
  assert.match(io.stdoutText, /^Usage: cairn kv get \[options\] \[KEY_OR_PREFIX\]/);
  assert.match(io.stdoutText, /\n  -recurse\n/);
  assert.match(io.stdoutText, /\n  -http-addr=<address>\n/);

  io = testIo();
  assert.equal(await runCli(["kv", "put", "k", "-help"], io), 0, "-help anywhere before -- means help");

  io = testIo();
  assert.equal(await runCli(["kv"], io), 1);
  assert.match(io.stderrText, /Subcommands:\n    delete    Removes data from the KV store\n/);

  io = testIo();
  assert.equal(await runCli(["kv", "-h"], io), 0);
  assert.match(io.stdoutText, /Subcommands:/);

  io = testIo();
  assert.equal(await runCli(["kv", "get", "-bogus", "x"], io), 1);
  assert.match(io.stderrText, /^flag provided but not defined: -bogus\n/);

  io = testIo();
  assert.equal(await runCli(["kv", "put", "-flags=x", "k"], io), 1);
  assert.match(io.stderrText, /^invalid value "x" for flag -flags: parse error\n/);
});

test("version: pretty and json", async () => {
  let io = testIo();
  assert.equal(await runCli(["version"], io), 0);
  assert.match(io.stdoutText, /^cairn v\d+\.\d+\.\d+\n/);
  assert.match(io.stdoutText, /Protocol 2 spoken by default/);
  io = testIo();
  assert.equal(await runCli(["--version"], io), 0);
  assert.match(io.stdoutText, /^cairn v/);
  io = testIo();
  assert.equal(await runCli(["version", "-format=json"], io), 0);
  const info = JSON.parse(io.stdoutText);
  assert.deepEqual(Object.keys(info), ["Version", "Revision", "Prerelease", "FIPS", "BuildDate", "RPC"]);
  io = testIo();
  assert.equal(await runCli(["version", "-format=yaml"], io), 1);
  assert.match(io.stderrText, /Invalid format "yaml"/);
});

test("commands loaded on first use: the table's name and synopsis are the module's own", async () => {
  const lazy = commands.filter((c) => c.load);
  assert.ok(lazy.length >= 20, `${lazy.length} lazily loaded commands`);
  for (const c of lazy) {
    const real = await c.load!();
    assert.equal(real.name, c.name);
    assert.equal(real.synopsis, c.synopsis, c.name);
    assert.equal(real.hidden ?? false, c.hidden ?? false, c.name);
  }
});
