import { LIMITS } from "../../../shared/config.js";
import type { RawTask } from "../../helpers/invariants.js";
// A small pure model of one leaseq queue (not ordered), written from DESIGN.md and the script
// headers in lua/, for the model-based suite: the real queue and this model take the same
// commands, and their states must agree after every step.

export type Letter = "R" | "S" | "L" | "D" | "F";

/** A task as the model keeps it: the fields of a task record (test/helpers/invariants.ts). */
export type ModelTask = Omit<RawTask, "state"> & { state: Letter };

export interface ModelOptions {
  policies: Record<string, { leaseMs: number; maxAttempts: number }>;
  defaultPolicy: { leaseMs: number; maxAttempts: number };
  doneRetentionMs: number;
  failedRetentionMs: number;
  /** Strict order: no claim while a task is leased or the hold time is ahead. */
  ordered?: boolean;
  /** A task is FAILED at this many stalls (default 3). */
  maxStalls?: number;
}

const SEQ_SPAN = LIMITS.rankSpan;
const STATUS = { ok: "ok", stale: "stale_token", done: "already_done", unknown: "unknown_id" } as const;
const STATE_NAME: Record<Letter, string> = { R: "ready", S: "scheduled", L: "leased", D: "done", F: "failed" };

export const stateName = (letter: Letter | undefined) => (letter ? STATE_NAME[letter] : undefined);

export class QueueModel {
  readonly tasks = new Map<string, ModelTask>();
  seq = 0;
  /**
   * Ordered queues: no claim before this time (ms), set by a retry of `holdId`; it ends with that task
   * (cancelled, deleted, requeued, or no longer READY when a claim looks).
   */
  hold: number | undefined;
  holdId: string | undefined;
  /** The queue is paused: claims lease nothing. */
  paused = false;
  /**
   * The queue's lease counter: every claim that leases gives its leases the next value (the first
   * starts from the claim's `now`), so a token is never issued twice, whatever happens to its id.
   */
  leaseCounter: number | undefined;
  /** Task types paused on their own: their tasks stay READY (an ordered queue stops at one). */
  readonly pausedTypes = new Set<string>();

  constructor(readonly options: ModelOptions) {}

  token(task: ModelTask): string {
    return `${task.rank}.${task.claims}`;
  }

  enqueue(items: Array<{ id: string; type: string; priority: number; runAtMs: number; payload: string }>, now: number) {
    const firstOf = new Map<string, number>();
    return items.map((item, index) => {
      const existing = this.tasks.get(item.id);
      if (existing && firstOf.get(item.id) !== index) return { status: "duplicate", state: stateName(existing.state) };
      firstOf.set(item.id, index);
      const rank = (item.priority + 1000) * SEQ_SPAN + ++this.seq;
      const scheduled = item.runAtMs > now;
      this.tasks.set(item.id, {
        state: scheduled ? "S" : "R",
        type: item.type,
        rank,
        attempts: 0,
        claims: 0,
        maxAttempts: 0,
        at: scheduled ? item.runAtMs : now,
        group: "",
        flags: "",
        error: "",
        payload: item.payload,
        stalls: 0,
      });
      return { status: "ok", state: scheduled ? "scheduled" : "ready" };
    });
  }

  /** Promotes due scheduled tasks, then leases the `count` lowest ranks (unless an ordered queue's gate is closed). */
  claim(count: number, now: number) {
    if (this.paused) return [];
    for (const task of this.tasks.values()) {
      // READY since it fell due: its `at` stays its due time (what it waited counts from then).
      if (task.state === "S" && task.at <= now) task.state = "R";
    }
    if (this.options.ordered) {
      if ([...this.tasks.values()].some((task) => task.state === "L")) return [];
      if (this.hold !== undefined && this.hold > now) {
        if (this.holdId !== undefined && this.tasks.get(this.holdId)?.state !== "R") this.forgetHold();
        else return [];
      }
    }
    let ready = [...this.tasks].filter(([, t]) => t.state === "R").sort(([, a], [, b]) => a.rank - b.rank);
    if (this.options.ordered) {
      const blocked = ready.findIndex(([, task]) => this.pausedTypes.has(task.type));
      if (blocked >= 0) ready = ready.slice(0, blocked);
    } else {
      ready = ready.filter(([, task]) => !this.pausedTypes.has(task.type));
    }
    let batch = ready.slice(0, count);
    const generation = (this.leaseCounter ?? now) + 1;
    // A task that stalled twice goes alone: the batch is just it when it comes first, else cut before it.
    const firstSolo = batch.findIndex(([, task]) => task.flags === "s");
    if (firstSolo === 0) batch = batch.slice(0, 1);
    else if (firstSolo > 0) batch = batch.slice(0, firstSolo);
    return batch.map(([id, task]) => {
      const policy = this.options.policies[task.type] ?? this.options.defaultPolicy;
      const solo = task.flags === "s";
      task.state = "L";
      task.attempts++;
      task.claims = generation;
      this.leaseCounter = generation;
      task.maxAttempts = policy.maxAttempts;
      task.at = now + policy.leaseMs;
      task.flags = solo ? "a" : "";
      return { id, attempt: task.attempts, token: this.token(task), rank: task.rank, leaseDeadlineMs: task.at, solo };
    });
  }

  /** The fence every settle/extend/release applies: the status, and the task when it may proceed. */
  private fenced(id: string, token: string, replayOf?: "retry" | "fail"): { status: string; task?: ModelTask } {
    const task = this.tasks.get(id);
    if (!task) return { status: STATUS.unknown };
    if (task.state === "D") return { status: STATUS.done };
    // A retry or fail repeated with the token of the lease it settled (reclaim and release revoke
    // tokens) answers ok and changes nothing.
    const replayStates = replayOf === "retry" ? "SRF" : replayOf === "fail" ? "F" : "";
    if (this.token(task) === token && replayStates.includes(task.state)) return { status: STATUS.ok };
    if (task.state !== "L" || this.token(task) !== token) return { status: STATUS.stale };
    return { status: STATUS.ok, task };
  }

  settle(
    items: Array<{ id: string; token: string; outcome: "ack" | "retry" | "fail"; retryAtMs?: number; error?: string }>,
    now: number,
  ) {
    let hold: number | undefined;
    let holdId: string | undefined;
    const results = items.map((item) => {
      const { status, task } = this.fenced(item.id, item.token, item.outcome === "ack" ? undefined : item.outcome);
      if (task) {
        task.at = now;
        task.flags = "";
        if (item.outcome === "ack") {
          task.state = "D";
          task.error = "";
          task.payload = "";
        } else {
          task.error = item.error ?? "";
          const retryAt = item.retryAtMs ?? 0;
          if (item.outcome === "fail" || task.attempts >= task.maxAttempts) task.state = "F";
          else if (retryAt > now && !this.options.ordered) {
            task.state = "S";
            task.at = retryAt;
          } else {
            // An ordered queue keeps the task at the head (READY, rank kept) and holds every claim.
            task.state = "R";
            if (this.options.ordered && retryAt > now && retryAt > (hold ?? 0)) {
              hold = retryAt;
              holdId = item.id;
            }
          }
        }
      }
      return { status, state: stateName(this.tasks.get(item.id)?.state) };
    });
    if (hold !== undefined) {
      this.hold = hold;
      this.holdId = holdId;
    }
    return results;
  }

  extend(items: Array<{ id: string; token: string; leaseMs: number }>, now: number) {
    return items.map((item) => {
      const { status, task } = this.fenced(item.id, item.token);
      if (task) {
        task.at = now + item.leaseMs;
        // Confirmed: its holder runs it, so a reclaim now charges its attempt.
        if (!task.flags.includes("r")) task.flags += "r";
      }
      return { status, leaseDeadlineMs: task ? task.at : undefined };
    });
  }

  release(items: Array<{ id: string; token: string }>, now: number) {
    return items.map((item) => {
      const { status, task } = this.fenced(item.id, item.token);
      if (task) {
        task.at = now;
        // The attempt goes back unless the lease was confirmed (its handler ran): a confirmed run
        // that was the last attempt ends FAILED, as a reclaim would end it.
        const started = task.flags.includes("r");
        if (!started) task.attempts--;
        task.claims++; // a release revokes the token
        task.flags = "";
        if (started && task.attempts >= task.maxAttempts) {
          task.state = "F";
          task.error = `released after attempt ${task.attempts} of ${task.maxAttempts}`;
        } else {
          task.state = "R";
        }
      }
      return { status };
    });
  }

  /**
   * Expired leases (deadline < now - skew), each a stall: a lease never confirmed (no extend) gives
   * its attempt back; FAILED when a confirmed run was the last attempt or at maxStalls, else READY,
   * run alone from its second stall.
   */
  reclaim(now: number, skewMs: number) {
    const reclaimed: string[] = [];
    const failed: string[] = [];
    const maxStalls = this.options.maxStalls ?? 3;
    for (const [id, task] of this.tasks) {
      if (task.state !== "L" || task.at >= now - skewMs) continue;
      task.claims++; // a reclaim revokes the token
      task.stalls++;
      const started = task.flags.includes("r");
      if (!started) task.attempts--;
      if ((started && task.attempts >= task.maxAttempts) || task.stalls >= maxStalls) {
        task.state = "F";
        task.flags = "";
        task.error =
          started && task.attempts >= task.maxAttempts
            ? `lease expired after attempt ${task.attempts} of ${task.maxAttempts}`
            : `stalled ${task.stalls} times (the lease ran out while held: its worker stopped), at most ${maxStalls}`;
        failed.push(id);
      } else {
        task.state = "R";
        task.flags = task.stalls >= 2 ? "s" : "";
        reclaimed.push(id);
      }
      task.at = now;
    }
    return { reclaimed, failed };
  }

  /** The hold ends: its task left (or is READY no more). */
  forgetHold() {
    this.hold = undefined;
    this.holdId = undefined;
  }

  requeue(ids: string[], now: number) {
    const requeued = new Set<string>();
    const results = ids.map((id) => {
      const task = this.tasks.get(id);
      if (!task) return { status: STATUS.unknown };
      if (task.state === "D") return { status: STATUS.done };
      // Only a requeue leaves a READY task with no attempts and an error: a repeat answers ok.
      if (task.state === "R" && task.attempts === 0 && task.error !== "") return { status: STATUS.ok };
      if (task.state !== "F") return { status: "not_failed" };
      task.state = "R";
      task.at = now;
      task.attempts = 0;
      task.stalls = 0;
      task.flags = "";
      requeued.add(id);
      return { status: STATUS.ok };
    });
    if (this.holdId !== undefined && requeued.has(this.holdId)) this.forgetHold();
    return results;
  }

  /** Pause or resume the queue (`type` undefined) or one type; whether it changed anything. */
  pause(action: "pause" | "resume", type: string | undefined): boolean {
    if (type === undefined) {
      const changed = this.paused !== (action === "pause");
      this.paused = action === "pause";
      return changed;
    }
    const changed = this.pausedTypes.has(type) !== (action === "pause");
    if (action === "pause") this.pausedTypes.add(type);
    else this.pausedTypes.delete(type);
    return changed;
  }

  /** READY, SCHEDULED and LEASED tasks end FAILED "cancelled", the lease revoked. */
  cancel(ids: string[], now: number) {
    const seen = new Set<string>();
    return ids.map((id) => {
      const task = this.tasks.get(id);
      if (!task) return { status: STATUS.unknown };
      if (task.state === "D") return { status: STATUS.done };
      if (task.state === "F" || seen.has(id)) return { status: "already_failed" };
      seen.add(id);
      if (id === this.holdId) this.forgetHold();
      // A lease never confirmed: its handler may never have started, so no attempt is charged.
      if (task.state === "L" && !task.flags.includes("r")) task.attempts--;
      task.state = "F";
      task.claims++;
      task.at = now;
      task.flags = "";
      task.error = "cancelled";
      return { status: STATUS.ok };
    });
  }

  /** Deletes tasks, records included; a LEASED one is refused. An id named twice answers twice alike. */
  delete(ids: string[]) {
    const results = ids.map((id) => {
      const task = this.tasks.get(id);
      if (!task) return { status: STATUS.unknown };
      if (task.state === "L") return { status: "leased" };
      return { status: STATUS.ok };
    });
    ids.forEach((id, i) => {
      if (results[i].status === STATUS.ok) {
        this.tasks.delete(id);
        if (id === this.holdId) this.forgetHold();
      }
    });
    return results;
  }

  /** The FAILED tasks of `type` whose error contains `error` (either may be undefined), by id. */
  failedMatching(type: string | undefined, error: string | undefined): string[] {
    return [...this.tasks]
      .filter(([, task]) => task.state === "F" && (type === undefined || task.type === type))
      .filter(([, task]) => error === undefined || task.error.includes(error))
      .map(([id]) => id)
      .sort();
  }

  /** Deletes DONE/FAILED tasks finished before now - retention. */
  trim(now: number) {
    let done = 0;
    let failed = 0;
    for (const [id, task] of this.tasks) {
      if (task.state === "D" && task.at < now - this.options.doneRetentionMs) {
        this.tasks.delete(id);
        done++;
      } else if (task.state === "F" && task.at < now - this.options.failedRetentionMs) {
        this.tasks.delete(id);
        failed++;
      }
    }
    return { done, failed };
  }
}
