// Flow control per key (docs/flow-control.md): what a task may carry, how it is checked, and how
// it reaches enqueue.lua (a flow entry after the tasks; the key's state is a field of the task hash).
import { ID_CHARACTERS, ID_PATTERN, LIMITS } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { flowLine, flowRunLine } from "./protocol/values.js";
import type { DebounceOptions, DedupeOptions, SingletonOptions, ThrottleOptions } from "./types.js";
import { shown } from "./validate.js";

export type { DebounceOptions, DedupeOptions, SingletonOptions, ThrottleOptions } from "./types.js";

/** The flow-control fields of a task (at most one of them per task). */
export interface FlowControl {
  dedupe?: DedupeOptions;
  debounce?: DebounceOptions;
  throttle?: ThrottleOptions;
  singleton?: SingletonOptions;
}

export const FLOW_MODES = ["dedupe", "debounce", "throttle", "singleton"] as const;
export type FlowMode = (typeof FLOW_MODES)[number];

/** A task's flow control as the script takes it: mode, key, and its two numbers. */
export interface FlowEntry {
  mode: FlowMode;
  key: string;
  a: number;
  b: number;
}

/** The letter of a mode as enqueue.lua takes it (and its fields in the task hash, "!<letter>:<key>"). */
const MODE_LETTER: Record<FlowMode, string> = { dedupe: "d", debounce: "b", throttle: "t", singleton: "s" };

/**
 * The flows of a batch's tasks as enqueue.lua takes them (its ARGV[3]): runs covering the tasks in
 * order, joined by ",", `"<count>:-"` for tasks without and `"<count>:<m>|<a>|<b>"` for tasks with
 * that flow. A batch's tasks mostly share one flow, so the script reads it once.
 */
export function flowRuns(flows: ReadonlyArray<FlowEntry | undefined>): string {
  const runs: string[] = [];
  let last = "";
  let count = 0;
  for (const flow of flows) {
    const text = flow ? flowLine(MODE_LETTER[flow.mode], flow.a, flow.b) : "-";
    if (count > 0 && text !== last) {
      runs.push(flowRunLine(count, last));
      count = 0;
    }
    last = text;
    count++;
  }
  if (count > 0) runs.push(flowRunLine(count, last));
  return runs.join(",");
}

const FIELDS: Record<FlowMode, readonly string[]> = {
  dedupe: ["key", "ttlMs"],
  debounce: ["key", "delayMs", "maxWaitMs"],
  throttle: ["key", "perMs", "onLimit"],
  singleton: ["key"],
};

/**
 * A flow-control key: 1-128 characters of ID_CHARACTERS (as ids and groups; a singleton's 1-124, its
 * group being SINGLETON_GROUP_PREFIX and the key); throws naming the field.
 */
export function checkFlowKey(
  where: string,
  field: string,
  value: unknown,
  maxBytes: number = LIMITS.flowKeyMaxBytes,
): string {
  if (typeof value !== "string" || value.length < 1 || value.length > maxBytes || !ID_PATTERN.test(value)) {
    throw new InvalidInputError(
      `${where}: ${field} must be 1-${maxBytes} characters of ${ID_CHARACTERS}, got ${shown(value)}`,
    );
  }
  return value;
}

function windowMs(where: string, field: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > LIMITS.flowWindowMaxMs) {
    throw new InvalidInputError(
      `${where}: ${field} must be an integer of ms from ${min} to ${LIMITS.flowWindowMaxMs} (366 days), got ${shown(value)}`,
    );
  }
  return value;
}

/**
 * The flow control of a task, checked: undefined when it has none. Throws InvalidInputError naming
 * the field, what was given and what is allowed: more than one mode, an unknown field, a key out of
 * its alphabet or length, a window out of range, a debounce with its own delayMs or runAt.
 */
export function checkFlow(
  where: string,
  task: FlowControl & { delayMs?: unknown; runAt?: unknown; group?: unknown },
): FlowEntry | undefined {
  const given = FLOW_MODES.filter((mode) => task[mode] !== undefined);
  if (given.length === 0) return undefined;
  if (given.length > 1) {
    throw new InvalidInputError(
      `${where}: a task takes at most one flow control (${FLOW_MODES.join(", ")}), got ${given.join(" and ")}`,
    );
  }
  const mode = given[0];
  const options = task[mode] as unknown as Record<string, unknown>;
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new InvalidInputError(
      `${where}: ${mode} must be an object { ${FIELDS[mode].join(", ")} }, got ${shown(options)}`,
    );
  }
  const unknown = Object.keys(options).filter((field) => !FIELDS[mode].includes(field));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `${where}: ${mode} has unknown field ${JSON.stringify(unknown[0].slice(0, 40))}; allowed: ${FIELDS[mode].join(", ")}`,
    );
  }
  if (mode === "singleton") {
    if (task.group !== undefined) {
      throw new InvalidInputError(
        `${where}: a singleton task runs in a lane of its own (one at a time per singleton.key); leave out group, got ${shown(task.group)}`,
      );
    }
    return { mode, key: checkFlowKey(where, "singleton.key", options.key, LIMITS.singletonKeyMaxBytes), a: 0, b: 0 };
  }
  const key = checkFlowKey(where, `${mode}.key`, options.key);
  if (mode === "dedupe") return { mode, key, a: windowMs(where, "dedupe.ttlMs", options.ttlMs, 1), b: 0 };
  if (mode === "debounce") {
    if (task.delayMs !== undefined || task.runAt !== undefined) {
      throw new InvalidInputError(
        `${where}: a debounced task runs debounce.delayMs after the last enqueue of its key; leave out delayMs and runAt`,
      );
    }
    return {
      mode,
      key,
      a: windowMs(where, "debounce.delayMs", options.delayMs, 0),
      b: windowMs(where, "debounce.maxWaitMs", options.maxWaitMs, 1),
    };
  }
  const onLimit = options.onLimit ?? "drop";
  if (onLimit !== "drop" && onLimit !== "defer") {
    throw new InvalidInputError(`${where}: throttle.onLimit must be "drop" or "defer", got ${shown(onLimit)}`);
  }
  return { mode, key, a: windowMs(where, "throttle.perMs", options.perMs, 1), b: onLimit === "defer" ? 1 : 0 };
}
