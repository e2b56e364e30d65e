// Schedules (docs/schedules.md): what a definition may say, and the slot times it gives. A slot is
// computed here, never in Lua: cron with time zones and DST is croner's work (no dependencies,
// IANA zones through Intl, maintained, and it runs a slot that DST skips once, at the first valid
// time after it, and one that DST repeats once). The plan script (lua/plan.lua) makes each slot a
// task, once, by its cursor; this module only says which slots there are.
//
// croner is loaded on demand (loadCron): a worker of a queue without schedules never loads it, so
// the Lambda bundles' cold start stays small. Until it is loaded, checkSchedule checks a cron
// expression's shape only; the construct (at synth) and schedules.set (at run time) load it first.
import { createHash } from "node:crypto";
import type { Cron } from "croner";
import { DEFAULTS, LIMITS, NAME_CHARACTERS, NAME_PATTERN, SINGLETON_GROUP_PREFIX } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { checkGroup, checkInteger, checkName, serializePayload, shown } from "./validate.js";

/** What to do with the slots a schedule missed (no planner ran near their time: an outage). */
export type CatchUp = "none" | "latest" | { max: number };

/** A schedule: when (`cron` with `tz`, or `every`), what (a task of `type` with `payload`), and its policies. */
export interface ScheduleDefinition {
  /** A cron expression: 5 fields (minute first) or 6 (seconds first); croner's syntax. */
  cron?: string;
  /** The IANA time zone `cron` is read in (default UTC). */
  tz?: string;
  /** Or a fixed period in ms (at least 1000): slots at the multiples of it since the epoch. */
  every?: number;
  /** The task type each slot runs. */
  type: string;
  payload?: unknown;
  priority?: number;
  group?: string;
  /** Missed slots after an outage: none, the latest only (default), or the latest `max`. */
  catchUp?: CatchUp;
  /** "skip": a slot falling due while the previous slot's task still waits or runs is passed over. */
  overlap?: "allow" | "skip";
  /** Each slot's task runs up to this many ms after the slot (the same delay every time for a slot). */
  jitterMs?: number;
}

export const SCHEDULE_LIMITS = {
  nameMaxBytes: LIMITS.scheduleNameMaxBytes,
  everyMinMs: 1_000,
  slotsPerPlan: LIMITS.scheduleSlotsMax,
  catchUpMax: 100,
  jitterMaxMs: 3_600_000,
} as const;

const DEFINITION_FIELDS = [
  "cron",
  "tz",
  "every",
  "type",
  "payload",
  "priority",
  "group",
  "catchUp",
  "overlap",
  "jitterMs",
] as const;

/** A schedule's name, checked: 1-64 characters of A-Z a-z 0-9 _ . - (no `@` or `:`: they end it in its tasks' ids). */
export function checkScheduleName(where: string, name: unknown): string {
  return checkName(where, "schedule name", name, SCHEDULE_LIMITS.nameMaxBytes);
}

/**
 * Checks a definition and answers it in its canonical form (the fields in one order, defaults
 * left out); throws one InvalidInputError naming every problem, what was given and what is allowed.
 */
export function checkSchedule(where: string, name: string, given: unknown): ScheduleDefinition {
  const at = `${where}: schedule "${name}"`;
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    throw new InvalidInputError(`${at} must be an object {cron | every, type, ...}, got ${shown(given)}`);
  }
  const definition = given as Record<string, unknown>;
  const problems: string[] = [];
  const unknown = Object.keys(definition).filter((key) => !(DEFINITION_FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) {
    problems.push(
      `unknown field ${unknown.map((key) => shown(key)).join(", ")}; allowed: ${DEFINITION_FIELDS.join(", ")}`,
    );
  }
  const attempt = (check: () => void) => {
    try {
      check();
    } catch (error) {
      problems.push((error as Error).message.replace(`${at}: `, ""));
    }
  };
  const { cron, tz, every } = definition;
  if ((cron === undefined) === (every === undefined)) {
    problems.push("give exactly one of cron (a cron expression) and every (ms)");
  }
  if (cron !== undefined) {
    if (typeof cron !== "string" || cron.length > 200)
      problems.push(`cron must be a cron expression, got ${shown(cron)}`);
    else
      attempt(() => {
        try {
          if (CronClass) {
            // A zone that does not exist is its own problem (below), not the expression's.
            const timezone = typeof tz === "string" && validZone(tz) ? tz : undefined;
            new CronClass(cron, { timezone, paused: true }).nextRun(new Date(0));
          } else if (!/^\S+( \S+){4,5}$/.test(cron.trim())) {
            throw new Error("a cron expression has 5 fields (minute hour day month weekday), or 6 with seconds first");
          }
        } catch (error) {
          throw new Error(`cron ${shown(cron)} is not valid: ${(error as Error).message.split(". ")[0]}`);
        }
      });
  }
  if (tz !== undefined) {
    if (cron === undefined) problems.push("tz applies to cron only");
    else if (typeof tz !== "string" || !validZone(tz)) {
      problems.push(`tz must be an IANA time zone (for example "Europe/Berlin"), got ${shown(tz)}`);
    }
  }
  if (every !== undefined) {
    attempt(() => checkInteger(at, "every", every, SCHEDULE_LIMITS.everyMinMs, 366 * 86_400_000));
  }
  attempt(() => checkName(at, "type", definition.type, LIMITS.typeMaxBytes));
  if (definition.payload !== undefined)
    attempt(() => serializePayload(at, definition.payload, DEFAULTS.maxPayloadBytes));
  if (definition.priority !== undefined) {
    attempt(() => checkInteger(at, "priority", definition.priority, LIMITS.priorityMin, LIMITS.priorityMax));
  }
  if (definition.group !== undefined) {
    attempt(() => {
      const group = checkGroup(at, "group", definition.group);
      // A singleton's lane (docs/flow-control.md): only an enqueue with singleton: { key } runs in one.
      if (group.startsWith(SINGLETON_GROUP_PREFIX)) {
        throw new Error(
          `group must not start with "${SINGLETON_GROUP_PREFIX}" (a singleton's lane), got ${shown(group)}`,
        );
      }
    });
  }
  const catchUp = definition.catchUp;
  if (
    catchUp !== undefined &&
    catchUp !== "none" &&
    catchUp !== "latest" &&
    !(
      typeof catchUp === "object" &&
      catchUp !== null &&
      Object.keys(catchUp).join() === "max" &&
      Number.isInteger((catchUp as { max: unknown }).max) &&
      (catchUp as { max: number }).max >= 1 &&
      (catchUp as { max: number }).max <= SCHEDULE_LIMITS.catchUpMax
    )
  ) {
    problems.push(
      `catchUp must be "none", "latest" or { max: 1-${SCHEDULE_LIMITS.catchUpMax} }, got ${shown(catchUp)}`,
    );
  }
  if (definition.overlap !== undefined && definition.overlap !== "allow" && definition.overlap !== "skip") {
    problems.push(`overlap must be "allow" or "skip", got ${shown(definition.overlap)}`);
  }
  if (definition.jitterMs !== undefined) {
    attempt(() => checkInteger(at, "jitterMs", definition.jitterMs, 0, SCHEDULE_LIMITS.jitterMaxMs));
  }
  if (problems.length > 0) {
    throw new InvalidInputError(
      `${at}: ${problems.length} problem${problems.length === 1 ? "" : "s"}: ${problems.join("; ")}`,
    );
  }
  const canonical: Record<string, unknown> = {};
  for (const field of DEFINITION_FIELDS) if (definition[field] !== undefined) canonical[field] = definition[field];
  if (canonical.tz === "UTC") delete canonical.tz;
  if (canonical.catchUp === "latest") delete canonical.catchUp;
  if (canonical.overlap === "allow") delete canonical.overlap;
  if (canonical.jitterMs === 0) delete canonical.jitterMs;
  if (canonical.priority === 0) delete canonical.priority;
  return canonical as unknown as ScheduleDefinition;
}

function validZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The revision of a canonical definition: what a plan call compares, so it never plans from an old one. */
export function scheduleRevision(definition: ScheduleDefinition): string {
  return createHash("sha256").update(JSON.stringify(definition)).digest("hex").slice(0, 32);
}

/** The id of a slot's task: `<schedule>@<the slot's time, ISO 8601 in UTC>`. */
export function slotId(name: string, slotMs: number): string {
  return `${name}@${new Date(slotMs).toISOString()}`;
}

/**
 * Whether `id` has the form slotId gives, `<schedule>@YYYY-MM-DDTHH:mm:ss.sssZ`: a schedule's slot
 * (or a task sent with an id of that form). Its runs link to the planner's context rather than
 * continue it (docs/lambda.md#tracing).
 */
export function isSlotId(id: string): boolean {
  return SLOT_ID.test(id);
}

const SLOT_ID = /^[A-Za-z0-9_.-]{1,64}@\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The slot time of a task id `<schedule>@<ISO time>` of `name`, or undefined. */
export function slotOf(name: string, id: string): number | undefined {
  if (!id.startsWith(`${name}@`)) return undefined;
  const ms = Date.parse(id.slice(name.length + 1));
  return Number.isNaN(ms) ? undefined : ms;
}

/** A slot's jitter: from a digest of the schedule's name and the slot, so every planner picks the same. */
export function jitterOf(name: string, slotMs: number, jitterMs: number | undefined): number {
  if (!jitterMs) return 0;
  const digest = createHash("sha256").update(`${name}@${slotMs}`).digest();
  return digest.readUInt32BE(0) % (jitterMs + 1);
}

/** The slots of `definition` after `afterMs` up to `untilMs` (both in ms), at most `max` of them. */
export function slotsBetween(definition: ScheduleDefinition, afterMs: number, untilMs: number, max: number): number[] {
  const slots: number[] = [];
  if (definition.every !== undefined) {
    const every = definition.every;
    for (let slot = (Math.floor(afterMs / every) + 1) * every; slot <= untilMs && slots.length < max; slot += every) {
      slots.push(slot);
    }
    return slots;
  }
  const cron = cronOf(definition);
  let at = new Date(afterMs);
  while (slots.length < max) {
    const next = cron.nextRun(at);
    if (!next || next.getTime() > untilMs) break;
    slots.push(next.getTime());
    at = next;
  }
  return slots;
}

/** The first slot of `definition` after `afterMs`, or undefined when there is none. */
export function nextSlot(definition: ScheduleDefinition, afterMs: number): number | undefined {
  return slotsBetween(definition, afterMs, Number.MAX_SAFE_INTEGER, 1)[0];
}

/**
 * The latest `count` slots of `definition` after `afterMs` and up to `untilMs`: the catch-up of an
 * outage, found without walking every slot it missed (a schedule every second down for a day).
 */
export function latestSlots(definition: ScheduleDefinition, afterMs: number, untilMs: number, count: number): number[] {
  if (untilMs <= afterMs || count < 1) return [];
  if (definition.every !== undefined) {
    const every = definition.every;
    const last = Math.floor(untilMs / every) * every;
    const slots: number[] = [];
    for (let slot = last; slot > afterMs && slots.length < count; slot -= every) slots.unshift(slot);
    return slots;
  }
  const cron = cronOf(definition);
  // croner's previousRuns walks back from a reference time by whole seconds: start a second later.
  const previous = cron.previousRuns(count + 1, new Date(untilMs + 1_000));
  return previous
    .map((date) => date.getTime())
    .filter((slot) => slot > afterMs && slot <= untilMs)
    .sort((a, b) => a - b)
    .slice(-count);
}

let CronClass: typeof Cron | undefined;

/** Registers croner's Cron (a caller that imports it statically: the construct). */
export function registerCron(cron: typeof Cron): void {
  CronClass = cron;
}

/** Loads croner, once: every function here that reads a cron expression needs it first. */
export async function loadCron(): Promise<void> {
  CronClass ??= (await import("croner")).Cron;
}

const crons = new Map<string, Cron>();
function cronOf(definition: ScheduleDefinition): Cron {
  if (!CronClass) throw new Error("leaseq: croner is not loaded (await loadCron() first)");
  const key = `${definition.tz ?? "UTC"} ${definition.cron}`;
  let cron = crons.get(key);
  if (!cron) {
    cron = new CronClass(definition.cron as string, { timezone: definition.tz ?? "UTC", paused: true });
    if (crons.size > 10_000) crons.clear();
    crons.set(key, cron);
  }
  return cron;
}

/**
 * What a planner does with the slots after `cursor` up to `until` (now + its horizon): the slots to
 * make, and where the cursor goes. Slots more than `graceMs` before `now` were missed (no planner
 * ran near their time); `catchUp` keeps none, the latest, or the latest `max` of them. The rest are
 * made, at most SCHEDULE_LIMITS.slotsPerPlan per call: the cursor then stops at the last one made,
 * and the schedule is planned again at once.
 */
export function planSlots(
  definition: ScheduleDefinition,
  cursor: number,
  now: number,
  until: number,
  graceMs: number,
): { slots: number[]; passedOver: number; cursor: number; next: number | undefined } {
  const missedUntil = now - graceMs;
  let slots: number[] = [];
  let passedOver = 0;
  let from = cursor;
  if (cursor < missedUntil) {
    const keep =
      definition.catchUp === "none" ? 0 : typeof definition.catchUp === "object" ? definition.catchUp.max : 1;
    const kept = latestSlots(definition, cursor, missedUntil - 1, keep);
    // How many were passed over is counted up to a bound (a day of seconds is not walked).
    const all = slotsBetween(definition, cursor, missedUntil - 1, 10_000).length;
    passedOver = Math.max(0, all - kept.length);
    slots = kept;
    from = missedUntil - 1;
  }
  const room = SCHEDULE_LIMITS.slotsPerPlan - slots.length;
  const ahead = slotsBetween(definition, from, until, room + 1);
  const full = ahead.length > room;
  slots = slots.concat(ahead.slice(0, room));
  const last = full ? (slots.at(-1) as number) : Math.max(from, until);
  return { slots, passedOver, cursor: last, next: nextSlot(definition, last) };
}

/** A schedule name is kept to NAME_PATTERN; this says so where a CLI or body gives one. */
export const SCHEDULE_NAME_RULE = `1-${SCHEDULE_LIMITS.nameMaxBytes} characters of ${NAME_CHARACTERS}`;
export const isScheduleName = (name: string): boolean =>
  name.length >= 1 && name.length <= SCHEDULE_LIMITS.nameMaxBytes && NAME_PATTERN.test(name);
