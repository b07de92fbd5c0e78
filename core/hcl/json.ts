// JSON with positions: the same values JSON.parse gives (duplicate keys: the
// last wins), plus where every key and list element was written, and for
// invalid text the offset of the first problem and what was expected there
// (Node 20's JSON.parse often does not say where). HCL 1 reads a file that
// starts with "{" as JSON, so parseHcl hands such text here.
import { HclSyntaxError, LineIndex, PositionTable, setOwn, type ParsedDocument } from "./document.ts";

/** Parse JSON text; throws HclSyntaxError at the first problem. */
export function parseJsonDocument(text: string, options: { file?: string } = {}): ParsedDocument {
  const lines = new LineIndex(text);
  const table = new PositionTable();
  let i = 0;
  const fail = (reason: string, at = i): never => {
    const pos = lines.at(at);
    throw new HclSyntaxError(reason, { file: options.file, line: pos.line, column: pos.column, offset: at });
  };
  const ws = (): void => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const describe = (): string => (i >= text.length ? "end of input" : JSON.stringify(text[i]));
  const expect = (ch: string): void => {
    if (text[i] !== ch) fail(`expected "${ch}" but found ${describe()}`);
    i++;
  };
  const string = (): string => {
    const start = i;
    expect('"');
    while (i < text.length && text[i] !== '"') {
      const c = text.charCodeAt(i);
      if (c < 0x20) fail("control character in string");
      if (text[i] === "\\") {
        i++;
        if (text[i] === "u") {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) fail("bad \\u escape");
          i += 5;
          continue;
        }
        if (!`"\\/bfnrt`.includes(text[i] ?? "x")) fail("bad escape in string");
      }
      i++;
    }
    if (i >= text.length) fail("unterminated string");
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  const value = (depth: number): unknown => {
    if (depth > 512) fail("nesting is too deep");
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      const obj: Record<string, unknown> = {};
      ws();
      if (text[i] === "}") {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a quoted key but found ${describe()}`);
        const at = lines.at(i);
        const key = string();
        ws();
        expect(":");
        setOwn(obj, key, value(depth + 1));
        table.set(obj, key, at);
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "}") {
          i++;
          return obj;
        }
        fail(`expected "," or "}" but found ${describe()}`);
      }
    }
    if (c === "[") {
      i++;
      const list: unknown[] = [];
      ws();
      if (text[i] === "]") {
        i++;
        return list;
      }
      for (;;) {
        ws();
        table.set(list, list.length, lines.at(i));
        list.push(value(depth + 1));
        ws();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === "]") {
          i++;
          return list;
        }
        fail(`expected "," or "]" but found ${describe()}`);
      }
    }
    if (c === '"') return string();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0] !== "" && m[0] !== "-") {
      i += m[0].length;
      return Number(m[0]);
    }
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return v;
      }
    }
    return fail(`expected a value but found ${describe()}`);
  };
  const result = value(0);
  ws();
  if (i < text.length) fail(`unexpected ${describe()} after the end of the value`);
  return table.document(result);
}
