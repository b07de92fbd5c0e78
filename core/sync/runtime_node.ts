// The `cairn sync` daemon: blocking-query watchers (one per dependency,
// shared), the pure SyncScheduler fed with their data and with timer ticks,
// runs handed to the driver, and every run's record kept in cairn's KV:
//
//   <kv_path>task-state/<task>   { enabled, appliedHash } — what the last
//                                successful run applied; a restart compares
//                                against it, so a queued run's intent
//                                survives (its change is not applied yet)
//   <kv_path>runs/<task>/<id>    one run record each, the newest run_history kept
//
// Real time comes from the injected Clock; the only other I/O is the API
// client and the driver.
import { ApiError } from "../api/client.ts";
import type { ApiClient } from "../api/client.ts";
import { decodeBase64 } from "../api/base64.ts";
import type { Clock, Timer } from "../clock/clock.ts";
import { isoTimestamp } from "../clock/utc_text.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { parseTaskDocument } from "./config.ts";
import type { SyncConfig, TaskConfig } from "./config.ts";
import type { DriverResult, SyncDriver } from "./driver.ts";
import { renderHealthEntries, renderKvEntries } from "./render.ts";
import type { RenderedInputs, RenderedService } from "./render.ts";
import { SyncScheduler } from "./scheduler.ts";
import { sleep } from "../clock/sleep.ts";
import type { RunOrder, Trigger } from "./scheduler.ts";
import { moduleVariables, taskDependencies, taskSpec } from "./task.ts";
import type { Dependency } from "./task.ts";

export type RunStatus = "running" | "successful" | "errored";

/** One run, as kept in KV and shown by the API. */
export interface RunRecord {
  id: string;
  task: string;
  trigger: Trigger | "once";
  status: RunStatus;
  startTime: string;
  endTime?: string;
  exitCode?: number;
  outputTail?: string;
  error?: string;
  /** The dependencies whose data changed since the previous run. */
  changedInputs: string[];
  inputsHash: string;
}

interface TaskEntry {
  config: TaskConfig;
  runs: RunRecord[];
}

export interface SyncRuntimeOptions {
  config: SyncConfig;
  client: ApiClient;
  driver: SyncDriver;
  clock: Clock;
  logger: Logger;
  /** Ignore applied state in KV: every task runs once (`-once`). */
  runAll?: boolean;
  /** Start without starting runs (HA: until elected). */
  inactive?: boolean;
  /** Called with every finished run (the webhook, tests). */
  onRunEnd?: (r: RunRecord) => void;
  fetch?: typeof fetch;
}

const textDecoder = new TextDecoder();
const INTERRUPTED = "the sync instance stopped during the run";

function decodeB64(s: string): string {
  return textDecoder.decode(decodeBase64(s) ?? new Uint8Array());
}

export class SyncRuntime {
  readonly #o: SyncRuntimeOptions;
  readonly #log: Logger;
  readonly #sched: SyncScheduler<RenderedInputs>;
  readonly #tasks = new Map<string, TaskEntry>();
  readonly #watchers = new Map<string, AbortController>();
  readonly #deps = new Map<string, Dependency>();
  readonly #running = new Map<string, { order: RunOrder<RenderedInputs>; ctl: AbortController; done: Promise<void> }>();
  readonly #stop = new AbortController();
  readonly #kvPath: string;
  #timer?: Timer;
  #runSeq = 0;
  /** Tasks with a run finished by this process. */
  readonly #finished = new Set<string>();
  #stopped = false;
  /** Starting runs is allowed (HA: only the leader). */
  #active = true;

  constructor(options: SyncRuntimeOptions) {
    this.#o = options;
    this.#log = options.logger;
    this.#sched = new SyncScheduler({ maxConcurrentRuns: options.config.maxConcurrentRuns });
    this.#kvPath = options.config.consul.kvPath.replace(/^\/+/, "").replace(/\/*$/, "/");
    this.#active = options.inactive !== true;
    this.#sched.setPaused(!this.#active, options.clock.now());
  }

  get config(): SyncConfig {
    return this.#o.config;
  }

  /** consul.kv_path as a key prefix: no leading slash, one trailing slash. */
  get kvPath(): string {
    return this.#kvPath;
  }

  async start(): Promise<void> {
    for (const t of this.#o.config.tasks) await this.addTask(t, { persist: false });
    for (const t of await this.#readTaskDefs()) if (!this.#tasks.has(t.name)) await this.addTask(t, { persist: false });
    this.#tick();
  }

  /** Stop watchers and timers; running runs are told to stop and awaited. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stop.abort();
    this.#timer?.cancel();
    for (const w of this.#watchers.values()) w.abort();
    for (const r of this.#running.values()) r.ctl.abort();
    await Promise.allSettled([...this.#running.values()].map((r) => r.done));
  }

  taskNames(): string[] {
    return [...this.#tasks.keys()].sort();
  }

  taskConfig(name: string): TaskConfig | undefined {
    return this.#tasks.get(name)?.config;
  }

  taskView(name: string) {
    return this.#sched.task(name);
  }

  runs(name: string): RunRecord[] {
    return [...(this.#tasks.get(name)?.runs ?? [])];
  }

  /** Every run has finished at least once since start (`-once`). */
  allTasksRanOnce(): boolean {
    for (const [name, t] of this.#tasks) {
      if (!t.config.enabled) continue;
      const v = this.#sched.task(name);
      if (!v || v.running || v.pending || !this.#finished.has(name)) return false;
    }
    return true;
  }

  async addTask(config: TaskConfig, options: { persist?: boolean } = {}): Promise<void> {
    if (this.#tasks.has(config.name)) throw new RangeError(`Task "${config.name}" already exists`);
    const state = this.#o.runAll ? undefined : await this.#readState(config.name);
    const enabled = state?.enabled ?? config.enabled;
    const tc = { ...config, enabled };
    const runs = await this.#readRuns(config.name);
    this.#tasks.set(config.name, { config: tc, runs });
    for (const d of taskDependencies(tc)) this.#deps.set(d.key, d);
    this.#sched.addTask(taskSpec(tc, state?.appliedHash), this.#o.clock.now());
    if (options.persist) await this.#writeState(config.name);
    this.#syncWatchers();
    this.#pump();
  }

  async removeTask(name: string): Promise<boolean> {
    if (!this.#sched.removeTask(name)) return false;
    this.#tasks.delete(name);
    this.#running.get(name)?.ctl.abort();
    this.#syncWatchers();
    await this.#kvDelete(`${this.#kvPath}task-state/${name}`);
    return true;
  }

  async setEnabled(name: string, enabled: boolean): Promise<boolean> {
    const t = this.#tasks.get(name);
    if (!t) return false;
    t.config = { ...t.config, enabled };
    this.#sched.setEnabled(name, enabled, this.#o.clock.now());
    await this.#writeState(name);
    this.#pump();
    return true;
  }

  runNow(name: string, trigger: "manual" | "failover" = "manual"): boolean {
    if (!this.#tasks.has(name)) return false;
    this.#sched.step({ kind: "runNow", task: name, now: this.#o.clock.now(), trigger });
    this.#pump();
    return true;
  }

  /** Stop or resume starting runs (HA: a follower, or a leader losing its lock). */
  setActive(active: boolean): void {
    this.#active = active;
    this.#sched.setPaused(!active, this.#o.clock.now());
    if (active) this.#pump();
    else this.#timer?.cancel();
  }

  get isActive(): boolean {
    return this.#active;
  }

  /**
   * HA: this instance just became the leader. Read what the previous leader
   * left in KV (tasks created through its API, run history; a run it never
   * finished is marked errored), then run every task once and resume.
   */
  async takeOver(): Promise<void> {
    for (const t of await this.#readTaskDefs()) if (!this.#tasks.has(t.name)) await this.addTask(t, { persist: false });
    for (const [name, entry] of this.#tasks) {
      const runs = await this.#readRuns(name);
      for (const r of runs) if (r.error === INTERRUPTED) await this.#writeRun(r);
      const mine = entry.runs.filter((r) => !runs.some((x) => x.id === r.id));
      entry.runs = [...runs, ...mine].sort((a, b) => (a.id < b.id ? -1 : 1));
      const state = await this.#readState(name);
      if (state && state.enabled !== entry.config.enabled) {
        entry.config = { ...entry.config, enabled: state.enabled };
        this.#sched.setEnabled(name, state.enabled, this.#o.clock.now());
      }
    }
    for (const name of this.#tasks.keys()) this.runNow(name, "failover");
    this.setActive(true);
  }

  /** Inputs a task would get now (undefined until its dependencies all answered). */
  currentInputs(name: string): RenderedInputs | undefined {
    const r = this.#sched.inputs(name);
    return r === undefined ? undefined : moduleVariables(r);
  }

  /** What an apply would do now (driver inspect), once the task's data is in. */
  async inspect(name: string, options: { timeoutMs?: number } = {}): Promise<DriverResult> {
    const t = this.#tasks.get(name);
    if (!t) throw new RangeError(`Task "${name}" does not exist`);
    const inputs = await this.#waitInputs(name, options.timeoutMs ?? 15_000);
    return this.#o.driver.inspect({ runId: `inspect-${++this.#runSeq}`, task: t.config, trigger: "inspect", inputs }, this.#stop.signal);
  }

  async #waitInputs(name: string, timeoutMs: number): Promise<RenderedInputs> {
    const start = this.#o.clock.now();
    for (;;) {
      const inputs = this.currentInputs(name);
      if (inputs) return inputs;
      if (this.#o.clock.now() - start > timeoutMs) throw new Error(`Task "${name}": its dependencies did not answer within ${timeoutMs} ms`);
      await new Promise<void>((r) => this.#o.clock.setTimer(50, r));
    }
  }

  /**
   * What a new task would do, without creating it (POST /v1/tasks?run=inspect):
   * it is watched disabled just long enough to render and inspect, then dropped.
   */
  async inspectNew(config: TaskConfig): Promise<DriverResult> {
    if (this.#tasks.has(config.name)) throw new RangeError(`Task "${config.name}" already exists`);
    this.#tasks.set(config.name, { config: { ...config, enabled: false }, runs: [] });
    for (const d of taskDependencies(config)) this.#deps.set(d.key, d);
    this.#sched.addTask(taskSpec({ ...config, enabled: false }), this.#o.clock.now());
    this.#syncWatchers();
    try {
      return await this.inspect(config.name);
    } finally {
      this.#sched.removeTask(config.name);
      this.#tasks.delete(config.name);
      this.#syncWatchers();
    }
  }

  /** Delete a task; with destroy, the driver first removes what the task made (its error keeps the task). */
  async deleteTask(name: string, options: { destroy?: boolean } = {}): Promise<DriverResult | undefined> {
    const t = this.#tasks.get(name);
    if (!t) throw new RangeError(`Task "${name}" does not exist`);
    let result: DriverResult | undefined;
    if (options.destroy) {
      await this.#running.get(name)?.done;
      const inputs = await this.#waitInputs(name, 15_000);
      result = await this.#o.driver.destroy({ runId: `destroy-${++this.#runSeq}`, task: t.config, trigger: "destroy", inputs }, this.#stop.signal);
      if (!result.ok) return result;
    }
    await this.removeTask(name);
    await this.#kvDelete(`${this.#kvPath}task-defs/${name}`);
    return result;
  }

  /** Create a task (API, CLI); kept in KV so a restart or a new leader has it. */
  async createTask(config: TaskConfig, options: { replace?: boolean; /** The task as JSON (what parseTaskDocument read). */ definition: string }): Promise<void> {
    if (this.#tasks.has(config.name)) {
      if (!options.replace) throw new RangeError(`Task "${config.name}" already exists`);
      await this.#running.get(config.name)?.done;
      await this.removeTask(config.name);
    }
    await this.#kvPut(`${this.#kvPath}task-defs/${config.name}`, options.definition);
    await this.addTask(config, { persist: true });
  }

  // --- watchers -------------------------------------------------------------

  #syncWatchers(): void {
    const want = new Set(this.#sched.dependencies());
    for (const [key, ctl] of this.#watchers) {
      if (!want.has(key)) {
        ctl.abort();
        this.#watchers.delete(key);
        this.#deps.delete(key);
      }
    }
    for (const key of want) {
      if (this.#watchers.has(key)) continue;
      const dep = this.#deps.get(key);
      if (!dep) continue;
      const ctl = new AbortController();
      this.#watchers.set(key, ctl);
      void this.#watch(dep, ctl.signal);
    }
  }

  async #watch(dep: Dependency, signal: AbortSignal): Promise<void> {
    if (dep.kind === "health-regexp") return this.#watchRegexp(dep, signal);
    await this.#blockingLoop(dep, signal, (body) => {
      const value = dep.kind === "health" ? renderHealthEntries(body, {}) : dep.kind === "kv" ? renderKvEntries(body ?? [], decodeB64) : (body ?? {});
      this.#sched.step({ kind: "data", dep: dep.key, value, now: this.#o.clock.now() });
      this.#pump();
    });
  }

  /**
   * `services { regexp = … }`: the catalog's service list, blocking, and one
   * health watch per matching service; the dependency's data is the union,
   * given once every matching service has answered.
   */
  async #watchRegexp(dep: Dependency, signal: AbortSignal): Promise<void> {
    const re = new RegExp(dep.params.find(([k]) => k === "regexp")?.[1] ?? "");
    const pass = dep.params.filter(([k]) => k !== "regexp");
    const healthParams = [...pass, ["passing", "1"] as [string, string]];
    const listParams = pass.filter(([k]) => k === "dc" || k === "ns");
    const subs = new Map<string, { ctl: AbortController; value?: Record<string, RenderedService> }>();
    let listed = false;
    const emit = () => {
      if (!listed || [...subs.values()].some((x) => x.value === undefined)) return;
      const merged: Record<string, RenderedService> = {};
      for (const name of [...subs.keys()].sort()) Object.assign(merged, subs.get(name)!.value);
      this.#sched.step({ kind: "data", dep: dep.key, value: merged, now: this.#o.clock.now() });
      this.#pump();
    };
    await this.#blockingLoop({ key: dep.key, path: "/v1/catalog/services", params: listParams }, signal, (body) => {
      const names = new Set(Object.keys((body ?? {}) as Record<string, unknown>).filter((n) => re.test(n)));
      for (const [n, sub] of subs) {
        if (!names.has(n)) {
          sub.ctl.abort();
          subs.delete(n);
        }
      }
      for (const n of names) {
        if (subs.has(n)) continue;
        const sub: { ctl: AbortController; value?: Record<string, RenderedService> } = { ctl: new AbortController() };
        subs.set(n, sub);
        signal.addEventListener("abort", () => sub.ctl.abort(), { once: true });
        void this.#blockingLoop({ key: `${dep.key} ${n}`, path: `/v1/health/service/${encodeURIComponent(n)}`, params: healthParams }, sub.ctl.signal, (b) => {
          sub.value = renderHealthEntries(b, {});
          emit();
        });
      }
      listed = true;
      emit();
    });
    for (const sub of subs.values()) sub.ctl.abort();
  }

  /** One blocking query, again and again: `onBody` on each new index; errors back off. */
  async #blockingLoop(dep: Pick<Dependency, "key" | "path" | "params">, signal: AbortSignal, onBody: (body: unknown) => void): Promise<void> {
    const log = this.#log.named("watch").with({ dependency: dep.key });
    let index = 0;
    let failures = 0;
    const params: Record<string, string> = {};
    const repeated: [string, string][] = [];
    for (const [k, v] of dep.params) {
      if (k in params) repeated.push([k, v]);
      else params[k] = v;
    }
    const path = repeated.length ? `${dep.path}?${new URLSearchParams(repeated).toString()}` : dep.path;
    while (!signal.aborted) {
      try {
        const res = await this.#o.client.request({
          method: "GET",
          path,
          params,
          query: { waitIndex: index, waitTimeMs: 60_000, signal },
          accept: [404],
        });
        failures = 0;
        const next = res.meta.lastIndex;
        if (next < index) index = 0; // went backwards (restore, new leader): start over
        else if (next === index && index !== 0) continue; // wait timed out, nothing new
        else index = next;
        const body: unknown = res.status === 404 || res.text.trim() === "" ? null : JSON.parse(res.text);
        if (signal.aborted) return;
        log.trace("data", { index });
        onBody(body);
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        // 429 (too many connections) passes quickly: retry soon rather than back off far.
        const busy = err instanceof ApiError && err.status === 429;
        const waitMs = busy ? 250 * Math.min(failures, 4) : Math.min(1_000 * 2 ** Math.min(failures - 1, 5), 30_000);
        log.warn("blocking query failed, retrying", { error: err instanceof ApiError ? `${err.status} ${err.message}` : errorMessage(err), retryMs: waitMs });
        await sleep(this.#o.clock, waitMs, signal);
      }
    }
  }

  // --- scheduling -----------------------------------------------------------

  #tick(): void {
    if (this.#stopped) return;
    this.#sched.step({ kind: "tick", now: this.#o.clock.now(), wallNow: this.#o.clock.wallNow() });
    this.#pump();
  }

  #pump(): void {
    if (this.#stopped) return;
    if (!this.#active) return; // runs wait; the scheduler keeps them pending
    const rd = this.#sched.ready();
    for (const r of rd.runs) this.#startRun(r);
    this.#timer?.cancel();
    let delay: number | undefined;
    if (rd.nextDeadline !== undefined) delay = rd.nextDeadline - this.#o.clock.now();
    if (rd.nextWallDeadline !== undefined) {
      const w = rd.nextWallDeadline - this.#o.clock.wallNow();
      delay = delay === undefined ? w : Math.min(delay, w);
    }
    if (delay !== undefined) this.#timer = this.#o.clock.setTimer(Math.max(0, Math.min(delay, 2_147_000_000)), () => this.#tick());
  }

  #startRun(order: RunOrder<RenderedInputs>): void {
    const entry = this.#tasks.get(order.task);
    if (!entry) {
      this.#sched.step({ kind: "runDone", task: order.task, runId: order.runId, ok: false, now: this.#o.clock.now() });
      return;
    }
    const variables = moduleVariables(order.inputs);
    const wall = this.#o.clock.wallNow();
    const id = `${String(wall).padStart(15, "0")}-${String(++this.#runSeq).padStart(6, "0")}`;
    const trigger: RunRecord["trigger"] = this.#o.runAll && order.trigger === "start" ? "once" : order.trigger;
    const rec: RunRecord = {
      id,
      task: order.task,
      trigger,
      status: "running",
      startTime: isoTimestamp(wall),
      changedInputs: order.changed,
      inputsHash: order.hash,
    };
    entry.runs.push(rec);
    const log = this.#log.named("run").with({ task: order.task, run: id, trigger });
    log.info("run starting", { changed: order.changed.length });
    const ctl = new AbortController();
    const done = (async () => {
      // The "running" record goes to KV alongside the driver's start, not before it:
      // a Raft write must not sit between a change and its run.
      const started = this.#writeRun({ ...rec });
      let result: DriverResult;
      try {
        result = await this.#o.driver.apply({ runId: id, task: entry.config, trigger: order.trigger, inputs: variables }, ctl.signal);
      } catch (err) {
        result = { ok: false, exitCode: -1, outputTail: "", error: errorMessage(err) };
      }
      rec.status = result.ok ? "successful" : "errored";
      rec.endTime = isoTimestamp(this.#o.clock.wallNow());
      rec.exitCode = result.exitCode;
      rec.outputTail = result.outputTail;
      if (result.error !== undefined) rec.error = result.error;
      if (result.ok) log.info("run finished", { status: rec.status });
      else log.error("run failed", { status: rec.status, exitCode: result.exitCode, error: result.error });
      this.#running.delete(order.task);
      this.#finished.add(order.task);
      this.#sched.step({ kind: "runDone", task: order.task, runId: order.runId, ok: result.ok, now: this.#o.clock.now() });
      await started;
      await this.#writeRun(rec);
      if (result.ok && this.#tasks.has(order.task)) await this.#writeState(order.task);
      await this.#prune(entry);
      this.#o.onRunEnd?.(rec);
      if (this.#o.config.webhook) void this.#webhook(rec);
      this.#pump();
    })();
    this.#running.set(order.task, { order, ctl, done });
  }

  async #webhook(rec: RunRecord): Promise<void> {
    try {
      const f = this.#o.fetch ?? globalThis.fetch;
      const res = await f(this.#o.config.webhook, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(rec), signal: AbortSignal.timeout(10_000) });
      await res.arrayBuffer();
      if (!res.ok) this.#log.warn("webhook answered an error", { status: res.status });
    } catch (err) {
      this.#log.warn("webhook failed", { error: errorMessage(err) });
    }
  }

  // --- KV -------------------------------------------------------------------

  async #readState(name: string): Promise<{ enabled: boolean; appliedHash?: string } | undefined> {
    try {
      const { pair } = await this.#o.client.kv.get(`${this.#kvPath}task-state/${name}`);
      if (!pair?.Value) return undefined;
      const v = JSON.parse(textDecoder.decode(pair.Value)) as { enabled?: unknown; appliedHash?: unknown };
      return { enabled: v.enabled !== false, ...(typeof v.appliedHash === "string" ? { appliedHash: v.appliedHash } : {}) };
    } catch (err) {
      this.#log.warn("cannot read task state", { task: name, error: errorMessage(err) });
      return undefined;
    }
  }

  async #readTaskDefs(): Promise<TaskConfig[]> {
    try {
      const { pairs } = await this.#o.client.kv.list(`${this.#kvPath}task-defs/`);
      const out: TaskConfig[] = [];
      for (const p of pairs) {
        try {
          out.push(parseTaskDocument({ file: `KV ${p.Key}`, text: textDecoder.decode(p.Value ?? new Uint8Array()) }, this.#o.config));
        } catch (err) {
          this.#log.warn("skipping an unreadable task definition in KV", { key: p.Key, error: errorMessage(err) });
        }
      }
      return out;
    } catch {
      return [];
    }
  }

  async #writeState(name: string): Promise<void> {
    const t = this.#tasks.get(name);
    const v = this.#sched.task(name);
    if (!t || !v) return;
    const body = JSON.stringify({ enabled: t.config.enabled, ...(v.appliedHash !== undefined ? { appliedHash: v.appliedHash } : {}) });
    await this.#kvPut(`${this.#kvPath}task-state/${name}`, body);
  }

  async #readRuns(name: string): Promise<RunRecord[]> {
    try {
      const { pairs } = await this.#o.client.kv.list(`${this.#kvPath}runs/${name}/`);
      const out: RunRecord[] = [];
      for (const p of pairs) {
        try {
          const r = JSON.parse(textDecoder.decode(p.Value ?? new Uint8Array())) as RunRecord;
          // A run that was going when its instance died never finished.
          if (r.status === "running") {
            r.status = "errored";
            r.error = INTERRUPTED;
          }
          out.push(r);
        } catch {
          // not ours: skip
        }
      }
      return out.sort((a, b) => (a.id < b.id ? -1 : 1));
    } catch {
      return [];
    }
  }

  async #writeRun(rec: RunRecord): Promise<void> {
    await this.#kvPut(`${this.#kvPath}runs/${rec.task}/${rec.id}`, JSON.stringify(rec));
  }

  async #prune(entry: TaskEntry): Promise<void> {
    const keep = this.#o.config.runHistory;
    while (entry.runs.length > keep) {
      const old = entry.runs.shift()!;
      await this.#kvDelete(`${this.#kvPath}runs/${old.task}/${old.id}`);
    }
  }

  /**
   * At most 4 bookkeeping writes in flight: the agent limits connections per
   * client (200 by default) and the watchers' long polls need theirs.
   */
  async #kvSlot<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#kvInFlight >= 4) await new Promise<void>((r) => this.#kvWaiters.push(r));
    this.#kvInFlight++;
    try {
      return await fn();
    } finally {
      this.#kvInFlight--;
      this.#kvWaiters.shift()?.();
    }
  }

  #kvInFlight = 0;
  readonly #kvWaiters: (() => void)[] = [];

  async #kvPut(key: string, value: string): Promise<void> {
    try {
      await this.#kvSlot(() => this.#o.client.kv.put(key, value));
    } catch (err) {
      this.#log.warn("cannot write to KV", { key, error: errorMessage(err) });
    }
  }

  async #kvDelete(key: string): Promise<void> {
    try {
      await this.#kvSlot(() => this.#o.client.kv.delete(key));
    } catch (err) {
      this.#log.warn("cannot delete from KV", { key, error: errorMessage(err) });
    }
  }
}
