// Cron expressions as CTS's schedule condition reads them (hashicorp/cronexpr):
// 5 fields (minute hour day-of-month month day-of-week), 6 (… year) or 7
// (second first, … year); `*`, `a-b`, `a,b`, `*/n`, `a-b/n`, month and day
// names, `?` for a day field, and @yearly/@annually/@monthly/@weekly/
// @daily/@midnight/@hourly. Times are UTC. Pure.

export interface CronSchedule {
  readonly text: string;
  readonly seconds: ReadonlySet<number>;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  readonly years?: ReadonlySet<number>;
  /** Day-of-month or day-of-week was restricted (`*`/`?` leaves it open). */
  readonly daysRestricted: boolean;
  readonly weekdaysRestricted: boolean;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const MACROS: Record<string, string> = {
  "@yearly": "0 0 0 1 1 * *",
  "@annually": "0 0 0 1 1 * *",
  "@monthly": "0 0 0 1 * * *",
  "@weekly": "0 0 0 * * 0 *",
  "@daily": "0 0 0 * * * *",
  "@midnight": "0 0 0 * * * *",
  "@hourly": "0 0 * * * * *",
};

function field(text: string, lo: number, hi: number, names: string[] | undefined, nameBase: number): Set<number> | string {
  const out = new Set<number>();
  const value = (s: string): number | undefined => {
    const i = names?.indexOf(s.toLowerCase()) ?? -1;
    if (i >= 0) return i + nameBase;
    return /^\d+$/.test(s) ? Number(s) : undefined;
  };
  for (const part of text.split(",")) {
    const [range, stepText] = part.split("/");
    const step = stepText === undefined ? 1 : /^\d+$/.test(stepText) && Number(stepText) > 0 ? Number(stepText) : NaN;
    if (Number.isNaN(step)) return `bad step in "${part}"`;
    let a: number | undefined;
    let b: number | undefined;
    if (range === "*" || range === "?") {
      a = lo;
      b = hi;
    } else {
      const [x, y] = range!.split("-");
      a = value(x!);
      b = y === undefined ? (stepText === undefined ? a : hi) : value(y);
    }
    if (a === undefined || b === undefined || a < lo || b > hi || a > b) return `"${part}" is out of range ${lo}-${hi}`;
    for (let v = a; v <= b; v += step) out.add(v);
  }
  return out;
}

/** Parse a cron expression, or return why it is not one. */
export function parseCron(text: string): CronSchedule | string {
  const trimmed = text.trim();
  let parts = (MACROS[trimmed.toLowerCase()] ?? trimmed).split(/\s+/);
  if (parts.length === 5) parts = ["0", ...parts, "*"];
  else if (parts.length === 6) parts = ["0", ...parts];
  else if (parts.length !== 7) return `cron expression "${text}" must have 5, 6 or 7 fields`;
  const specs: [number, number, string[] | undefined, number][] = [
    [0, 59, undefined, 0],
    [0, 59, undefined, 0],
    [0, 23, undefined, 0],
    [1, 31, undefined, 0],
    [1, 12, MONTHS, 1],
    [0, 7, DAYS, 0],
    [1970, 2099, undefined, 0],
  ];
  const sets: Set<number>[] = [];
  for (let i = 0; i < 7; i++) {
    const [lo, hi, names, base] = specs[i]!;
    const s = field(parts[i]!, lo, hi, names, base);
    if (typeof s === "string") return `cron expression "${text}": ${s}`;
    sets.push(s);
  }
  if (sets[5]!.has(7)) sets[5]!.add(0);
  return {
    text,
    seconds: sets[0]!,
    minutes: sets[1]!,
    hours: sets[2]!,
    days: sets[3]!,
    months: sets[4]!,
    weekdays: sets[5]!,
    ...(parts[6] === "*" ? {} : { years: sets[6]! }),
    daysRestricted: parts[3] !== "*" && parts[3] !== "?",
    weekdaysRestricted: parts[5] !== "*" && parts[5] !== "?",
  };
}

function dayMatches(c: CronSchedule, d: Date): boolean {
  const dom = c.days.has(d.getUTCDate());
  const dow = c.weekdays.has(d.getUTCDay());
  // Vixie cron: when both are restricted, either matches.
  if (c.daysRestricted && c.weekdaysRestricted) return dom || dow;
  return dom && dow;
}

/** The first time strictly after `afterMs` (Unix ms, UTC) that matches, or undefined within the next 5 years. */
export function nextCronTime(c: CronSchedule, afterMs: number): number | undefined {
  let t = Math.floor(afterMs / 1000) * 1000 + 1000;
  const limit = afterMs + 5 * 366 * 86_400_000;
  while (t <= limit) {
    const d = new Date(t);
    if ((c.years && !c.years.has(d.getUTCFullYear())) || !c.months.has(d.getUTCMonth() + 1) || !dayMatches(c, d)) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
      continue;
    }
    if (!c.hours.has(d.getUTCHours())) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours() + 1);
      continue;
    }
    if (!c.minutes.has(d.getUTCMinutes())) {
      t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes() + 1);
      continue;
    }
    if (!c.seconds.has(d.getUTCSeconds())) {
      t += 1000;
      continue;
    }
    return t;
  }
  return undefined;
}
