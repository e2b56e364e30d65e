import type { Command } from "commander";
import type { ScheduleInfo } from "../shared/queue-schedules.js";
import { checkSchedule, checkScheduleName, loadCron, type ScheduleDefinition } from "../shared/schedules.js";
import { parseDuration } from "../shared/text.js";
import { queueName, withQueue } from "./connect.js";
import { payloadOf } from "./enqueue.js";
import { OperationError } from "./errors.js";
import { nearestHint } from "./nearest.js";
import { printResult } from "./output.js";
import { lastOf, nextOf, setBy, whenOf } from "./schedule-text.js";
import { wakeOthers, wakeWorker } from "./wake.js";

interface SetOptions {
  cron?: string;
  tz?: string;
  every?: string;
  type?: string;
  payload?: string;
  priority?: string;
  group?: string;
  catchUp?: string;
  overlap?: string;
  jitterMs?: string;
}

/** Registers `schedules list|set|remove|pause|resume|run-now`: the queue's schedules (shared/schedules.ts). */
export function scheduleCommands(program: Command): void {
  const schedules = program
    .command("schedules")
    .description("list, set, remove, pause, resume or run now the queue's schedules (cron or every N ms)")
    .addHelpText(
      "after",
      `
Examples:
  leaseq --queue emails schedules list
  leaseq --queue emails schedules set nightly --cron "0 3 * * *" --tz Europe/Berlin --type report
  leaseq --queue emails schedules set ping --every 60000 --type ping --overlap skip
  leaseq --queue emails schedules pause nightly
  leaseq --queue emails schedules run-now nightly`,
    );

  schedules
    .command("list")
    .description(
      "every schedule: when, the next slot to be made, the last slot made and its task's state, slots made and passed over",
    )
    .option("--json", "print the schedules as a JSON array (times in ms since the epoch)")
    .action(async (options: { json?: boolean }, command: Command) => {
      const found = await withQueue(command, (queue) => queue.schedules.list());
      printResult(options.json, {
        json: () => found.map((info) => ({ ...info, ...absentAsNull(info) })),
        text: () =>
          found.length === 0
            ? []
            : [
                scheduleTable(found),
                // Why a schedule is set aside: the planner could not compute it, and makes no slot of it.
                ...found.flatMap((info) =>
                  info.aside === undefined ? [] : [`${info.name} is set aside: ${info.aside}`],
                ),
              ],
        empty: `no schedules in queue "${queueName(command)}" (leaseq schedules set, or declare them)`,
      });
    });

  schedules
    .command("set")
    .description("set a schedule (a new one, or a change of a run-time one): prints it and its next slot")
    .argument("<name>", "schedule name: 1-64 characters of A-Z a-z 0-9 _ . -")
    .option("--cron <expression>", 'a cron expression: 5 fields (minute first) or 6 (seconds first), e.g. "0 3 * * *"')
    .option("--tz <zone>", "the IANA time zone the cron expression is read in (default UTC)")
    .option("--every <ms>", "or a fixed period: ms (or 90s, 5m, 1h), at least 1000; slots at its multiples")
    .option("--type <type>", "the task type each slot runs")
    .option("--payload <json>", "each task's payload as JSON text, or @file to read it from a file")
    .option("--priority <n>", "each task's priority")
    .option("--group <group>", "each task's group")
    .option("--catch-up <policy>", "missed slots after an outage: none, latest (default) or a number (the latest N)")
    .option(
      "--overlap <policy>",
      "allow (default), or skip: pass over a slot while the previous slot's task waits or runs",
    )
    .option("--jitter-ms <n>", "each slot's task runs up to this many ms (or 30s, 5m) after the slot")
    .addHelpText(
      "after",
      `
A bad definition exits 2 naming every problem; nothing is sent. A schedule declared in the task
module is refused (exit 1): change it there and deploy, or pause it.

Examples:
  leaseq --queue emails schedules set nightly --cron "0 3 * * *" --tz Europe/Berlin --type report --catch-up none
  leaseq --queue emails schedules set ping --every 5m --type ping --payload '{"url":"https://example.com"}'`,
    )
    .action(async (name: string, options: SetOptions, command: Command) => {
      const definition = await definitionOf(options);
      // Checked before connecting: a bad definition is a usage error, and nothing is sent.
      checkScheduleName("schedules.set", name);
      await loadCron();
      checkSchedule("schedules.set", name, definition);
      const { status, info } = await withQueue(command, async (queue) => {
        let result: Awaited<ReturnType<typeof queue.schedules.set>>;
        try {
          result = await queue.schedules.set(name, definition, { now: Date.now() });
        } catch (error) {
          // The definition was checked above: what the script refuses now is a declared schedule.
          throw new OperationError((error as Error).message, { cause: error });
        }
        const listed = (await queue.schedules.list()).find((each) => each.name === name);
        return { status: result.status, info: listed };
      });
      const what = `schedule "${name}" of queue "${queueName(command)}"`;
      console.log(status === "set" ? `set ${what}: ${whenOf(definition)}` : `${what} is set so already (unchanged)`);
      if (info) console.log(`next slot: ${nextOf(info)}`);
    });

  for (const action of ["remove", "pause", "resume"] as const) {
    schedules
      .command(action)
      .description(
        {
          remove: "remove a schedule (its tasks already made stay; a schedule set again later never repeats a slot)",
          pause: "pause a schedule: no slot is made while paused",
          resume: "resume a paused schedule from now (the slots of the pause are passed over)",
        }[action],
      )
      .argument("<name>", "schedule name")
      .addHelpText("after", `\nExample:\n  leaseq --queue emails schedules ${action} nightly`)
      .action(async (name: string, _options: unknown, command: Command) => {
        const what = `schedule "${name}" of queue "${queueName(command)}"`;
        const status = await withQueue(command, async (queue) => {
          const now = { now: Date.now() };
          const result =
            action === "remove"
              ? await queue.schedules.remove(name, now)
              : action === "pause"
                ? await queue.schedules.pause(name, now)
                : await queue.schedules.resume(name, now);
          if (result === "unknown") throw await noSuchSchedule(action, name, queue);
          return result;
        });
        const past = { remove: "removed", pause: "paused", resume: "resumed" }[action];
        const already = { remove: "removed already", pause: "paused already", resume: "not paused" }[action];
        console.log(status === "done" ? `${past} ${what}` : `${what} was ${already} (unchanged)`);
      });
  }

  schedules
    .command("run-now")
    .description("enqueue one task of a schedule now, outside its slots (id <name>@run-<time>); its slots go on")
    .argument("<name>", "schedule name")
    .addHelpText("after", "\nExample:\n  leaseq --queue emails schedules run-now nightly")
    .action(async (name: string, _options: unknown, command: Command) => {
      const { id, wakeAtMs, wakeTo, paused } = await withQueue(command, async (queue) => {
        const run = await queue.schedules.runNow(name, { now: Date.now() });
        if (run === undefined) throw await noSuchSchedule("run-now", name, queue);
        return { ...run, paused: (await queue.stats({ now: Date.now() })).paused };
      });
      console.log(`enqueued ${id} (schedule "${name}")`);
      if (paused) {
        console.log(`queue "${queueName(command)}" is paused: the task starts once it is resumed (leaseq resume)`);
        return;
      }
      await wakeOthers(wakeTo);
      if (wakeTo.length > 0 && wakeAtMs === undefined) return;
      await wakeWorker(wakeAtMs ?? Date.now(), "the enqueued task and any other ready ones");
    });
}

/** The definition the flags give: values as typed where they are not numbers, so the library names them. */
async function definitionOf(options: SetOptions): Promise<ScheduleDefinition> {
  const given: Record<string, unknown> = {
    cron: options.cron,
    tz: options.tz,
    every: options.every === undefined ? undefined : durationOr(options.every),
    type: options.type,
    payload: options.payload === undefined ? undefined : await payloadOf(options.payload, "schedules set"),
    priority: options.priority === undefined ? undefined : integerOr(options.priority),
    group: options.group,
    catchUp:
      options.catchUp === undefined || options.catchUp === "none" || options.catchUp === "latest"
        ? options.catchUp
        : /^\d+$/.test(options.catchUp)
          ? { max: Number(options.catchUp) }
          : options.catchUp,
    overlap: options.overlap,
    jitterMs: options.jitterMs === undefined ? undefined : durationOr(options.jitterMs),
  };
  for (const key of Object.keys(given)) if (given[key] === undefined) delete given[key];
  return given as unknown as ScheduleDefinition;
}

const integerOr = (text: string): number | string => (/^-?\d+$/.test(text) ? Number(text) : text);

function durationOr(text: string): number | string {
  try {
    return parseDuration(text) ?? text;
  } catch {
    return text;
  }
}

/** The error of a verb on a schedule the queue does not have: the nearest names there, if any is near. */
async function noSuchSchedule(
  verb: string,
  name: string,
  queue: { name: string; schedules: { list(): Promise<ScheduleInfo[]> } },
): Promise<OperationError> {
  const names = (await queue.schedules.list()).map((info) => info.name);
  const hint = nearestHint(name, names, {
    noun: "schedule",
    listedBy: "leaseq schedules list",
    none: "the queue has no schedules",
  });
  return new OperationError(`schedules ${verb}: no schedule "${name}" in queue "${queue.name}"; ${hint}`);
}

/** The schedules as an aligned table, one line each, with a header. */
function scheduleTable(found: ScheduleInfo[]): string {
  const header = ["NAME", "WHEN", "NEXT SLOT", "LAST SLOT AND ITS TASK", "MADE/PASSED OVER", "SET BY"];
  const rows = found.map((info) => [
    info.name,
    whenOf(info.definition),
    nextOf(info),
    lastOf(info),
    `${info.made}/${info.passedOver}`,
    setBy(info),
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  return [header, ...rows]
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** The optional fields of a schedule as JSON null rather than left out. */
function absentAsNull(info: ScheduleInfo) {
  return {
    nextSlotMs: info.nextSlotMs ?? null,
    lastTaskId: info.lastTaskId ?? null,
    lastSlotMs: info.lastSlotMs ?? null,
    lastTaskState: info.lastTaskState ?? null,
  };
}
