// Go's time.ParseDuration: "300ms", "1.5h", "2h45m", "-1m", "0". Result in ms.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  "µs": 1e-3,
  "μs": 1e-3,
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
};

/** Milliseconds, or undefined when `text` is not a Go duration. */
export function parseDuration(text: string): number | undefined {
  let s = text.trim();
  if (s === "") return undefined;
  let sign = 1;
  if (s[0] === "-" || s[0] === "+") {
    if (s[0] === "-") sign = -1;
    s = s.slice(1);
  }
  if (s === "0") return 0;
  if (s === "") return undefined;
  const part = /^(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/; // µs and μs, escaped: see scripts/build.ts
  let total = 0;
  while (s.length > 0) {
    const m = part.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    s = s.slice(m[0].length);
  }
  return sign * total;
}

/** Go-style text for a duration in ms: 90000 → "1m30s". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  const neg = ms < 0;
  let rest = Math.abs(ms);
  if (rest < 1) return `${neg ? "-" : ""}${rest * 1000}µs`;
  if (rest < 1000) return `${neg ? "-" : ""}${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = rest / 1000;
  let out = "";
  if (h) out += `${h}h`;
  if (h || m) out += `${m}m`;
  out += `${s}s`;
  return (neg ? "-" : "") + out;
}
