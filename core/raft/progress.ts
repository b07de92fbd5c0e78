// The leader's view of one follower (etcd-io/raft `tracker/progress.go`):
// probe (one append at a time until we find where logs match), replicate
// (pipelined appends, at most `maxInflight` unacknowledged), snapshot
// (sending InstallSnapshot chunks).

export type ProgressState = "probe" | "replicate" | "snapshot";

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = "probe";
  /** Probe: an append is out; wait for its answer or the next heartbeat. Snapshot: a chunk is out. */
  paused = false;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** Highest commit index an append or heartbeat told this follower (it may have been lost). */
  commitSent = 0;
  /** Highest heartbeat round this follower acknowledged (lease and ReadIndex). */
  ackedRound = 0;
  /** Last index and send tick of each unacknowledged append, oldest first. */
  inflight: { last: number; tick: number }[] = [];
  /** Snapshot state: the snapshot index being sent and the next byte offset the follower wants. */
  pendingSnapshot = 0;
  snapshotOffset = 0;
  /** Snapshot state: bytes sent so far (chunks beyond snapshotOffset are in flight), and the tick of the last send. */
  snapshotSent = 0;
  snapshotSentTick = 0;

  constructor(next: number) {
    this.next = next;
  }

  becomeProbe(): void {
    if (this.state === "snapshot") {
      this.next = Math.max(this.match + 1, this.pendingSnapshot + 1);
      this.pendingSnapshot = 0;
    } else {
      this.next = this.match + 1;
    }
    this.state = "probe";
    this.paused = false;
    this.inflight = [];
  }

  becomeReplicate(): void {
    this.state = "replicate";
    this.next = this.match + 1;
    this.paused = false;
    this.inflight = [];
  }

  becomeSnapshot(index: number): void {
    this.state = "snapshot";
    this.pendingSnapshot = index;
    this.snapshotOffset = 0;
    this.snapshotSent = 0;
    this.paused = false;
    this.inflight = [];
  }

  /** A successful append response for `index`; returns whether match advanced. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.paused = false;
    }
    this.next = Math.max(this.next, index + 1);
    while (this.inflight.length > 0 && this.inflight[0]!.last <= index) this.inflight.shift();
    return updated;
  }

  /**
   * A rejected append for prevIndex `rejected`, with the follower's hint of
   * where logs may match. Returns false when the rejection is stale.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1, 1);
    this.paused = false;
    return true;
  }

  /** Record an append sent whose last entry is `last`. */
  sentEntries(last: number, count: number, tick: number): void {
    if (this.state === "replicate") {
      if (count > 0) {
        this.next = last + 1;
        this.inflight.push({ last, tick });
      }
    } else if (this.state === "probe") {
      this.paused = true;
    }
  }

  isPaused(maxInflight: number): boolean {
    switch (this.state) {
      case "probe":
        return this.paused;
      case "replicate":
        return this.inflight.length >= maxInflight;
      case "snapshot":
        return true;
    }
  }
}
