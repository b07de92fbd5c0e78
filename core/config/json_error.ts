// Where is the first syntax error in a JSON text? JSON.parse does not always
// say (Node 20's V8 often gives no position), so a small grammar walk finds
// the offset and what was expected there.

export interface JsonSyntaxProblem {
  offset: number;
  reason: string;
}

/** The first syntax problem in `text`, or undefined if it is valid JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxProblem | undefined {
  let i = 0;
  const fail = (reason: string): never => {
    throw { offset: i, reason } satisfies JsonSyntaxProblem;
  };
  const ws = () => {
    while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  };
  const describe = () => (i >= text.length ? "end of input" : JSON.stringify(text[i]));
  const expect = (ch: string) => {
    if (text[i] !== ch) fail(`expected "${ch}" but found ${describe()}`);
    i++;
  };
  const string = () => {
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
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === "{") {
      i++;
      ws();
      if (text[i] === "}") { i++; return; }
      for (;;) {
        ws();
        if (text[i] !== '"') fail(`expected a quoted key but found ${describe()}`);
        string();
        ws();
        expect(":");
        value();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "}") { i++; return; }
        fail(`expected "," or "}" but found ${describe()}`);
      }
    }
    if (c === "[") {
      i++;
      ws();
      if (text[i] === "]") { i++; return; }
      for (;;) {
        value();
        ws();
        if (text[i] === ",") { i++; continue; }
        if (text[i] === "]") { i++; return; }
        fail(`expected "," or "]" but found ${describe()}`);
      }
    }
    if (c === '"') return string();
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (m && m[0] !== "" && m[0] !== "-") { i += m[0].length; return; }
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) { i += word.length; return; }
    }
    fail(`expected a value but found ${describe()}`);
  };
  try {
    value();
    ws();
    if (i < text.length) fail(`unexpected ${describe()} after the end of the value`);
    return undefined;
  } catch (problem) {
    return problem as JsonSyntaxProblem;
  }
}
