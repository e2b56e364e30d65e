// The queue's schedules (docs/schedules.md), `queue.schedules`: set, remove, pause, resume, run now,
// list, and the planner the reclaimer runs. Each is one script call (a plan is one per page of due
// schedules); slots are computed here with croner and made into tasks by lua/plan.lua, once each.
import { DEPLOYMENT_PATTERN, DEPLOYMENT_RULE } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { readReply } from "./protocol/index.js";
import { optionalTime, type QueueContext } from "./queue-context.js";
import type { PlanOptions, PlanResult } from "./schedule-plan.js";
import {
  checkSchedule,
  checkScheduleName,
  loadCron,
  nextSlot,
  type ScheduleDefinition,
  scheduleRevision,
  slotOf,
  slotsBetween,
} from "./schedules.js";
import { type EnqueueResult, STATE_BY_LETTER, type TaskInput, type TaskState, type WakeTo } from "./types.js";
import { checkNow } from "./validate.js";

export type { PlanOptions, PlanResult } from "./schedule-plan.js";

/** One schedule as `schedules.list` answers it. */
export interface ScheduleInfo {
  name: string;
  definition: ScheduleDefinition;
  paused: boolean;
  /** Set by a task declaration (a deploy owns it), not at run time. */
  declared: boolean;
  /**
   * The deployment whose declaration set it (only its cold starts change or remove it), `"1"` for
   * one declared before owners were kept; undefined for a run-time schedule.
   */
  owner: string | undefined;
  /** Every slot up to this time (ms) is made into a task or passed over. */
  cursorMs: number;
  /** The first slot after the cursor: the next one to be made (undefined: none, or paused). */
  nextSlotMs: number | undefined;
  /** The task of the last slot made, and its state (undefined once it is trimmed or deleted). */
  lastTaskId: string | undefined;
  lastSlotMs: number | undefined;
  lastTaskState: TaskState | undefined;
  /** Slots made into tasks, and slots passed over (missed and not caught up, or skipped by overlap), in all. */
  made: number;
  passedOver: number;
  /**
   * Why the planner set it aside (its cron cannot be computed, its definition no longer reads): no
   * slot is made until a `schedules.set` changes it. Undefined when it is planned.
   */
  aside: string | undefined;
}

/** What one planner run did. */

/** How the schedules add a task run now: the queue's own enqueue, which admits every task alike. */
export type EnqueueAndWake = (
  tasks: TaskInput[],
  options: { now: number },
) => Promise<{ results: EnqueueResult[]; wakeAtMs: number | undefined; wakeTo: WakeTo[] }>;

/** The schedules of one queue, `queue.schedules`. */
export class QueueSchedules {
  constructor(
    private readonly context: QueueContext,
    private readonly enqueueAndWake: EnqueueAndWake,
  ) {}

  /**
   * Sets a schedule. A new one's first slot is its first after `now`; a changed one keeps its
   * cursor: its slots already made (up to the planning horizon ahead) stay, and the new definition
   * gives every slot after them. `owner` is the deployment whose task declaration sets it (a cold
   * start): a run-time caller (no owner) may not change a declared schedule, nor a deployment another
   * deployment's.
   */
  async set(
    name: string,
    definition: ScheduleDefinition,
    options: { now: number; owner?: string },
  ): Promise<{ status: "set" | "unchanged"; cursorMs: number }> {
    const where = "schedules.set";
    const now = checkNow(where, options.now);
    checkScheduleName(where, name);
    const owner = checkOwner(where, options.owner);
    await loadCron();
    const canonical = checkSchedule(where, name, definition);
    const reply = await this.context.run("schedule", {
      now: String(now),
      action: "set",
      name,
      revision: scheduleRevision(canonical),
      definition: JSON.stringify(canonical),
      owner,
    });
    const { status, cursor, owner: holder } = readReply("schedule", reply);
    if (Number(status) === 4) {
      throw new InvalidInputError(
        `${where}: schedule "${name}" is declared in the task module of deployment "${holder}" (defineTasks schedules): change it there and deploy, or pause it`,
      );
    }
    if (Number(status) === 5) {
      throw new ScheduleOwnedError(name, String(holder), owner);
    }
    return { status: Number(status) === 1 ? "unchanged" : "set", cursorMs: Number(cursor) };
  }

  /** Removes a schedule (its tasks already made stay); "unknown" when there is none of that name. */
  remove(name: string, options: { now: number }): Promise<"done" | "unchanged" | "unknown"> {
    return this.control("remove", name, options);
  }

  /** Pauses a schedule: no slot is made while paused. */
  pause(name: string, options: { now: number }): Promise<"done" | "unchanged" | "unknown"> {
    return this.control("pause", name, options);
  }

  /** Resumes a paused schedule from `now`: the slots of the pause are passed over. */
  async resume(name: string, options: { now: number }): Promise<"done" | "unchanged" | "unknown"> {
    // The slots of the pause are passed over and counted in `passedOver`.
    const paused = (await this.list()).find((info) => info.name === name && info.paused);
    let passed = 0;
    if (paused && paused.aside === undefined) {
      try {
        passed = slotsBetween(
          paused.definition,
          paused.cursorMs,
          checkNow("schedules.resume", options.now),
          10_000,
        ).length;
      } catch {
        passed = 0; // a definition the planner cannot compute: it is set aside at its next plan
      }
    }
    return this.control("resume", name, options, passed > 0 ? String(passed) : "");
  }

  private async control(
    action: "remove" | "pause" | "resume",
    name: string,
    options: { now: number },
    definition = "",
  ): Promise<"done" | "unchanged" | "unknown"> {
    const where = `schedules.${action}`;
    const now = checkNow(where, options.now);
    checkScheduleName(where, name);
    const reply = await this.context.run("schedule", {
      now: String(now),
      action,
      name,
      revision: "",
      definition,
      owner: "",
    });
    const status = Number(readReply("schedule", reply).status);
    return status === 0 ? "done" : status === 1 ? "unchanged" : "unknown";
  }

  /**
   * Enqueues one task of the schedule now, outside its slots (id `<name>@run-<ISO time>`); resolves
   * to its id and the wake-up to send, or undefined when there is no schedule of that name.
   */
  async runNow(
    name: string,
    options: { now: number },
  ): Promise<{ id: string; wakeAtMs: number | undefined; wakeTo: WakeTo[] } | undefined> {
    const now = checkNow("schedules.runNow", options.now);
    checkScheduleName("schedules.runNow", name);
    const schedule = (await this.list()).find((info) => info.name === name);
    if (!schedule) return undefined;
    const { type, payload, priority, group } = schedule.definition;
    const id = `${name}@run-${new Date(now).toISOString()}`;
    const { wakeAtMs, wakeTo } = await this.enqueueAndWake([{ id, type, payload, priority, group }], { now });
    return { id, wakeAtMs, wakeTo };
  }

  /**
   * Makes the schedules deployment `owner` declares those of `declared` (its task declaration's, at
   * the worker's cold start): each is set (nothing is written for one unchanged), and one `owner`
   * declared before and no longer does is retired (removed; the same owner setting it again within
   * a day takes it back at its cursor). Another deployment's schedules and run-time ones are left
   * alone; a name another deployment declares is not taken over (`refused`).
   */
  async syncDeclared(
    declared: Readonly<Record<string, ScheduleDefinition>>,
    options: { now: number; owner: string },
  ): Promise<{ set: string[]; removed: string[]; refused: Array<{ name: string; owner: string }> }> {
    const where = "schedules.syncDeclared";
    const now = checkNow(where, options.now);
    const owner = checkOwner(where, options.owner);
    if (owner === "") throw new InvalidInputError(`${where}: owner must name the deployment`);
    const set: string[] = [];
    const removed: string[] = [];
    const refused: Array<{ name: string; owner: string }> = [];
    for (const [name, definition] of Object.entries(declared)) {
      try {
        const { status } = await this.set(name, definition, { now, owner });
        if (status === "set") set.push(name);
      } catch (error) {
        if (!(error instanceof ScheduleOwnedError)) throw error;
        refused.push({ name, owner: error.owner });
      }
    }
    for (const schedule of await this.list()) {
      if (schedule.name in declared || (schedule.owner !== owner && schedule.owner !== "1")) continue;
      const reply = await this.context.run("schedule", {
        now: String(now),
        action: "retire",
        name: schedule.name,
        revision: "",
        definition: "",
        owner,
      });
      if (Number(readReply("schedule", reply).status) === 0) removed.push(schedule.name);
    }
    return { set, removed, refused };
  }

  /** Every schedule, in the order of its next planning (paused ones last). */
  async list(): Promise<ScheduleInfo[]> {
    await loadCron();
    const found: ScheduleInfo[] = [];
    for (let offset = 0; ; offset += 1000) {
      const page = await this.readSchedules({ all: true, offset, count: 1000, until: 0 });
      found.push(...page.map((row) => scheduleInfo(row)));
      if (page.length < 1000) return found;
    }
  }

  private async readSchedules(options: { all: boolean; offset: number; count: number; until: number }) {
    return (await this.readSchedulesAndClock(options)).schedules;
  }

  /** A page of schedules, and the store's clock (undefined when the queue trusts its callers' clocks). */
  /** @internal The schedules due by `until` (or all), a page, and the store's clock: what the planner reads. */
  async readSchedulesAndClock(options: { all: boolean; offset: number; count: number; until: number }) {
    const reply = await this.context.run("schedules", {
      until: String(options.until),
      all: options.all ? "1" : "0",
      offset: String(options.offset),
      count: String(options.count),
    });
    const { time, rows } = readReply("schedules", reply);
    const schedules = rows.map((row) => ({
      name: String(row.name),
      definition: String(row.definition),
      revision: String(row.revision),
      cursor: String(row.cursor),
      next: Number(row.next),
      paused: String(row.paused) === "1",
      owner: String(row.owner),
      lastId: String(row.lastId),
      lastState: String(row.lastState),
      made: Number(row.made),
      passedOver: Number(row.passedOver),
      aside: String(row.aside ?? ""),
    }));
    return { schedules, storeTime: optionalTime(time) };
  }

  /** Sets schedule `name` aside with why (the planner could not compute it at `revision`). */
  /** @internal */
  async setAside(name: string, revision: string, now: number, error: unknown): Promise<void> {
    const reason = error instanceof Error ? error.message : String(error);
    await this.context.run("schedule", {
      now: String(now),
      action: "aside",
      name,
      revision,
      definition: reason.slice(0, 500),
      owner: "",
    });
  }

  /**
   * The planner (the reclaimer runs it before each tick): makes every slot falling within
   * `horizonMs` of `now` into a SCHEDULED task, once, for every schedule due for planning. Slots
   * more than `graceMs` (default: the horizon) before `now` were missed; each schedule's catch-up
   * policy says which of them are made. Safe to run from several processes at once. Resolves to
   * what it did, and the wake-up to send for the first slot made (`wakeAtMs`). Its code loads at
   * its first call (shared/schedule-plan.ts): the worker never plans.
   */
  async plan(options: PlanOptions): Promise<PlanResult> {
    const { planSchedules } = await import("./schedule-plan.js");
    return planSchedules(
      this.context,
      (read) => this.readSchedulesAndClock(read),
      (...args) => this.setAside(...args),
      options,
    );
  }
}

function scheduleInfo(row: {
  name: string;
  definition: string;
  cursor: string;
  paused: boolean;
  owner: string;
  lastId: string;
  lastState: string;
  made: number;
  passedOver: number;
  aside: string;
}): ScheduleInfo {
  let definition: ScheduleDefinition;
  try {
    definition = JSON.parse(row.definition) as ScheduleDefinition;
  } catch {
    definition = { type: "" };
  }
  const cursorMs = Number(row.cursor);
  const lastTaskId = row.lastId === "" ? undefined : row.lastId;
  return {
    name: row.name,
    definition,
    paused: row.paused,
    declared: row.owner !== "",
    owner: row.owner === "" ? undefined : row.owner,
    cursorMs,
    nextSlotMs:
      row.paused || row.aside !== "" || definition.type === "" ? undefined : nextSlotOrNone(definition, cursorMs),
    lastTaskId,
    lastSlotMs: lastTaskId ? slotOf(row.name, lastTaskId) : undefined,
    lastTaskState: row.lastState === "" ? undefined : STATE_BY_LETTER[row.lastState],
    made: row.made,
    passedOver: row.passedOver,
    aside: row.aside === "" ? undefined : row.aside,
  };
}

/** The next slot, or undefined when croner cannot compute it (the planner sets such a schedule aside). */
function nextSlotOrNone(definition: ScheduleDefinition, cursorMs: number): number | undefined {
  try {
    return nextSlot(definition, cursorMs);
  } catch {
    return undefined;
  }
}

/** A schedule another deployment declares: a deployment does not take it over. */
export class ScheduleOwnedError extends InvalidInputError {
  constructor(
    readonly schedule: string,
    readonly owner: string,
    caller: string,
  ) {
    super(
      `schedules.set: schedule "${schedule}" is declared by deployment "${owner}"; deployment "${caller}" does not take it over (rename one of them, or remove it from "${owner}"'s declaration and deploy)`,
    );
  }
}

/** A deployment's name as a schedule's owner: "" (a run-time caller) or DEPLOYMENT_PATTERN. */
function checkOwner(where: string, owner: string | undefined): string {
  if (owner === undefined || owner === "") return "";
  if (typeof owner !== "string" || !DEPLOYMENT_PATTERN.test(owner)) {
    throw new InvalidInputError(
      `${where}: owner must be ${DEPLOYMENT_RULE}, the deployment's name; got ${JSON.stringify(owner).slice(0, 80)}`,
    );
  }
  return owner;
}
