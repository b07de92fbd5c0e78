// Agent telemetry, shaped like go-metrics' in-memory sink as Consul serves
// it at /v1/agent/metrics: counters and samples aggregate per 10 s interval
// (the JSON shows the last finished one), gauges are read when asked.
// Prometheus text keeps running totals: counters, and a summary (sum and
// count) per timer. Pure: the
// clock comes in from outside.

import { isoTimestamp } from "../clock/utc_text.ts";

export type Labels = Record<string, string>;

export interface Aggregate {
  count: number;
  sum: number;
  min: number;
  max: number;
  /** Sum of squares, for the standard deviation. */
  sumSq: number;
}

interface Series {
  name: string;
  labels: Labels;
  agg: Aggregate;
}

interface Interval {
  startMs: number;
  counters: Map<string, Series>;
  samples: Map<string, Series>;
}

/** A gauge reading: name (without the "consul." prefix), value, labels. */
export type GaugeReading = [name: string, value: number, labels?: Labels];

export interface MetricsOptions {
  now: () => number;
  /** Wall clock for the JSON timestamp. */
  wallNow?: () => number;
  intervalMs?: number;
  /** How many finished intervals to keep. */
  keep?: number;
  /** Put into gauge names after the prefix (go-metrics EnableHostname); "" = none (`telemetry.disable_hostname`). */
  hostname?: string;
}

/** Consul's "consul." prefix. */
const prefix = "consul.";

/** `name;k1=v1;k2=v2` with keys sorted. Runs for every HTTP request: no sort() copy, no map/join arrays. */
function seriesKey(name: string, labels: Labels | undefined): string {
  if (!labels) return name;
  const keys = Object.keys(labels);
  // Insertion sort: label sets are a handful of keys.
  for (let i = 1; i < keys.length; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
  let out = name;
  for (const k of keys) out += `;${k}=${labels[k]}`;
  return out;
}

function add(agg: Aggregate, v: number): void {
  agg.count++;
  agg.sum += v;
  agg.sumSq += v * v;
  if (agg.count === 1 || v < agg.min) agg.min = v;
  if (agg.count === 1 || v > agg.max) agg.max = v;
}

function emptyAggregate(): Aggregate {
  return { count: 0, sum: 0, min: 0, max: 0, sumSq: 0 };
}

export class Metrics {
  readonly #o: Required<MetricsOptions>;
  #intervals: Interval[] = [];
  /** Running totals since start (Prometheus). */
  readonly #totals = new Map<string, Series>();
  readonly #timerTotals = new Map<string, Series>();
  readonly #gaugeSources: Array<() => GaugeReading[]> = [];

  constructor(options: MetricsOptions) {
    this.#o = { wallNow: () => Date.now(), intervalMs: 10_000, keep: 6, hostname: "", ...options };
  }

  /** The metrics clock (monotonic ms), for timings: `sample(name, m.now() - start)`. */
  now(): number {
    return this.#o.now();
  }

  /** Add to a counter (`consul.<name>`). */
  incr(name: string, by = 1, labels?: Labels): void {
    const key = seriesKey(name, labels);
    this.#addTo(this.#current().counters, key, name, labels, by);
    this.#addTo(this.#totals, key, name, labels, by);
  }

  /** Record one timing in milliseconds (or any sampled value). */
  sample(name: string, value: number, labels?: Labels): void {
    const key = seriesKey(name, labels);
    this.#addTo(this.#current().samples, key, name, labels, value);
    this.#addTo(this.#timerTotals, key, name, labels, value);
  }

  /** Gauges are read from these when metrics are displayed. */
  addGauges(source: () => GaugeReading[]): void {
    this.#gaugeSources.push(source);
  }

  /** go-metrics DisplayMetrics: the last finished interval (the current one until there is none). */
  json(): Record<string, unknown> {
    const current = this.#current();
    // The interval just finished; if nothing was recorded in it, an empty one (not an older one).
    const previous = this.#intervals[this.#intervals.length - 2];
    const interval = this.#intervals.length === 1
      ? current
      : previous && previous.startMs === current.startMs - this.#o.intervalMs
        ? previous
        : { startMs: current.startMs - this.#o.intervalMs, counters: new Map<string, Series>(), samples: new Map<string, Series>() };
    const stat = (s: Series) => {
      const mean = s.agg.count > 0 ? s.agg.sum / s.agg.count : 0;
      const variance = s.agg.count > 1 ? Math.max(0, (s.agg.sumSq - s.agg.count * mean * mean) / (s.agg.count - 1)) : 0;
      return {
        Name: prefix + s.name,
        Count: s.agg.count,
        Rate: s.agg.sum / (this.#o.intervalMs / 1000),
        Sum: s.agg.sum,
        Min: s.agg.min,
        Max: s.agg.max,
        Mean: mean,
        Stddev: Math.sqrt(variance),
        Labels: s.labels,
      };
    };
    const byName = (a: { Name: string }, b: { Name: string }) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0);
    return {
      Timestamp: isoTimestamp(interval.startMs - this.#o.now() + this.#o.wallNow()).replace("T", " ").replace(/\.\d+Z$/, " +0000 UTC"),
      Gauges: this.#gauges().map(([name, value, labels]) => ({ Name: this.#gaugeName(name), Value: value, Labels: labels ?? {} })).sort(byName),
      Points: [],
      Counters: [...interval.counters.values()].map(stat).sort(byName),
      Samples: [...interval.samples.values()].map(stat).sort(byName),
    };
  }

  /** Prometheus text exposition (version 0.0.4): gauges, counters as totals, timers as summaries. */
  prometheus(): string {
    const lines: string[] = [];
    const metricName = (name: string) => (prefix + name).replace(/[^a-zA-Z0-9_:]/g, "_");
    const labelText = (labels: Labels | undefined) => {
      const all = labels ?? {};
      const keys = Object.keys(all).sort();
      if (keys.length === 0) return "";
      const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
      const pairs = keys.map((k) => `${k.replace(/[^a-zA-Z0-9_]/g, "_")}="${escape(all[k]!)}"`);
      return `{${pairs.join(",")}}`;
    };
    const grouped = <T>(items: T[], nameOf: (x: T) => string) => {
      const m = new Map<string, T[]>();
      for (const x of items) {
        const n = nameOf(x);
        let list = m.get(n);
        if (!list) m.set(n, (list = []));
        list.push(x);
      }
      return [...m].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    };
    for (const [name, readings] of grouped(this.#gauges(), (g) => metricName(this.#gaugeName(g[0]).slice(prefix.length)))) {
      lines.push(`# TYPE ${name} gauge`);
      for (const [, value, labels] of readings) lines.push(`${name}${labelText(labels)} ${value}`);
    }
    for (const [name, series] of grouped([...this.#totals.values()], (s) => metricName(s.name))) {
      lines.push(`# TYPE ${name} counter`);
      for (const s of series) lines.push(`${name}${labelText(s.labels)} ${s.agg.sum}`);
    }
    // Summaries without quantiles (samples are aggregated, not kept one by one).
    for (const [name, series] of grouped([...this.#timerTotals.values()], (s) => metricName(s.name))) {
      lines.push(`# TYPE ${name} summary`);
      for (const s of series) {
        lines.push(`${name}_sum${labelText(s.labels)} ${s.agg.sum}`);
        lines.push(`${name}_count${labelText(s.labels)} ${s.agg.count}`);
      }
    }
    return `${lines.join("\n")}\n`;
  }

  #gaugeName(name: string): string {
    return this.#o.hostname ? `${prefix}${this.#o.hostname}.${name}` : prefix + name;
  }

  #gauges(): GaugeReading[] {
    return this.#gaugeSources.flatMap((f) => f());
  }

  #addTo(map: Map<string, Series>, key: string, name: string, labels: Labels | undefined, v: number): void {
    let s = map.get(key);
    if (!s) map.set(key, (s = { name, labels: { ...labels }, agg: emptyAggregate() }));
    add(s.agg, v);
  }

  /** The interval that now falls in, started (and old ones dropped) as time passes. */
  #current(): Interval {
    const now = this.#o.now();
    const start = now - (now % this.#o.intervalMs);
    const last = this.#intervals[this.#intervals.length - 1];
    if (last && last.startMs === start) return last;
    const fresh: Interval = { startMs: start, counters: new Map(), samples: new Map() };
    this.#intervals.push(fresh);
    if (this.#intervals.length > this.#o.keep) this.#intervals.shift();
    return fresh;
  }
}
