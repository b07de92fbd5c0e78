// The Raft log as the core sees it: every entry after the compaction point,
// in memory, with markers for what is persisted (`stabled`), committed and
// applied. Pure; the driver persists what `unstableEntries()` returns.
import type { LogEntry } from "./types.ts";

export class RaftLog {
  /** Index and term of the entry just before entries[0] (compaction point or snapshot). */
  offsetIndex: number;
  offsetTerm: number;
  entries: LogEntry[] = [];
  committed: number;
  /** Highest index handed to the application for applying. */
  applying: number;
  /** Highest index the application has applied. */
  applied: number;
  /** Highest index known to be on stable storage. */
  stabled: number;
  /**
   * Highest index handed to the driver to persist (>= stabled). Entries up
   * to here are not handed out again while a leader's write of them is
   * still running (see RaftCore.advance's entriesDurable).
   */
  persisting: number;

  constructor(offsetIndex = 0, offsetTerm = 0) {
    this.offsetIndex = offsetIndex;
    this.offsetTerm = offsetTerm;
    this.committed = offsetIndex;
    this.applying = offsetIndex;
    this.applied = offsetIndex;
    this.stabled = offsetIndex;
    this.persisting = offsetIndex;
  }

  firstIndex(): number {
    return this.offsetIndex + 1;
  }

  lastIndex(): number {
    return this.offsetIndex + this.entries.length;
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  /** Term of the entry at index; undefined if compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.offsetIndex) return this.offsetTerm;
    if (index < this.offsetIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.offsetIndex - 1]!.term;
  }

  entry(index: number): LogEntry | undefined {
    if (index <= this.offsetIndex || index > this.lastIndex()) return undefined;
    return this.entries[index - this.offsetIndex - 1];
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Entries lo <= index < hi that are still present. */
  slice(lo: number, hi: number): LogEntry[] {
    const from = Math.max(lo, this.firstIndex()) - this.offsetIndex - 1;
    const to = Math.min(hi, this.lastIndex() + 1) - this.offsetIndex - 1;
    return to > from ? this.entries.slice(from, to) : [];
  }

  /** Raft §5.4.1: is a log ending at (lastIndex, lastTerm) at least as up to date as ours? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const myTerm = this.lastTerm();
    return lastTerm > myTerm || (lastTerm === myTerm && lastIndex >= this.lastIndex());
  }

  /** Append at the end (leader). */
  append(entries: LogEntry[]): void {
    for (const e of entries) this.entries.push(e);
  }

  /**
   * Follower append after a matching (prevIndex, prevTerm): skip entries we
   * already have, truncate at the first conflict, add the rest. Returns the
   * index of the first truncated entry (0 if none), or -1 when the conflict
   * would remove a committed entry (a protocol violation by the sender).
   */
  appendAfter(entries: LogEntry[]): number {
    let i = 0;
    for (; i < entries.length; i++) {
      const e = entries[i]!;
      const t = this.term(e.index);
      if (t === undefined && e.index <= this.offsetIndex) continue; // compacted: known committed
      if (t !== e.term) break;
    }
    if (i === entries.length) return 0;
    const first = entries[i]!.index;
    let truncated = 0;
    if (first <= this.lastIndex()) {
      if (first <= this.committed) return -1;
      truncated = first;
      this.entries.length = first - this.offsetIndex - 1;
      if (this.stabled >= first) this.stabled = first - 1;
      if (this.persisting >= first) this.persisting = first - 1;
    }
    for (; i < entries.length; i++) this.entries.push(entries[i]!);
    return truncated;
  }

  /**
   * Fast back-off (etcd `findConflictByTerm`): the largest index <= `index`
   * whose term is <= `term`, so a leader can skip a whole term per round trip.
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let i = Math.min(index, this.lastIndex());
    for (; i > this.offsetIndex; i--) {
      const t = this.term(i)!;
      if (t <= term) return { index: i, term: t };
    }
    return { index: this.offsetIndex, term: this.offsetTerm };
  }

  commitTo(index: number): boolean {
    const to = Math.min(index, this.lastIndex());
    if (to > this.committed) {
      this.committed = to;
      return true;
    }
    return false;
  }

  /** Entries not yet handed to the driver to persist. */
  unstableEntries(): LogEntry[] {
    return this.slice(Math.max(this.stabled, this.persisting) + 1, this.lastIndex() + 1);
  }

  /** Whether some entries have not been handed to the driver to persist yet. */
  hasUnstable(): boolean {
    return this.lastIndex() > Math.max(this.stabled, this.persisting);
  }

  /** Committed entries not yet handed out for applying. */
  nextCommitted(): LogEntry[] {
    return this.slice(this.applying + 1, this.committed + 1);
  }

  /** Drop entries up to and including index (keeping its term as the offset). */
  compact(index: number): void {
    if (index <= this.offsetIndex) return;
    const upTo = Math.min(index, this.applied, this.stabled);
    if (upTo <= this.offsetIndex) return;
    const t = this.term(upTo)!;
    this.entries = this.entries.slice(upTo - this.offsetIndex);
    this.offsetIndex = upTo;
    this.offsetTerm = t;
  }

  /** Replace everything with a snapshot's point (follower installing a snapshot). */
  restore(index: number, term: number): void {
    this.entries = [];
    this.offsetIndex = index;
    this.offsetTerm = term;
    this.committed = index;
    this.applying = index;
    this.applied = index;
    this.stabled = index;
    this.persisting = index;
  }
}
