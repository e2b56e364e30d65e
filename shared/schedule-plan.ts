// The schedules' planner (QueueSchedules.plan, docs/schedules.md), loaded at its first call: the
// reclaimer runs it when a schedule is due; the worker never does.
import { DEFAULTS, LIMITS, WAKE } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { itemArgs, readReply } from "./protocol/index.js";
import { callId, mergeWakeTo, type QueueContext, readWakeUps } from "./queue-context.js";
import { buildBody } from "./records.js";
import { checkSchedule, jitterOf, loadCron, planSlots, type ScheduleDefinition, slotId } from "./schedules.js";
import { activeTraceparent } from "./tracing.js";
import type { WakeTo } from "./types.js";
import { checkInteger, checkNow, serializePayload } from "./validate.js";

/** Schedules read per page of the planner. */
const READ_PAGE = 100;
/** Slots one plan call carries at most, whatever the number of schedules: keeps a call to a few ms. */
const SLOTS_PER_CALL = 50;
/** When a schedule has no slot left (a cron that never fires again): planned never. */
const NEVER = LIMITS.timeMaxMs;

/** What the planner is told: see QueueSchedules.plan. */
export interface PlanOptions {
  now: number;
  horizonMs: number;
  /** Wake-ups for slots made within this long (default: the horizon, at most 15 minutes); 0: none. */
  wakeHorizonMs?: number;
  graceMs?: number;
  maxCalls?: number;
}

/** What a plan did (QueueSchedules.plan). */
export interface PlanResult {
  /** Schedules planned (their cursor moved). */
  planned: number;
  /** Tasks made, one per slot. */
  made: number;
  /** Plans another planner or a change came first to: nothing written for them. */
  stale: number;
  /** Slots missed and not caught up by the catch-up policy. */
  passedOver: number;
  /** Schedules it could not compute, set aside (each named in `schedules.list` with why). */
  setAside: number;
  /** Script calls made. */
  calls: number;
  /** The wake-up to send for the first slot made (within the horizon, none arranged yet), or undefined. */
  wakeAtMs: number | undefined;
  /** Wake-ups for other deployments' wake queues (a shared queue: docs/wake-ups.md). */
  wakeTo: WakeTo[];
}

/** A page of schedules due by `until` (or all), and the store's clock: QueueSchedules.readSchedulesAndClock. */
type ReadSchedules = (options: { all: boolean; offset: number; count: number; until: number }) => Promise<{
  schedules: Array<{ name: string; definition: string; revision: string; cursor: string }>;
  storeTime: number | undefined;
}>;

/** QueueSchedules.plan: the queue's context, and the schedules' reads and set-asides it plans with. */
export async function planSchedules(
  context: QueueContext,
  readSchedulesAndClock: ReadSchedules,
  setAside: (name: string, revision: string, now: number, error: unknown) => Promise<void>,
  options: PlanOptions,
): Promise<PlanResult> {
  const where = "schedules.plan";
  const now = checkNow(where, options.now);
  const horizon = checkInteger(where, "horizonMs", options.horizonMs, 0, 86_400_000);
  const grace = checkInteger(where, "graceMs", options.graceMs ?? horizon, 0, 86_400_000);
  const maxCalls = options.maxCalls ?? 1000;
  await loadCron();
  // The slots' tasks store the planner's context, when it runs in a trace: their runs link to it
  // (docs/lambda.md#tracing).
  const trace = await activeTraceparent();
  const until = now + horizon;
  const result: PlanResult = {
    planned: 0,
    made: 0,
    stale: 0,
    passedOver: 0,
    setAside: 0,
    calls: 0,
    wakeAtMs: undefined,
    wakeTo: [],
  };
  const wakeHorizon = Math.min(options.wakeHorizonMs ?? horizon, WAKE.horizonMaxMs);
  let staleRounds = 0;
  // The time the plan is made at: the caller's, but never past the store's own clock. Passing a
  // slot over cannot be undone, so a planner whose clock runs ahead plans as if it were the store's
  // time (plan.lua refuses a pass-over from a `now` beyond the store's clock and the skew).
  let planNow = now;
  while (result.calls < maxCalls) {
    const read = await readSchedulesAndClock({ all: false, offset: 0, count: READ_PAGE, until });
    const due = read.schedules;
    if (result.calls === 0 && read.storeTime !== undefined) planNow = Math.min(now, read.storeTime);
    result.calls++;
    if (due.length === 0) break;
    const before = { planned: result.planned, stale: result.stale };
    let items: string[] = [];
    let sentItems: SentItem[] = [];
    let slotsInCall = 0;
    let itemsInCall = 0;
    const send = async () => {
      if (itemsInCall === 0) return;
      const reply = await context.run(
        "plan",
        { now: String(planNow), horizonMs: String(wakeHorizon), callId: `tick-${callId()}` },
        items,
      );
      result.calls++;
      const { rows, wakeAt } = readReply("plan", reply);
      const { wakeAtMs: wake, wakeTo } = readWakeUps(wakeAt);
      if (wake !== undefined && (result.wakeAtMs === undefined || wake < result.wakeAtMs)) result.wakeAtMs = wake;
      mergeWakeTo(result.wakeTo, wakeTo);
      for (const [i, row] of rows.entries()) {
        const made = Number(row.made);
        const sent = sentItems[i];
        if (made === -3 || made === -4) {
          // Its tasks would not be admitted (the queue's types, its payload cap): set aside with why.
          await setAside(sent.name, sent.revision, planNow, inadmissible(made, sent));
          result.setAside++;
        } else if (made < 0) result.stale++;
        else {
          result.planned++;
          result.made += made;
          result.passedOver += sent.passedOver;
        }
      }
      items = [];
      sentItems = [];
      slotsInCall = 0;
      itemsInCall = 0;
    };
    for (const schedule of due) {
      // A schedule that cannot be computed (its definition no longer reads, croner refuses its
      // cron) is set aside with why, and the others are planned: it never stops the planner.
      let computed: ReturnType<typeof computePlan>;
      try {
        computed = computePlan(schedule, planNow, planNow + horizon, grace, trace);
      } catch (error) {
        await setAside(schedule.name, schedule.revision, planNow, error);
        result.setAside++;
        continue;
      }
      const { definition, plan, slots, body, payload } = computed;
      if (slotsInCall + slots.length > SLOTS_PER_CALL || itemsInCall >= LIMITS.planItemsMax) await send();
      items.push(
        ...itemArgs("plan", {
          name: schedule.name,
          revision: schedule.revision,
          from: schedule.cursor,
          to: String(plan.cursor),
          next: String(Math.min(plan.next ?? NEVER, NEVER)),
          priority: String(definition.priority ?? 0),
          flags: definition.overlap === "skip" ? "k" : "",
          body,
          slots: slots.join(" "),
          passedOver: String(plan.passedOver),
        }),
      );
      sentItems.push({
        name: schedule.name,
        revision: schedule.revision,
        type: definition.type,
        payload,
        passedOver: plan.passedOver,
      });
      slotsInCall += slots.length;
      itemsInCall++;
    }
    await send();
    // Nothing planned: done, unless plans went stale (another planner moved on, or a definition
    // changed): those are read again, a few rounds at most.
    if (result.planned === before.planned) {
      if (result.stale === before.stale || ++staleRounds > 3) break;
    }
  }
  return result;
}

/**
 * One schedule's plan: its definition (read and checked as `schedules.set` would), its slots from its
 * cursor, and the body of its tasks. Throws what makes it uncomputable.
 */
function computePlan(
  schedule: { name: string; definition: string; cursor: string },
  now: number,
  until: number,
  grace: number,
  trace: string,
) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(schedule.definition);
  } catch {
    throw new InvalidInputError(`its definition is not JSON: ${JSON.stringify(schedule.definition.slice(0, 80))}`);
  }
  const definition = checkSchedule("schedules.plan", schedule.name, parsed as ScheduleDefinition);
  const plan = planSlots(definition, Number(schedule.cursor), now, until, grace);
  const slots = plan.slots.map(
    (slot) => `${slot + jitterOf(schedule.name, slot, definition.jitterMs)} ${slotId(schedule.name, slot)}`,
  );
  const payload = serializePayload("schedule", definition.payload, DEFAULTS.maxPayloadBytes);
  const body = buildBody(now, definition.type, definition.group ?? "", trace, payload);
  return { definition, plan, slots, body, payload };
}

/** What the planner sent for one schedule, to read its row of the reply. */
interface SentItem {
  name: string;
  revision: string;
  type: string;
  /** Its tasks' payload, as the body carries it. */
  payload: string;
  passedOver: number;
}

/** Why a schedule's tasks would not be admitted: plan answered -3 (its type) or -4 (its payload). */
function inadmissible(made: number, item: SentItem): string {
  return made === -3
    ? `its type "${item.type}" is not declared for this queue (the worker's declaration, strictTypes): no task of it would be admitted; set it to a declared type, or declare the type`
    : `its payload is ${Buffer.byteLength(item.payload)} bytes, over the queue's maxPayloadBytes: no task of it would be admitted`;
}
