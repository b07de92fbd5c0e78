// The pure heart of `cairn sync`: which task runs when. Inputs in (a
// dependency's new data, a tick, a run that ended, an operator's request),
// run orders out, no clock or I/O inside (time comes in the inputs).
//
// Rules (CTS controller/tasks_manager.go, templates' buffer period):
//   - every dependency is watched once, however many tasks use it; a task is
//     rendered from the current data of its dependencies and triggers on the
//     canonical hash of that render changing (never on raw answers);
//   - a change waits out the task's buffer period: it runs at
//     min(last change + min, first change + max), so a burst is one run;
//   - one run per task at a time: a change while it runs leaves the task
//     pending (dirty) and it runs again afterwards; nothing is lost;
//   - at most `maxConcurrentRuns` runs at once; waiting tasks start in the
//     order their deadlines passed;
//   - a disabled task keeps its data up to date but never runs; enabling it
//     runs it once;
//   - a schedule task runs on its cron times (wall clock), with its module
//     inputs as they are then.
import { nextCronTime } from "./cron.ts";
import type { CronSchedule } from "./cron.ts";
import type { BufferPeriod } from "./config.ts";
import { renderHash } from "./render.ts";

export type Trigger = "start" | "change" | "schedule" | "manual" | "enable" | "failover";

export interface TaskSpec<R = unknown> {
  name: string;
  enabled: boolean;
  /** Dependency keys; the driver watches each key once. */
  deps: readonly string[];
  bufferPeriod: BufferPeriod;
  /** Turn the dependencies' data into the module's inputs. Must be pure. */
  render(data: ReadonlyMap<string, unknown>): R;
  schedule?: CronSchedule;
  /** Hash of the inputs the last successful run applied (from KV after a restart). */
  appliedHash?: string;
}

export type SchedulerInput =
  | { kind: "data"; dep: string; value: unknown; now: number }
  | { kind: "tick"; now: number; wallNow: number }
  | { kind: "runDone"; task: string; runId: number; ok: boolean; now: number }
  | { kind: "runNow"; task: string; now: number; trigger?: "manual" | "failover" };

export interface RunOrder<R = unknown> {
  runId: number;
  task: string;
  trigger: Trigger;
  inputs: R;
  hash: string;
  /** The dependencies whose data changed since the task's previous run. */
  changed: string[];
}

export interface SchedulerReady<R = unknown> {
  runs: RunOrder<R>[];
  /** Monotonic ms of the next buffer deadline (feed a tick then), if any. */
  nextDeadline?: number;
  /** Wall ms of the next cron time, if any. */
  nextWallDeadline?: number;
}

interface TaskState<R> {
  spec: TaskSpec<R>;
  /** Hash of the current render, once every dependency has data. */
  hash?: string;
  inputs?: R;
  /** Hash of the run that last started (a change back to it is no change). */
  startedHash?: string;
  appliedHash?: string;
  pendingFirst?: number;
  pendingLast?: number;
  pendingTrigger?: Trigger;
  /** An operator asked for a run: it happens even when nothing changed. */
  forced?: Trigger;
  running?: number;
  changed: Set<string>;
  nextCronWall?: number;
  /** When its deadline passed, to start waiting tasks in order. */
  dueSince?: number;
}

export interface TaskView {
  name: string;
  enabled: boolean;
  running: boolean;
  pending: boolean;
  hash?: string;
  appliedHash?: string;
}

export class SyncScheduler<R = unknown> {
  readonly #maxConcurrent: number;
  readonly #tasks = new Map<string, TaskState<R>>();
  readonly #data = new Map<string, unknown>();
  readonly #depTasks = new Map<string, Set<string>>();
  #runs: RunOrder<R>[] = [];
  #nextRunId = 1;
  #lastNow = 0;
  #lastWall?: number;
  #paused = false;

  constructor(options: { maxConcurrentRuns: number }) {
    if (!(options.maxConcurrentRuns >= 1)) throw new RangeError("maxConcurrentRuns must be at least 1");
    this.#maxConcurrent = options.maxConcurrentRuns;
  }

  /** Paused: runs stay pending, nothing starts (HA follower, or a leader that lost its lock). */
  setPaused(paused: boolean, now: number): void {
    this.#paused = paused;
    if (!paused) this.#dispatch(now);
  }

  /** Dependency keys some task needs (the watchers to keep). */
  dependencies(): string[] {
    return [...this.#depTasks.keys()];
  }

  addTask(spec: TaskSpec<R>, now: number): void {
    if (this.#tasks.has(spec.name)) throw new RangeError(`Task "${spec.name}" already exists`);
    const st: TaskState<R> = { spec, changed: new Set(), ...(spec.appliedHash !== undefined ? { appliedHash: spec.appliedHash, startedHash: spec.appliedHash } : {}) };
    this.#tasks.set(spec.name, st);
    for (const d of spec.deps) {
      let s = this.#depTasks.get(d);
      if (!s) this.#depTasks.set(d, (s = new Set()));
      s.add(spec.name);
    }
    if (spec.schedule && this.#lastWall !== undefined) st.nextCronWall = nextCronTime(spec.schedule, this.#lastWall);
    this.#rerender(st, now, undefined);
    this.#dispatch(now);
  }

  /** Remove a task; returns false if unknown. A running run finishes; its runDone is then ignored. */
  removeTask(name: string): boolean {
    const st = this.#tasks.get(name);
    if (!st) return false;
    this.#tasks.delete(name);
    for (const d of st.spec.deps) {
      const s = this.#depTasks.get(d);
      s?.delete(name);
      if (s && s.size === 0) {
        this.#depTasks.delete(d);
        this.#data.delete(d);
      }
    }
    return true;
  }

  setEnabled(name: string, enabled: boolean, now: number): boolean {
    const st = this.#tasks.get(name);
    if (!st) return false;
    const was = st.spec.enabled;
    st.spec = { ...st.spec, enabled };
    if (enabled && !was) {
      st.forced = "enable";
      st.pendingFirst ??= now;
      st.pendingLast = now;
    }
    this.#dispatch(now);
    return true;
  }

  task(name: string): TaskView | undefined {
    const st = this.#tasks.get(name);
    return st ? this.#view(st) : undefined;
  }

  /** The task's current render (undefined until every dependency answered). */
  inputs(name: string): R | undefined {
    const st = this.#tasks.get(name);
    if (!st) return undefined;
    if (st.inputs === undefined && st.spec.deps.length === 0) return st.spec.render(this.#data);
    return st.inputs;
  }

  tasks(): TaskView[] {
    return [...this.#tasks.values()].map((st) => this.#view(st));
  }

  #view(st: TaskState<R>): TaskView {
    return {
      name: st.spec.name,
      enabled: st.spec.enabled,
      running: st.running !== undefined,
      pending: st.pendingFirst !== undefined,
      ...(st.hash !== undefined ? { hash: st.hash } : {}),
      ...(st.appliedHash !== undefined ? { appliedHash: st.appliedHash } : {}),
    };
  }

  step(input: SchedulerInput): void {
    this.#lastNow = Math.max(this.#lastNow, input.now);
    switch (input.kind) {
      case "data": {
        this.#data.set(input.dep, input.value);
        for (const name of this.#depTasks.get(input.dep) ?? []) this.#rerender(this.#tasks.get(name)!, input.now, input.dep);
        break;
      }
      case "tick": {
        this.#lastWall = input.wallNow;
        for (const st of this.#tasks.values()) {
          const sch = st.spec.schedule;
          if (!sch) continue;
          st.nextCronWall ??= nextCronTime(sch, input.wallNow);
          if (st.nextCronWall !== undefined && input.wallNow >= st.nextCronWall) {
            st.nextCronWall = nextCronTime(sch, input.wallNow);
            if (st.hash !== undefined || st.spec.deps.length === 0) {
              st.forced ??= "schedule";
              st.pendingFirst ??= input.now;
              st.pendingLast = input.now;
            }
          }
        }
        break;
      }
      case "runDone": {
        const st = this.#tasks.get(input.task);
        if (!st || st.running !== input.runId) break;
        st.running = undefined;
        if (input.ok) st.appliedHash = st.startedHash;
        break;
      }
      case "runNow": {
        const st = this.#tasks.get(input.task);
        if (!st) break;
        st.forced = input.trigger ?? "manual";
        st.pendingFirst ??= input.now;
        st.pendingLast = input.now;
        break;
      }
    }
    this.#dispatch(input.now);
  }

  ready(): SchedulerReady<R> {
    const runs = this.#runs;
    this.#runs = [];
    let nextDeadline: number | undefined;
    let nextWall: number | undefined;
    for (const st of this.#tasks.values()) {
      if (st.pendingFirst !== undefined && st.spec.enabled && st.running === undefined) {
        const d = this.#deadline(st);
        if (d > this.#lastNow) nextDeadline = nextDeadline === undefined ? d : Math.min(nextDeadline, d);
      }
      if (st.nextCronWall !== undefined) nextWall = nextWall === undefined ? st.nextCronWall : Math.min(nextWall, st.nextCronWall);
    }
    return { runs, ...(nextDeadline !== undefined ? { nextDeadline } : {}), ...(nextWall !== undefined ? { nextWallDeadline: nextWall } : {}) };
  }

  #rerender(st: TaskState<R>, now: number, dep: string | undefined): void {
    if (!st.spec.deps.every((d) => this.#data.has(d))) return;
    const inputs = st.spec.render(this.#data);
    const hash = renderHash(inputs);
    if (st.spec.schedule) {
      // A schedule task reads its inputs when its time comes; data alone never triggers it.
      st.inputs = inputs;
      st.hash = hash;
      return;
    }
    if (hash === st.hash) return;
    st.hash = hash;
    st.inputs = inputs;
    if (dep !== undefined) st.changed.add(dep);
    if (hash === st.startedHash) {
      // Back to what is (being) applied: nothing to do, unless an operator asked.
      if (st.forced === undefined) {
        st.pendingFirst = undefined;
        st.pendingLast = undefined;
        st.changed.clear();
      }
      return;
    }
    const first = st.startedHash === undefined && st.pendingFirst === undefined;
    st.pendingTrigger = first || st.pendingTrigger === "start" ? "start" : "change";
    st.pendingFirst ??= now;
    st.pendingLast = now;
  }

  #deadline(st: TaskState<R>): number {
    const first = st.pendingFirst!;
    if (st.forced !== undefined || st.pendingTrigger === "start") return first;
    const bp = st.spec.bufferPeriod;
    if (!bp.enabled) return first;
    return Math.min(st.pendingLast! + bp.minMs, first + bp.maxMs);
  }

  #dispatch(now: number): void {
    if (this.#paused) return;
    const due: TaskState<R>[] = [];
    let running = 0;
    for (const st of this.#tasks.values()) {
      if (st.running !== undefined) running++;
      if (st.pendingFirst === undefined || !st.spec.enabled || st.running !== undefined) continue;
      if (st.hash === undefined && st.spec.deps.length > 0) continue;
      const d = this.#deadline(st);
      if (now < d) continue;
      st.dueSince ??= d;
      due.push(st);
    }
    due.sort((a, b) => a.dueSince! - b.dueSince! || (a.spec.name < b.spec.name ? -1 : 1));
    for (const st of due) {
      if (running >= this.#maxConcurrent) break;
      const trigger: Trigger = st.forced ?? st.pendingTrigger ?? "change";
      const runId = this.#nextRunId++;
      const inputs = st.inputs ?? st.spec.render(this.#data);
      const hash = st.hash ?? renderHash(inputs);
      this.#runs.push({ runId, task: st.spec.name, trigger, inputs, hash, changed: [...st.changed].sort() });
      st.running = runId;
      st.startedHash = hash;
      st.pendingFirst = undefined;
      st.pendingLast = undefined;
      st.pendingTrigger = undefined;
      st.forced = undefined;
      st.dueSince = undefined;
      st.changed.clear();
      running++;
    }
  }
}
