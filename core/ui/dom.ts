// A small DOM helper for the web UI: h("a", { href }, "text", child).
// Attributes starting with "on" are event listeners; `false`, null and
// undefined attributes and children are skipped.

export type Child = Node | string | number | null | undefined | false | readonly Child[];
export type Attrs = Record<string, unknown>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2).toLowerCase(), v as EventListener);
    else if (k === "value" && (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement)) el.value = String(v);
    else if (k === "checked" && el instanceof HTMLInputElement) el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "object" ? (c as Node) : document.createTextNode(String(c)));
  }
}

/** Replace everything inside `el`. */
export function replace(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/**
 * A list that only puts the rows in view into the DOM (fixed row height):
 * 10,000 services or 100,000 keys stay one scrollable element with a few
 * dozen rows in it.
 */
export class VirtualList<T> {
  readonly element: HTMLDivElement;
  readonly #inner: HTMLDivElement;
  readonly #rowHeight: number;
  readonly #render: (item: T, index: number) => HTMLElement;
  #items: readonly T[] = [];
  #drawn = new Map<number, HTMLElement>();
  #frame = 0;

  constructor(options: { rowHeight: number; render: (item: T, index: number) => HTMLElement; label: string }) {
    this.#rowHeight = options.rowHeight;
    this.#render = options.render;
    this.#inner = h("div", { class: "vlist-inner", role: "list" });
    this.element = h("div", { class: "vlist", "aria-label": options.label }, this.#inner);
    this.element.addEventListener("scroll", () => this.#schedule());
    new ResizeObserver(() => this.#schedule()).observe(this.element);
  }

  get items(): readonly T[] {
    return this.#items;
  }

  set items(items: readonly T[]) {
    this.#items = items;
    this.#inner.style.height = `${items.length * this.#rowHeight}px`;
    for (const row of this.#drawn.values()) row.remove();
    this.#drawn = new Map();
    this.#draw();
  }

  #schedule(): void {
    if (this.#frame) return;
    this.#frame = requestAnimationFrame(() => {
      this.#frame = 0;
      this.#draw();
    });
  }

  #draw(): void {
    const view = this.element.clientHeight || 600;
    const first = Math.max(0, Math.floor(this.element.scrollTop / this.#rowHeight) - 5);
    const last = Math.min(this.#items.length, Math.ceil((this.element.scrollTop + view) / this.#rowHeight) + 5);
    // Rows already drawn for these items are kept (not redrawn) while they stay in view,
    // so the row holding the keyboard focus keeps it while the list scrolls.
    const kept = new Map<number, HTMLElement>();
    for (let i = first; i < last; i++) {
      let row = this.#drawn.get(i);
      if (!row) {
        row = this.#render(this.#items[i]!, i);
        row.classList.add("vrow");
        row.setAttribute("role", "listitem");
        row.style.top = `${i * this.#rowHeight}px`;
        row.style.height = `${this.#rowHeight}px`;
      }
      kept.set(i, row);
    }
    for (const [i, row] of this.#drawn) if (!kept.has(i)) row.remove();
    for (const row of kept.values()) if (row.parentNode !== this.#inner) this.#inner.appendChild(row);
    this.#drawn = kept;
  }
}
