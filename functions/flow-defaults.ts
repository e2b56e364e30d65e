// A task type's default flow control (docs/flow-control.md "Per-type defaults"): declared next to
// its handler in defineTasks, its key computed from the payload as sent, applied wherever the
// declaration is known: `producer.enqueue` and the worker's ingest of SQS messages (so a producer
// sending a plain `{"tasks": [...]}` body gets it too). A task that carries its own flow control
// keeps it.
import { InvalidInputError } from "../shared/errors.js";
import { checkFlow, FLOW_MODES } from "../shared/flow.js";
import type { TaskInput } from "../shared/types.js";
import { shown } from "../shared/validate.js";

/** The key of a task's flow control, from its payload as the producer sent it. */
export type FlowKeyOf<Payload> = (payload: Payload) => string;

/** A type's default flow control: at most one mode, its key a function of the payload. */
export interface FlowDefaults<Payload = unknown> {
  dedupe?: { key: FlowKeyOf<Payload>; ttlMs: number };
  debounce?: { key: FlowKeyOf<Payload>; delayMs: number; maxWaitMs: number };
  throttle?: { key: FlowKeyOf<Payload>; perMs: number; onLimit?: "drop" | "defer" };
  singleton?: { key: FlowKeyOf<Payload> };
}

/** Problems of a declared default (defineTasks reports them all in one ConfigError). */
export function flowDefaultProblems(where: string, flow: unknown): string[] {
  if (flow === null || typeof flow !== "object" || Array.isArray(flow)) {
    return [
      `${where}: flow must be an object { dedupe | debounce | throttle | singleton: { key: (payload) => string, ... } }, got ${shown(flow)}`,
    ];
  }
  const unknown = Object.keys(flow).filter((mode) => !(FLOW_MODES as readonly string[]).includes(mode));
  if (unknown.length > 0) {
    return [
      `${where}: flow has unknown mode ${JSON.stringify(unknown[0].slice(0, 40))}; allowed: ${FLOW_MODES.join(", ")}`,
    ];
  }
  const defaults = flow as Record<string, { key?: unknown } | undefined>;
  const problems: string[] = [];
  for (const mode of FLOW_MODES) {
    const given = defaults[mode];
    if (given && typeof given === "object" && typeof given.key !== "function") {
      problems.push(`${where}: flow.${mode}.key must be a function (payload) => string, got ${shown(given.key)}`);
    }
  }
  if (problems.length > 0) return problems;
  try {
    // The windows and the single mode, checked as a task's would be (with a stand-in key).
    const probe = Object.fromEntries(
      Object.entries(defaults).map(([mode, options]) => [mode, options && { ...options, key: "k" }]),
    );
    checkFlow(`${where}: flow`, probe);
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    problems.push(error.message);
  }
  return problems;
}

/**
 * `task` with its type's default flow control when it has none of its own; throws
 * InvalidInputError naming the type when the key function throws or does not return a string
 * (the key's alphabet and length are checked by enqueue, naming the field).
 */
export function withFlowDefault(flow: FlowDefaults | undefined, task: TaskInput): TaskInput {
  if (!flow || FLOW_MODES.some((mode) => task[mode] !== undefined)) return task;
  const mode = FLOW_MODES.find((name) => flow[name] !== undefined);
  if (!mode) return task;
  const { key: keyOf, ...rest } = flow[mode] as { key: FlowKeyOf<unknown> };
  let key: unknown;
  try {
    key = keyOf(task.payload);
  } catch (error) {
    throw new InvalidInputError(
      `task type "${task.type}": its flow.${mode}.key function threw (${(error as Error)?.message ?? String(error)})`,
    );
  }
  return { ...task, [mode]: { ...rest, key } };
}
