// Wall-clock timestamps as text, from UTC fields only. Date.prototype's
// toISOString and toUTCString look up the host time zone and its display
// names first (V8 11 formats through its local-time path even for UTC), which
// pages ICU time-zone data (docs/performance.md) into every agent that logs a line
// or answers an HTTP request. getUTC* never touches the time zone.

const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

/** Same text as `new Date(ms).toISOString()`: `2026-11-20T23:31:04.123Z`. */
export function isoTimestamp(ms: number): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  // Outside 0..9999 ISO needs the expanded ±YYYYYY form, and an invalid time throws: leave both to Date.
  if (!(year >= 0 && year <= 9999)) return d.toISOString();
  return `${pad(year, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}T${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}

/** Same text as `new Date(ms).toUTCString()`, the HTTP Date header (RFC 9110 IMF-fixdate): `Fri, 20 Nov 2026 23:31:04 GMT`. */
export function httpDate(ms: number): string {
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  if (!(year >= 0 && year <= 9999)) return d.toUTCString();
  return `${DAYS[d.getUTCDay()]}, ${pad(d.getUTCDate(), 2)} ${MONTHS[d.getUTCMonth()]} ${pad(year, 4)} ${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)} GMT`;
}
