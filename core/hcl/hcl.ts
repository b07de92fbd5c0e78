// HCL 1, the dialect hashicorp/hcl v1 reads (Consul's agent config, ACL
// policy rules), into plain JavaScript values with positions.
//
// Syntax (hcl/scanner, hcl/parser): `key = value` and blocks `key { … }`,
// `key "label" … { … }`; keys and labels are identifiers or quoted strings;
// identifiers may contain `-` and `.`; items may be separated by commas and
// newlines mean nothing. Values: strings ("…" with Go escapes, `${…}` kept as
// written), heredocs (`<<EOF`, `<<-EOF` indented), numbers (decimal, 0x hex,
// 0-prefixed octal; a fraction or exponent makes a float), true/false, lists
// `[a, b,]` and objects `{ a = 1, b = "x" }`. Comments: `#`, `//`, `/* */`.
// A text that starts with `{` is JSON (hcl.Parse does the same).
//
// Shape: HCL 1 decodes every block as a list of objects and leaves it to
// the consumer (Consul's HookWeakDecodeFromSlice) to unwrap single ones.
// Here that is done once, the way Consul's JSON twin of a file reads:
//   - a block (or `key = { … }`) is an object;
//   - labels nest: `service "web" { port = 80 }` → { service: { web: { port: 80 } } },
//     and blocks with different labels merge into one object;
//   - a key given more than once collects, as hcl.Decode does: blocks and
//     lists concatenate into one list (`service {…} service {…}` → [ {…}, {…} ],
//     `tags = ["a"] tags = ["b"]` → ["a", "b"]); a plain value given again
//     replaces the earlier one; mixing the two is an error.
// A consumer that expects a list where one block was written wraps it.
import { HclSyntaxError, LineIndex, PositionTable, setOwn, type ParsedDocument, type SourcePosition } from "./document.ts";
import { parseJsonDocument } from "./json.ts";

type Punct = "[" | "]" | "{" | "}" | "," | "=";

interface Token {
  type: "ident" | "bool" | "number" | "string" | "heredoc" | "eof" | Punct;
  /** Source text of the token. */
  text: string;
  /** Decoded value of a literal or key. */
  value: string | number | boolean;
  offset: number;
}

type Node =
  | { kind: "literal"; value: string | number | boolean; offset: number }
  | { kind: "list"; items: Node[]; offset: number }
  | { kind: "object"; items: Item[]; offset: number };

interface Key {
  text: string;
  offset: number;
}

interface Item {
  /** The key, then the block labels. */
  keys: Key[];
  value: Node;
}

function isLetter(ch: string): boolean {
  return (ch >= "a" && ch <= "z") || (ch >= "A" && ch <= "Z") || ch === "_" || (ch >= "\u0080" && /\p{L}/u.test(ch));
}

function isDigit(ch: string): boolean {
  return (ch >= "0" && ch <= "9") || (ch >= "\u0080" && /\p{Nd}/u.test(ch));
}

function isDecimal(ch: string | undefined): boolean {
  return ch !== undefined && ch >= "0" && ch <= "9";
}

function isHex(ch: string | undefined): boolean {
  return ch !== undefined && /^[0-9a-fA-F]$/.test(ch);
}

class Lexer {
  readonly #text: string;
  readonly #fail: (reason: string, offset: number) => never;
  #i = 0;

  constructor(text: string, fail: (reason: string, offset: number) => never) {
    this.#text = text;
    this.#fail = fail;
  }

  next(): Token {
    this.#skipSpaceAndComments();
    const t = this.#text;
    const start = this.#i;
    if (start >= t.length) return { type: "eof", text: "", value: "", offset: start };
    const ch = t[start]!;
    if (isLetter(ch)) {
      let j = start + 1;
      while (j < t.length && (isLetter(t[j]!) || isDigit(t[j]!) || t[j] === "-" || t[j] === ".")) j++;
      this.#i = j;
      const text = t.slice(start, j);
      if (text === "true" || text === "false") return { type: "bool", text, value: text === "true", offset: start };
      return { type: "ident", text, value: text, offset: start };
    }
    if (isDecimal(ch) || (ch === "-" && isDecimal(t[start + 1])) || (ch === "." && isDecimal(t[start + 1]))) return this.#number(start);
    if (ch === '"') return this.#string(start);
    if (ch === "<") return this.#heredoc(start);
    if ("[]{},=".includes(ch)) {
      this.#i = start + 1;
      return { type: ch as Punct, text: ch, value: ch, offset: start };
    }
    return this.#fail(`Unexpected ${JSON.stringify(ch)}`, start);
  }

  #skipSpaceAndComments(): void {
    const t = this.#text;
    for (;;) {
      const ch = t[this.#i];
      if (ch === " " || ch === "\t" || ch === "\n" || ch === "\r") {
        this.#i++;
      } else if (ch === "#" || (ch === "/" && t[this.#i + 1] === "/")) {
        const nl = t.indexOf("\n", this.#i);
        this.#i = nl === -1 ? t.length : nl;
      } else if (ch === "/" && t[this.#i + 1] === "*") {
        const end = t.indexOf("*/", this.#i + 2);
        if (end === -1) this.#fail("Comment is not terminated: expected \"*/\"", this.#i);
        this.#i = end + 2;
      } else if (ch === "/") {
        this.#fail('Unexpected "/": comments start with "//", "/*" or "#"', this.#i);
      } else {
        return;
      }
    }
  }

  #number(start: number): Token {
    const t = this.#text;
    let j = start;
    const negative = t[j] === "-";
    if (negative) j++;
    let float = false;
    const digits = (): void => {
      while (isDecimal(t[j])) j++;
    };
    const exponent = (): void => {
      j++; // e or E
      if (t[j] === "+" || t[j] === "-") j++;
      if (!isDecimal(t[j])) this.#fail("Invalid number: the exponent has no digits", start);
      digits();
      float = true;
    };
    const fraction = (): void => {
      j++; // .
      digits();
      float = true;
      if (t[j] === "e" || t[j] === "E") exponent();
    };
    if (t[j] === "0" && (t[j + 1] === "x" || t[j + 1] === "X")) {
      j += 2;
      const hexStart = j;
      while (isHex(t[j])) j++;
      if (j === hexStart) this.#fail("Invalid hexadecimal number", start);
      this.#i = j;
      const text = t.slice(start, j);
      const n = parseInt(t.slice(hexStart, j), 16);
      return { type: "number", text, value: negative ? -n : n, offset: start };
    }
    if (t[j] === ".") fraction();
    else {
      digits();
      if (t[j] === "e" || t[j] === "E") exponent();
      else if (t[j] === ".") fraction();
    }
    this.#i = j;
    const text = t.slice(start, j);
    if (float) {
      const n = Number(text);
      if (!Number.isFinite(n)) this.#fail(`Invalid number ${text}`, start);
      return { type: "number", text, value: n, offset: start };
    }
    const body = negative ? text.slice(1) : text;
    let n: number;
    if (body.length > 1 && body.startsWith("0")) {
      // Go's strconv.ParseInt(s, 0, 64): a leading 0 means octal.
      if (/[89]/.test(body)) this.#fail(`Invalid octal number ${text}: a leading 0 means octal`, start);
      n = parseInt(body, 8);
    } else n = Number(body);
    return { type: "number", text, value: negative ? -n : n, offset: start };
  }

  #string(start: number): Token {
    const t = this.#text;
    let j = start + 1;
    let braces = 0;
    for (;;) {
      const ch = t[j];
      if (ch === undefined || (ch === "\n" && braces === 0)) {
        this.#fail("String is not terminated: a quoted string must end on the line it starts", start);
      }
      if (ch === '"' && braces === 0) break;
      if (braces === 0 && ch === "$" && t[j + 1] === "{") {
        braces++;
        j += 2;
        continue;
      }
      if (braces > 0 && ch === "{") braces++;
      if (braces > 0 && ch === "}") braces--;
      j += ch === "\\" ? 2 : 1;
    }
    this.#i = j + 1;
    const value = this.#unquote(t.slice(start + 1, j), start + 1);
    return { type: "string", text: t.slice(start, j + 1), value, offset: start };
  }

  /** hcl/strconv.Unquote: Go escapes outside `${…}`, everything inside kept as written. */
  #unquote(body: string, base: number): string {
    let out = "";
    let k = 0;
    while (k < body.length) {
      const ch = body[k]!;
      if (ch === "$" && body[k + 1] === "{") {
        let depth = 0;
        let e = k + 1;
        for (; e < body.length; e++) {
          if (body[e] === "{") depth++;
          else if (body[e] === "}" && --depth === 0) break;
        }
        if (e >= body.length) this.#fail("Interpolation is not terminated: expected \"}\"", base + k);
        out += body.slice(k, e + 1);
        k = e + 1;
        continue;
      }
      if (ch !== "\\") {
        out += ch;
        k++;
        continue;
      }
      const esc = body[k + 1];
      const simple: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v", "\\": "\\", '"': '"' };
      if (esc !== undefined && Object.hasOwn(simple, esc)) {
        out += simple[esc];
        k += 2;
        continue;
      }
      const code = (digits: string, radix: number, skip: number): void => {
        const cp = parseInt(digits, radix);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) this.#fail(`Invalid escape "\\${esc}${digits}" in string`, base + k);
        out += String.fromCodePoint(cp);
        k += skip;
      };
      const octal = /^[0-7]{3}/.exec(body.slice(k + 1));
      const hex = (n: number) => new RegExp(`^[0-9a-fA-F]{${n}}`).exec(body.slice(k + 2))?.[0];
      if (esc !== undefined && esc >= "0" && esc <= "7") {
        if (!octal || parseInt(octal[0], 8) > 255) this.#fail(`Invalid escape "\\${body.slice(k + 1, k + 4)}" in string: octal escapes have three digits`, base + k);
        code(octal[0], 8, 4);
      } else if (esc === "x" && hex(2)) code(hex(2)!, 16, 4);
      else if (esc === "u" && hex(4)) code(hex(4)!, 16, 6);
      else if (esc === "U" && hex(8)) code(hex(8)!, 16, 10);
      else this.#fail(`Invalid escape "\\${esc ?? ""}" in string`, base + k);
    }
    return out;
  }

  #heredoc(start: number): Token {
    const t = this.#text;
    if (t[start + 1] !== "<") this.#fail('Unexpected "<": a heredoc starts with "<<"', start);
    let j = start + 2;
    const indented = t[j] === "-";
    if (indented) j++;
    const anchorStart = j;
    while (j < t.length && (isLetter(t[j]!) || isDigit(t[j]!))) j++;
    const anchor = t.slice(anchorStart, j);
    if (anchor === "") this.#fail("Heredoc has no anchor: write <<EOF (or <<-EOF) and end it with a line EOF", start);
    if (t[j] === "\r" && t[j + 1] === "\n") j++;
    if (t[j] !== "\n") this.#fail(`Invalid characters after the heredoc anchor "${anchor}": the text starts on the next line`, j);
    j++;
    const end = new RegExp(`^[ \\t\\n\\v\\f\\r]*${anchor}\\r*$`, "u");
    const lines: string[] = [];
    let prefix: string | undefined;
    while (j <= t.length) {
      const nl = t.indexOf("\n", j);
      const line = t.slice(j, nl === -1 ? t.length : nl);
      if (end.test(line)) {
        prefix = /^[ \t\v\f\r\n]*/.exec(line)![0];
        j = nl === -1 ? t.length : nl + 1;
        break;
      }
      if (nl === -1) break;
      lines.push(line);
      j = nl + 1;
    }
    if (prefix === undefined) this.#fail(`Heredoc is not terminated: expected a line "${anchor}"`, start);
    this.#i = j;
    let value: string;
    if (!indented) {
      // hcl/token: the text up to the anchor, so an indented anchor leaves its indentation behind.
      value = lines.map((l) => `${l}\n`).join("") + prefix;
    } else if (lines.every((l) => l.startsWith(prefix))) {
      value = lines.map((l) => `${l.slice(prefix.length)}\n`).join("");
    } else {
      value = lines.map((l) => `${l}\n`).join("");
    }
    return { type: "heredoc", text: t.slice(start, j), value, offset: start };
  }
}

class Parser {
  readonly #lex: Lexer;
  readonly #fail: (reason: string, offset: number) => never;
  #tok: Token;

  constructor(text: string, fail: (reason: string, offset: number) => never) {
    this.#fail = fail;
    this.#lex = new Lexer(text, fail);
    this.#tok = this.#lex.next();
  }

  file(): Item[] {
    const items = this.#items();
    if (this.#tok.type !== "eof") this.#fail(`Unexpected ${describe(this.#tok)}: no block is open here`, this.#tok.offset);
    return items;
  }

  #advance(): Token {
    const t = this.#tok;
    this.#tok = this.#lex.next();
    return t;
  }

  #items(): Item[] {
    const items: Item[] = [];
    while (this.#tok.type !== "eof" && this.#tok.type !== "}") {
      items.push(this.#item());
      if (this.#tok.type === ",") this.#advance();
    }
    return items;
  }

  #item(): Item {
    const keys: Key[] = [];
    while (this.#tok.type === "ident" || this.#tok.type === "string") {
      const t = this.#advance();
      keys.push({ text: String(t.value), offset: t.offset });
    }
    if (keys.length === 0) return this.#fail(`Expected a key but found ${describe(this.#tok)}`, this.#tok.offset);
    const last = keys[keys.length - 1]!;
    if (this.#tok.type === "=") {
      if (keys.length > 1) {
        this.#fail(`Expected "{" after the block labels of "${keys[0]!.text}" but found "="`, this.#tok.offset);
      }
      this.#advance();
      return { keys, value: this.#value(`"${last.text}"`) };
    }
    if (this.#tok.type === "{") return { keys, value: this.#object() };
    return this.#fail(`Expected "=" or "{" after "${last.text}" but found ${describe(this.#tok)}`, this.#tok.offset);
  }

  #value(what: string): Node {
    const t = this.#tok;
    switch (t.type) {
      case "{":
        return this.#object();
      case "[":
        return this.#list();
      case "string":
      case "heredoc":
      case "number":
      case "bool":
        this.#advance();
        return { kind: "literal", value: t.value, offset: t.offset };
      case "ident":
        return this.#fail(`Expected a value for ${what} but found ${describe(t)}: quote strings ("${t.text}")`, t.offset);
      default:
        return this.#fail(`Expected a value for ${what} but found ${describe(t)}`, t.offset);
    }
  }

  #object(): Node {
    const open = this.#advance();
    const items = this.#items();
    if (this.#tok.type !== "}") this.#fail(`Expected "}" to close the block opened here but found ${describe(this.#tok)}`, open.offset);
    this.#advance();
    return { kind: "object", items, offset: open.offset };
  }

  #list(): Node {
    const open = this.#advance();
    const items: Node[] = [];
    for (;;) {
      if (this.#tok.type === "]") break;
      if (this.#tok.type === "eof") this.#fail('Expected "]" to close the list opened here', open.offset);
      items.push(this.#value("a list element"));
      const after: Token = this.#tok;
      if (after.type === ",") {
        this.#advance();
        continue;
      }
      if (after.type !== "]") this.#fail(`Expected "," or "]" in a list but found ${describe(after)}`, after.offset);
    }
    this.#advance();
    return { kind: "list", items, offset: open.offset };
  }
}

function describe(t: Token): string {
  switch (t.type) {
    case "eof":
      return "end of input";
    case "string":
      return `the string ${t.text.length > 40 ? `${t.text.slice(0, 37)}..."` : t.text}`;
    case "heredoc":
      return "a heredoc";
    case "number":
      return `the number ${t.text}`;
    case "bool":
      return t.text;
    case "ident":
      return `"${t.text}"`;
    default:
      return `"${t.text}"`;
  }
}

/** Builds the plain value of a parsed file, recording positions. */
class Builder {
  readonly #table: PositionTable;
  readonly #lines: LineIndex;
  readonly #fail: (reason: string, offset: number) => never;

  constructor(table: PositionTable, lines: LineIndex, fail: (reason: string, offset: number) => never) {
    this.#table = table;
    this.#lines = lines;
    this.#fail = fail;
  }

  #pos(offset: number): SourcePosition {
    return this.#lines.at(offset);
  }

  value(node: Node): unknown {
    switch (node.kind) {
      case "literal":
        return node.value;
      case "list": {
        const list: unknown[] = [];
        for (const item of node.items) {
          this.#table.set(list, list.length, this.#pos(item.offset));
          list.push(this.value(item));
        }
        return list;
      }
      case "object":
        return this.object(node.items);
    }
  }

  object(items: readonly Item[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const groups = new Map<string, Item[]>();
    for (const item of items) {
      const key = item.keys[0]!.text;
      const group = groups.get(key);
      if (group) group.push(item);
      else groups.set(key, [item]);
    }
    for (const [key, group] of groups) {
      const labeled = group.filter((i) => i.keys.length > 1);
      if (labeled.length > 0 && labeled.length < group.length) {
        const odd = group.find((i) => i.keys.length === 1)!;
        this.#fail(`"${key}" is written both with and without block labels`, odd.keys[0]!.offset);
      }
      let value: unknown;
      let offset = group[0]!.keys[0]!.offset;
      if (labeled.length > 0) {
        value = this.object(group.map((i) => ({ keys: i.keys.slice(1), value: i.value })));
      } else if (group.length === 1) {
        value = this.value(group[0]!.value);
      } else if (group.every((i) => i.value.kind === "literal")) {
        // hcl.Decode: a plain value given again replaces the earlier one.
        const last = group[group.length - 1]!;
        offset = last.keys[0]!.offset;
        value = this.value(last.value);
      } else {
        const odd = group.find((i) => i.value.kind === "literal");
        if (odd) this.#fail(`"${key}" is given both a plain value and a block or list`, odd.keys[0]!.offset);
        const list: unknown[] = [];
        for (const item of group) {
          if (item.value.kind === "object") {
            this.#table.set(list, list.length, this.#pos(item.keys[0]!.offset));
            list.push(this.value(item.value));
          } else if (item.value.kind === "list") {
            for (const element of item.value.items) {
              this.#table.set(list, list.length, this.#pos(element.offset));
              list.push(this.value(element));
            }
          }
        }
        value = list;
      }
      setOwn(out, key, value);
      this.#table.set(out, key, this.#pos(offset));
    }
    return out;
  }
}

/**
 * Parse HCL 1 text (or JSON, when it starts with "{") into a plain object.
 * Throws HclSyntaxError naming the line and column of the first problem.
 */
export function parseHcl(text: string, options: { file?: string } = {}): ParsedDocument<Record<string, unknown>> {
  if (text.trimStart().startsWith("{")) {
    const doc = parseJsonDocument(text, options);
    if (typeof doc.value !== "object" || doc.value === null || Array.isArray(doc.value)) {
      throw new HclSyntaxError("Expected an object at the top level", { file: options.file, line: 1, column: 1, offset: 0 });
    }
    return doc as ParsedDocument<Record<string, unknown>>;
  }
  const lines = new LineIndex(text);
  const fail = (reason: string, offset: number): never => {
    const pos = lines.at(offset);
    throw new HclSyntaxError(reason, { file: options.file, line: pos.line, column: pos.column, offset });
  };
  const items = new Parser(text, fail).file();
  const table = new PositionTable();
  return table.document(new Builder(table, lines, fail).object(items));
}
