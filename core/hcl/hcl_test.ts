import assert from "node:assert/strict";
import { test } from "node:test";
import { HclSyntaxError, parseHcl } from "./mod.ts";

function value(text: string): unknown {
  return parseHcl(text).value;
}

function syntaxError(text: string): HclSyntaxError {
  try {
    parseHcl(text, { file: "t.hcl" });
  } catch (err) {
    assert.ok(err instanceof HclSyntaxError, `expected HclSyntaxError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected a syntax error for ${JSON.stringify(text)}`);
}

test("hcl: literals", () => {
  const table: [string, unknown][] = [
    ['a = "x"', { a: "x" }],
    ["a = 42", { a: 42 }],
    ["a = -7", { a: -7 }],
    ["a = 0", { a: 0 }],
    ["a = 0x1F", { a: 31 }],
    ["a = 0XfF", { a: 255 }],
    ["a = -0x10", { a: -16 }],
    ["a = 0755", { a: 493 }], // Go's ParseInt(s, 0, 64): leading 0 is octal
    ["a = 1.5", { a: 1.5 }],
    ["a = -2.25", { a: -2.25 }],
    ["a = 1e3", { a: 1000 }],
    ["a = 1.5E-2", { a: 0.015 }],
    ["a = .5", { a: 0.5 }],
    ["a = 0.25", { a: 0.25 }],
    ["a = true\nb = false", { a: true, b: false }],
    ['a = "80"', { a: "80" }], // a quoted number stays a string
    ["", {}],
    ["  # only a comment\n", {}],
  ];
  for (const [text, want] of table) assert.deepEqual(value(text), want, text);
});

test("hcl: strings: Go escapes, interpolations kept as written", () => {
  const table: [string, string][] = [
    [String.raw`"a\tb\nc"`, "a\tb\nc"],
    [String.raw`"q\"q"`, 'q"q'],
    [String.raw`"back\\slash"`, "back\\slash"],
    [String.raw`"\u00e9\U0001F600"`, "é😀"],
    [String.raw`"\x41\101"`, "AA"],
    [String.raw`"\a\b\f\r\v"`, "\x07\b\f\r\v"],
    ['"${node.name}"', "${node.name}"],
    ['"a ${lookup(var.m, "k")} b"', 'a ${lookup(var.m, "k")} b'],
    ['"${x("\\n")}"', '${x("\\n")}'],
    ['"value.node == \\"${node}\\""', 'value.node == "${node}"'],
    ['"$5 and {braces}"', "$5 and {braces}"],
    ['""', ""],
  ];
  for (const [literal, want] of table) assert.equal((value(`a = ${literal}`) as { a: string }).a, want, literal);
});

test("hcl: heredocs", () => {
  assert.equal((value("a = <<EOF\nline1\n  line2\nEOF\n") as { a: string }).a, "line1\n  line2\n");
  assert.equal((value("a = <<EOF\nEOF\n") as { a: string }).a, "");
  // The anchor may end the text without a newline.
  assert.equal((value("a = <<EOF\nx\nEOF") as { a: string }).a, "x\n");
  // The text is not interpreted: quotes, ${}, # and braces are kept.
  assert.equal((value('a = <<EOT\n{"k": "${v}"} # not a comment\nEOT\n') as { a: string }).a, '{"k": "${v}"} # not a comment\n');
  // <<-: the indentation of the closing anchor is removed from every line.
  assert.equal((value("a = <<-EOT\n    x\n      y\n    EOT\n") as { a: string }).a, "x\n  y\n");
  // <<-, a line less indented than the anchor: nothing is removed (hcl/token unindentHeredoc).
  assert.equal((value("a = <<-EOT\n    x\n  y\n    EOT\n") as { a: string }).a, "    x\n  y\n");
  // <<, indented anchor: hcl keeps the text up to the anchor, indentation included.
  assert.equal((value("a = <<EOF\nx\n  EOF\n") as { a: string }).a, "x\n  ");
  // A line that merely contains the anchor does not close it.
  assert.equal((value("a = <<EOF\nnot EOF here\nEOF\n") as { a: string }).a, "not EOF here\n");
  // Heredocs in lists, CRLF after the anchor.
  assert.deepEqual(value("l = [<<A\r\none\r\nA\r\n, \"two\"]"), { l: ["one\r\n", "two"] });
});

test("hcl: comments of all three kinds, anywhere whitespace may be", () => {
  const text = `
# hash
// slashes
/* block
   comment */ a = 1 # trailing
b = [ # in a list
  1, /* inline */ 2, // last
]
c { /* empty block */ }
`;
  assert.deepEqual(value(text), { a: 1, b: [1, 2], c: {} });
});

test("hcl: blocks, objects, lists", () => {
  assert.deepEqual(value("ports { http = 8500, dns = -1 }"), { ports: { http: 8500, dns: -1 } });
  assert.deepEqual(value("ports = { http = 8500 }"), { ports: { http: 8500 } }); // `=` or not, the same object
  assert.deepEqual(value("a { b { c = 1 } }"), { a: { b: { c: 1 } } });
  assert.deepEqual(value("weights { passing = 10 warning = 1 }"), { weights: { passing: 10, warning: 1 } }); // newlines mean nothing
  assert.deepEqual(value('l = ["a", "b",]'), { l: ["a", "b"] });
  assert.deepEqual(value("l = []"), { l: [] });
  assert.deepEqual(value("l = [[1, 2], [3]]"), { l: [[1, 2], [3]] });
  assert.deepEqual(value('l = [{ a = 1 }, { b = "x", c = [true] }]'), { l: [{ a: 1 }, { b: "x", c: [true] }] });
  assert.deepEqual(value('"quoted key" = 1\nnode.name-x = 2'), { "quoted key": 1, "node.name-x": 2 });
  assert.deepEqual(value("a = 1,\nb = 2,"), { a: 1, b: 2 }); // commas between items
  assert.deepEqual(value('header { "X-Token" = ["t"] }'), { header: { "X-Token": ["t"] } });
});

test("hcl: labels nest as objects, and blocks with different labels merge", () => {
  assert.deepEqual(value('service "web" { port = 80 }'), { service: { web: { port: 80 } } });
  assert.deepEqual(value('key_prefix "" { policy = "read" }\nkey_prefix "foo/" { policy = "write" }'), {
    key_prefix: { "": { policy: "read" }, "foo/": { policy: "write" } },
  });
  assert.deepEqual(value('a "b" "c" { x = 1 }\na "b" "d" { y = 2 }'), { a: { b: { c: { x: 1 }, d: { y: 2 } } } });
  assert.deepEqual(value('a b { x = 1 }'), { a: { b: { x: 1 } } }); // labels may be identifiers
  // The same labels twice: a list, as a repeated block.
  assert.deepEqual(value('s "w" { p = 1 }\ns "w" { p = 2 }'), { s: { w: [{ p: 1 }, { p: 2 }] } });
});

test("hcl: a repeated key collects as hcl.Decode does", () => {
  // Repeated blocks: a list.
  assert.deepEqual(value('service { name = "a" }\nservice { name = "b" }'), { service: [{ name: "a" }, { name: "b" }] });
  // Repeated lists: concatenated.
  assert.deepEqual(value('tags = ["a"]\ntags = ["b", "c"]'), { tags: ["a", "b", "c"] });
  // Blocks and lists mix into one list.
  assert.deepEqual(value('checks = [{ id = "a" }]\nchecks { id = "b" }'), { checks: [{ id: "a" }, { id: "b" }] });
  // A plain value given again replaces the earlier one.
  assert.deepEqual(value("a = 1\na = 2"), { a: 2 });
  // Inside a block, the same rules.
  assert.deepEqual(value("x {\n y { n = 1 }\n y { n = 2 }\n}"), { x: { y: [{ n: 1 }, { n: 2 }] } });
});

test("hcl: a text that starts with { is JSON", () => {
  assert.deepEqual(value('  {"a": {"b": [1, "x"]}}'), { a: { b: [1, "x"] } });
  const e = syntaxError("{\n  \"a\": 1,\n}");
  assert.deepEqual([e.line, e.column], [3, 1]);
  assert.match(syntaxError("[1]").message, /Expected a key but found "\["/); // only "{" starts JSON
});

test("hcl: positions of keys, labels and list elements", () => {
  const doc = parseHcl('datacenter = "dc1"\n\nports {\n  http = 1\n}\nservice "web" {\n  port = 80\n}\nl = [\n  1,\n    2,\n]\ncheck { id = "a" }\ncheck { id = "b" }\n');
  const v = doc.value as Record<string, Record<string, unknown>>;
  assert.deepEqual(doc.position(v, "datacenter"), { line: 1, column: 1 });
  assert.deepEqual(doc.position(v, "ports"), { line: 3, column: 1 });
  assert.deepEqual(doc.position(v.ports!, "http"), { line: 4, column: 3 });
  assert.deepEqual(doc.position(v.service!, "web"), { line: 6, column: 9 });
  assert.deepEqual(doc.position(v.service!.web as object, "port"), { line: 7, column: 3 });
  assert.deepEqual(doc.position(v.l!, 1), { line: 11, column: 5 });
  assert.deepEqual(doc.position(v.check!, 1), { line: 14, column: 1 });
  assert.equal(doc.position({}, "x"), undefined);
});

test("hcl: __proto__ is an ordinary key", () => {
  const v = value('__proto__ = 1\n"constructor" { x = 1 }') as Record<string, unknown>;
  assert.deepEqual(Object.keys(v), ["__proto__", "constructor"]);
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.equal(v.__proto__, 1);
});

test("hcl: syntax errors name line, column and what was expected", () => {
  const cases: [string, number, number, RegExp][] = [
    ['a = "x', 1, 5, /String is not terminated/],
    ['a = "x\ny"', 1, 5, /String is not terminated/],
    ["a = foo", 1, 5, /Expected a value for "a" but found "foo": quote strings/],
    ["a = ", 1, 5, /Expected a value for "a" but found end of input/],
    ["a 1", 1, 3, /Expected "=" or "{" after "a" but found the number 1/],
    ["= 1", 1, 1, /Expected a key but found "="/],
    ['a "b" = 1', 1, 7, /Expected "\{" after the block labels of "a"/],
    ["a {\n  b = 1\n", 1, 3, /Expected "\}" to close the block/],
    ["a = 1\n}", 2, 1, /Unexpected "\}"/],
    ["l = [1 2]", 1, 8, /Expected "," or "\]" in a list but found the number 2/],
    ["l = [1,", 1, 5, /Expected "\]" to close the list/],
    ["a = 1 / 2", 1, 7, /Unexpected "\/"/],
    ["/* open", 1, 1, /Comment is not terminated/],
    ["a = 09", 1, 5, /Invalid octal number 09/],
    ["a = 0x", 1, 5, /Invalid hexadecimal number/],
    ["a = 1e", 1, 5, /exponent has no digits/],
    [String.raw`a = "\q"`, 1, 6, /Invalid escape "\\q"/],
    [String.raw`a = "\400"`, 1, 6, /Invalid escape/],
    ['a = "${x"', 1, 5, /String is not terminated/], // the quote belongs to the interpolation
    ["a = <<EOF\nx\n", 1, 5, /Heredoc is not terminated: expected a line "EOF"/],
    ["a = <<EOF x\n", 1, 10, /Invalid characters after the heredoc anchor/],
    ["a = <<\nx\n", 1, 5, /Heredoc has no anchor/],
    ["a = < 1", 1, 5, /a heredoc starts with "<<"/],
    ["a = @", 1, 5, /Unexpected "@"/],
    ['s "x" { }\ns { }', 2, 1, /"s" is written both with and without block labels/],
    ["a = 1\na { }", 1, 1, /"a" is given both a plain value and a block or list/],
  ];
  for (const [text, line, column, reason] of cases) {
    const e = syntaxError(text);
    assert.deepEqual([e.line, e.column], [line, column], `${JSON.stringify(text)}: ${e.message}`);
    assert.match(e.reason, reason, JSON.stringify(text));
    assert.equal(e.file, "t.hcl");
    assert.match(e.message, new RegExp(`^"t\\.hcl" line ${line}, column ${column}: `));
  }
});
