// Consul's filter expressions (hashicorp/go-bexpr, the `?filter=` parameter):
//
//   Expr      := Or
//   Or        := And ("or" And)*
//   And       := Not ("and" Not)*
//   Not       := "not" Not | "(" Or ")" | Match
//   Match     := Selector ("==" | "!=") Value
//              | Selector ["not"] ("contains" | "matches") Value
//              | Value ["not"] "in" Selector
//              | Selector "is" ["not"] "empty"
//   Selector  := Ident ("." Ident | "[" String "]")*
//   Value     := String ("..." or `...`) | bare word (number, true, identifier-like)
//
// Evaluation works on JSON-shaped objects (the HTTP field names, as Consul
// evaluates over its structs). A selector that walks through a list of
// objects (`Checks.Status`) yields every element's value, and a match is true
// if any element matches. Pure: no I/O, no time.

import { BadRequestError } from "../errors.ts";

export type FilterAst =
  | { kind: "or"; left: FilterAst; right: FilterAst }
  | { kind: "and"; left: FilterAst; right: FilterAst }
  | { kind: "not"; expr: FilterAst }
  | { kind: "match"; op: MatchOp; selector: string[]; value?: string };

export type MatchOp =
  | "==" | "!=" | "in" | "not in" | "contains" | "not contains" | "matches" | "not matches" | "is empty" | "is not empty";

/** A syntax error, with the 1-based line/column and 0-based offset of the fault. */
export class FilterSyntaxError extends BadRequestError {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
  constructor(message: string, where: { line: number; column: number; offset: number }) {
    super(`Failed to create boolean expression evaluator: ${where.line}:${where.column} (${where.offset}): ${message}`);
    this.line = where.line;
    this.column = where.column;
    this.offset = where.offset;
  }
}

type Tok =
  | { t: "ident"; v: string; at: number }
  | { t: "string"; v: string; at: number }
  | { t: "op"; v: "==" | "!="; at: number }
  | { t: "punct"; v: "(" | ")" | "." | "[" | "]"; at: number }
  | { t: "end"; at: number };

const wordChar = /[A-Za-z0-9_\-:/+@]/;

class Parser {
  readonly #src: string;
  #toks: Tok[] = [];
  #i = 0;

  constructor(src: string) {
    this.#src = src;
  }

  fail(msg: string, at: number): never {
    let line = 1;
    let col = 1;
    for (let i = 0; i < at && i < this.#src.length; i++) {
      if (this.#src[i] === "\n") {
        line++;
        col = 1;
      } else col++;
    }
    throw new FilterSyntaxError(msg, { line, column: col, offset: at });
  }

  tokenize(): void {
    const s = this.#src;
    let i = 0;
    while (i < s.length) {
      const c = s[i]!;
      if (c === " " || c === "\t" || c === "\r" || c === "\n") {
        i++;
        continue;
      }
      if (c === "=" || c === "!") {
        if (s[i + 1] !== "=") this.fail(`unexpected ${JSON.stringify(c)}, expected "==" or "!="`, i);
        this.#toks.push({ t: "op", v: c === "=" ? "==" : "!=", at: i });
        i += 2;
        continue;
      }
      if (c === "(" || c === ")" || c === "[" || c === "]") {
        this.#toks.push({ t: "punct", v: c, at: i });
        i++;
        continue;
      }
      if (c === '"' || c === "`") {
        const start = i;
        i++;
        let out = "";
        for (;;) {
          if (i >= s.length) this.fail("unterminated string", start);
          const d = s[i]!;
          if (d === c) {
            i++;
            break;
          }
          if (d === "\\" && c === '"') {
            const e = s[i + 1];
            const map: Record<string, string> = { n: "\n", t: "\t", r: "\r", '"': '"', "\\": "\\", "/": "/" };
            if (e === undefined || map[e] === undefined) this.fail(`invalid escape in string`, i);
            out += map[e];
            i += 2;
            continue;
          }
          out += d;
          i++;
        }
        this.#toks.push({ t: "string", v: out, at: start });
        continue;
      }
      if (c === ".") {
        // A dot inside a bare value (1.5, a.b) is part of it; between selector parts it is punctuation.
        this.#toks.push({ t: "punct", v: ".", at: i });
        i++;
        continue;
      }
      if (wordChar.test(c)) {
        const start = i;
        while (i < s.length && wordChar.test(s[i]!)) i++;
        this.#toks.push({ t: "ident", v: s.slice(start, i), at: start });
        continue;
      }
      this.fail(`unexpected character ${JSON.stringify(c)}`, i);
    }
    this.#toks.push({ t: "end", at: s.length });
  }

  peek(k = 0): Tok {
    return this.#toks[Math.min(this.#i + k, this.#toks.length - 1)]!;
  }

  next(): Tok {
    const t = this.peek();
    if (this.#i < this.#toks.length - 1) this.#i++;
    return t;
  }

  isWord(t: Tok, w: string): boolean {
    return t.t === "ident" && t.v === w;
  }

  parse(): FilterAst {
    this.tokenize();
    if (this.peek().t === "end") this.fail("empty expression", 0);
    const e = this.or();
    const t = this.peek();
    if (t.t !== "end") this.fail(`unexpected ${describe(t)}, expected "and", "or" or the end of the expression`, t.at);
    return e;
  }

  or(): FilterAst {
    let left = this.and();
    while (this.isWord(this.peek(), "or")) {
      this.next();
      left = { kind: "or", left, right: this.and() };
    }
    return left;
  }

  and(): FilterAst {
    let left = this.not();
    while (this.isWord(this.peek(), "and")) {
      this.next();
      left = { kind: "and", left, right: this.not() };
    }
    return left;
  }

  not(): FilterAst {
    const t = this.peek();
    if (this.isWord(t, "not")) {
      this.next();
      return { kind: "not", expr: this.not() };
    }
    if (t.t === "punct" && t.v === "(") {
      this.next();
      const e = this.or();
      const close = this.next();
      if (!(close.t === "punct" && close.v === ")")) this.fail(`unexpected ${describe(close)}, expected ")"`, close.at);
      return e;
    }
    return this.match();
  }

  /** A bare value may contain dots (1.5, v1.2.3): glue ident/dot runs with no spaces between. */
  bareValue(): string {
    const first = this.next();
    if (first.t !== "ident") this.fail(`unexpected ${describe(first)}, expected a value`, first.at);
    let v = first.v;
    let end = first.at + first.v.length;
    for (;;) {
      const t = this.peek();
      if ((t.t === "punct" && t.v === ".") && t.at === end) {
        this.next();
        v += ".";
        end += 1;
        continue;
      }
      if (t.t === "ident" && t.at === end) {
        this.next();
        v += t.v;
        end += t.v.length;
        continue;
      }
      return v;
    }
  }

  value(): string {
    const t = this.peek();
    if (t.t === "string") {
      this.next();
      return t.v;
    }
    if (t.t === "ident") return this.bareValue();
    this.fail(`unexpected ${describe(t)}, expected a value`, t.at);
  }

  selector(): string[] {
    const first = this.next();
    if (first.t !== "ident" || keywords.has(first.v)) this.fail(`unexpected ${describe(first)}, expected a selector`, first.at);
    const parts = [first.v];
    for (;;) {
      const t = this.peek();
      if (t.t === "punct" && t.v === ".") {
        this.next();
        const p = this.next();
        if (p.t !== "ident") this.fail(`unexpected ${describe(p)}, expected a selector field`, p.at);
        parts.push(p.v);
        continue;
      }
      if (t.t === "punct" && t.v === "[") {
        this.next();
        const k = this.next();
        if (k.t !== "string") this.fail(`unexpected ${describe(k)}, expected a quoted map key`, k.at);
        const close = this.next();
        if (!(close.t === "punct" && close.v === "]")) this.fail(`unexpected ${describe(close)}, expected "]"`, close.at);
        parts.push(k.v);
        continue;
      }
      return parts;
    }
  }

  match(): FilterAst {
    const t = this.peek();
    // `Value in Selector` / `Value not in Selector`: a string first, or a word followed by in / not in.
    const startsWithValue = t.t === "string" ||
      (t.t === "ident" && (this.isWord(this.peekAfterBare(), "in") ||
        (this.isWord(this.peekAfterBare(), "not") && this.isWord(this.peekAfterBare(1), "in"))));
    if (startsWithValue) {
      const value = this.value();
      let op: MatchOp = "in";
      if (this.isWord(this.peek(), "not")) {
        this.next();
        op = "not in";
      }
      const kw = this.next();
      if (!this.isWord(kw, "in")) this.fail(`unexpected ${describe(kw)}, expected "in" or "not in"`, kw.at);
      return { kind: "match", op, selector: this.selector(), value };
    }
    const selector = this.selector();
    const o = this.next();
    if (o.t === "op") return { kind: "match", op: o.v, selector, value: this.value() };
    if (this.isWord(o, "is")) {
      let op: MatchOp = "is empty";
      if (this.isWord(this.peek(), "not")) {
        this.next();
        op = "is not empty";
      }
      const e = this.next();
      if (!this.isWord(e, "empty")) this.fail(`unexpected ${describe(e)}, expected "empty"`, e.at);
      return { kind: "match", op, selector };
    }
    let negate = false;
    let w: Tok = o;
    if (this.isWord(o, "not")) {
      negate = true;
      w = this.next();
    }
    if (this.isWord(w, "contains")) return { kind: "match", op: negate ? "not contains" : "contains", selector, value: this.value() };
    if (this.isWord(w, "matches")) {
      const at = this.peek().at;
      const value = this.value();
      try {
        new RegExp(value);
      } catch {
        this.fail(`invalid regular expression ${JSON.stringify(value)}`, at);
      }
      return { kind: "match", op: negate ? "not matches" : "matches", selector, value };
    }
    this.fail(`unexpected ${describe(w)}, expected one of "==", "!=", "contains", "not contains", "matches", "not matches", "is empty", "is not empty"`, w.at);
  }

  /** The token after a bare value that starts here (skipping glued dots and words). */
  peekAfterBare(extra = 0): Tok {
    let k = 0;
    let end = -1;
    for (;;) {
      const t = this.peek(k);
      if (k === 0) {
        if (t.t !== "ident") return t;
        end = t.at + t.v.length;
        k++;
        continue;
      }
      if (t.at === end && (t.t === "ident" || (t.t === "punct" && t.v === "."))) {
        end += t.t === "ident" ? t.v.length : 1;
        k++;
        continue;
      }
      return this.peek(k + extra);
    }
  }
}

const keywords: ReadonlySet<string> = new Set(["and", "or", "not", "in", "is", "empty", "contains", "matches"]);

function describe(t: Tok): string {
  switch (t.t) {
    case "end":
      return "end of expression";
    case "string":
      return `string ${JSON.stringify(t.v)}`;
    default:
      return JSON.stringify(t.v);
  }
}

/** Parse an expression. Throws FilterSyntaxError (a BadRequestError: HTTP 400) naming the position. */
export function parseFilter(expression: string): FilterAst {
  return new Parser(expression).parse();
}

// ---- evaluation ----

interface Resolved {
  found: boolean;
  value: unknown;
  /** The selector fanned out over a list of objects: value is the list of results. */
  fanned: boolean;
}

function lookupField(obj: Record<string, unknown>, name: string): { found: boolean; value: unknown } {
  if (Object.hasOwn(obj, name)) return { found: true, value: obj[name] };
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return { found: true, value: obj[k] };
  return { found: false, value: undefined };
}

function resolve(value: unknown, path: readonly string[]): Resolved {
  let cur: unknown = value;
  for (let i = 0; i < path.length; i++) {
    if (Array.isArray(cur)) {
      const rest = path.slice(i);
      const vals: unknown[] = [];
      for (const el of cur) {
        const r = resolve(el, rest);
        if (!r.found) continue;
        if (r.fanned) vals.push(...(r.value as unknown[]));
        else vals.push(r.value);
      }
      return { found: true, value: vals, fanned: true };
    }
    if (typeof cur !== "object" || cur === null) return { found: false, value: undefined, fanned: false };
    const f = lookupField(cur as Record<string, unknown>, path[i]!);
    if (!f.found) return { found: false, value: undefined, fanned: false };
    cur = f.value;
  }
  return { found: true, value: cur, fanned: false };
}

function equalsValue(field: unknown, value: string): boolean {
  if (typeof field === "string") return field === value;
  if (typeof field === "number") return value.trim() !== "" && Number(value) === field;
  if (typeof field === "boolean") return (value === "true" && field) || (value === "false" && !field);
  if (field === null || field === undefined) return value === "";
  return false;
}

function isEmpty(field: unknown): boolean {
  if (field === null || field === undefined) return true;
  if (Array.isArray(field)) return field.length === 0;
  if (typeof field === "string") return field === "";
  if (typeof field === "object") return Object.keys(field as object).length === 0;
  return false;
}

function containsValue(field: unknown, value: string): boolean {
  if (Array.isArray(field)) return field.some((x) => equalsValue(x, value));
  if (typeof field === "string") return field.includes(value);
  if (typeof field === "object" && field !== null) return Object.hasOwn(field, value);
  return false;
}

/** A string matches the regex; a list of strings matches when any element does. */
function matchesValue(x: unknown, src: string): boolean {
  if (typeof x === "string") return regex(src).test(x);
  if (Array.isArray(x)) return x.some((e) => typeof e === "string" && regex(src).test(e));
  return false;
}

const regexCache = new Map<string, RegExp>();

function regex(src: string): RegExp {
  let r = regexCache.get(src);
  if (!r) {
    r = new RegExp(src);
    if (regexCache.size > 256) regexCache.clear();
    regexCache.set(src, r);
  }
  return r;
}

function evalMatch(m: Extract<FilterAst, { kind: "match" }>, obj: unknown): boolean {
  const r = resolve(obj, m.selector);
  const v = m.value ?? "";
  const each = (pred: (x: unknown) => boolean): boolean => (r.fanned ? (r.value as unknown[]).some(pred) : pred(r.value));
  switch (m.op) {
    case "==":
      return r.found && each((x) => equalsValue(x, v));
    case "!=":
      return !(r.found && each((x) => equalsValue(x, v)));
    case "is empty":
      return isEmpty(r.value);
    case "is not empty":
      return !isEmpty(r.value);
    case "in":
    case "contains":
      return r.found && (r.fanned ? containsValue(r.value, v) || each((x) => containsValue(x, v)) : containsValue(r.value, v));
    case "not in":
    case "not contains":
      return !(r.found && (r.fanned ? containsValue(r.value, v) || each((x) => containsValue(x, v)) : containsValue(r.value, v)));
    case "matches":
      return r.found && each((x) => matchesValue(x, v));
    case "not matches":
      return !(r.found && each((x) => matchesValue(x, v)));
  }
}

export function evaluateFilter(ast: FilterAst, obj: unknown): boolean {
  switch (ast.kind) {
    case "or":
      return evaluateFilter(ast.left, obj) || evaluateFilter(ast.right, obj);
    case "and":
      return evaluateFilter(ast.left, obj) && evaluateFilter(ast.right, obj);
    case "not":
      return !evaluateFilter(ast.expr, obj);
    case "match":
      return evalMatch(ast, obj);
  }
}

/** A compiled filter: `match(json)` says whether an item stays. */
export interface Filter {
  readonly expression: string;
  match(obj: unknown): boolean;
}

/** Compile `?filter=`; throws FilterSyntaxError for a bad expression. */
export function compileFilter(expression: string): Filter {
  const ast = parseFilter(expression);
  return { expression, match: (obj) => evaluateFilter(ast, obj) };
}

/** Keep the items whose JSON form matches; no filter (undefined or blank) keeps all. */
export function applyFilter<T>(items: readonly T[], filter: Filter | undefined, toJson: (item: T) => unknown): T[] {
  if (!filter) return [...items];
  return items.filter((x) => filter.match(toJson(x)));
}
