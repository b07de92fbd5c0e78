// What the parsers return: the value, and where each key and list element
// was written, so a caller that rejects a key can name its file and line.

export interface SourcePosition {
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  column: number;
}

export interface ParsedDocument<T = unknown> {
  readonly value: T;
  /**
   * Where `key` of `container` was written: `container` is an object or a
   * list found inside `value`, `key` one of its keys or indexes. Undefined
   * for containers that did not come from this document.
   */
  position(container: object, key: string | number): SourcePosition | undefined;
}

/** A syntax error (or an HCL structure that cannot be decoded), with where it is. */
export class HclSyntaxError extends SyntaxError {
  readonly code = "hcl_syntax";
  readonly file: string | undefined;
  readonly line: number;
  readonly column: number;
  /** Offset into the text, in UTF-16 code units. */
  readonly offset: number;
  /** The message without the position. */
  readonly reason: string;
  constructor(reason: string, where: { file?: string; line: number; column: number; offset: number }) {
    super(`${where.file ? `"${where.file}" ` : ""}line ${where.line}, column ${where.column}: ${reason}`);
    this.name = "HclSyntaxError";
    this.file = where.file;
    this.line = where.line;
    this.column = where.column;
    this.offset = where.offset;
    this.reason = reason;
  }
}

/** Positions of keys and list elements, keyed by the container object. */
export class PositionTable {
  readonly #byContainer = new WeakMap<object, Map<string | number, SourcePosition>>();

  set(container: object, key: string | number, pos: SourcePosition): void {
    let m = this.#byContainer.get(container);
    if (!m) {
      m = new Map();
      this.#byContainer.set(container, m);
    }
    m.set(key, pos);
  }

  get(container: object, key: string | number): SourcePosition | undefined {
    return this.#byContainer.get(container)?.get(key);
  }

  document<T>(value: T): ParsedDocument<T> {
    return { value, position: (container, key) => this.get(container, key) };
  }
}

/** `obj[key] = value` that also works for the key `__proto__` (as JSON.parse does). */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** Line and column of any offset into one text (line starts found once, then binary search). */
export class LineIndex {
  readonly #starts: number[] = [0];
  constructor(text: string) {
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) this.#starts.push(i + 1);
  }

  at(offset: number): SourcePosition {
    let lo = 0;
    let hi = this.#starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.#starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - this.#starts[lo]! + 1 };
  }
}
