import { DEFAULTS, LIMITS, NAME_PATTERN } from "../shared/config.js";
import { ConfigError, InvalidInputError } from "../shared/errors.js";
import { checkSchedule, checkScheduleName, type ScheduleDefinition } from "../shared/schedules.js";
import type { GroupPolicy, RateLimit, ResultDeclaration, TypeGroupPolicy } from "../shared/types.js";
import { checkGroupPolicy, checkQueueGroupPolicy, groupPolicyText, shown } from "../shared/validate.js";
import { type FlowDefaults, flowDefaultProblems } from "./flow-defaults.js";
import { isStandardSchema, type StandardSchemaV1 } from "./schema.js";

/** What a handler receives for one task. */
export interface Task<Payload = unknown> {
  id: string;
  type: string;
  /** The task's group, undefined when it has none. */
  group: string | undefined;
  payload: Payload;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** When the current lease ends, unless the worker extends it (it does, every third of the heartbeat). */
  leaseDeadlineMs: number;
  /**
   * Fires when the handler must stop: its lease was lost (another worker may run the task now), its
   * type's `timeoutMs` is reached, or the invocation is about to time out. Pass it to fetch() and friends.
   */
  signal: AbortSignal;
  /**
   * Reports how far it got (any JSON value, at most 4096 bytes as JSON): the next heartbeat carries
   * the latest (no Redis command of its own), kept until the task is trimmed: `queue.result(id)`,
   * `leaseq inspect`. A value that is not JSON or too long throws InvalidInputError here.
   */
  progress(value: unknown): void;
}

/** Return to succeed, throw to retry (with backoff), throw PermanentError to fail at once. */
export type TaskHandler<Payload = unknown> = (task: Task<Payload>) => Promise<void> | void;

/** Exponential backoff with jitter between retries: min(maxMs, baseMs × 2^(attempt−1)), half of it random. */
export interface Backoff {
  baseMs: number;
  maxMs: number;
}

/**
 * One task type as you declare it: the handler and, next to it, its policy. Return to succeed,
 * throw to retry with backoff, throw PermanentError to fail at once. `Payload` is what the handler
 * receives, `Sent` what producers send (they differ only when a schema transforms the payload).
 */
export interface TaskTypeOptions<Payload = unknown, Sent = Payload> {
  // A method, so a handler may narrow its payload type: `handler(task: Task<{ to: string }>)`.
  // What it returns is kept with the DONE task when the type has `keepResult`.
  handler(task: Task<Payload>): unknown;
  /**
   * The payload's schema, optional: any Standard Schema (zod ≥ 3.24, valibot ≥ 1, arktype). The
   * producer refuses a payload it rejects, ingest dead-letters it, and the worker fails such a task
   * at once instead of running the handler, which receives the schema's output.
   */
  schema?: StandardSchemaV1<Sent, Payload>;
  /**
   * The longest one attempt may run, ms: a worker starts a task only while this fits the time its
   * invocation has left, and stops it (its `signal` aborts; the run counts as an attempt) when it is
   * reached. At most the worker timeout minus 5 s (895 s on Lambda). Default 60000, or `leaseMs`.
   */
  timeoutMs?: number;
  /**
   * How long a lease lives without a heartbeat, ms: how soon a crashed run is noticed and its task
   * run again. The worker extends the lease every third of it while the handler runs. 1000 up to
   * `timeoutMs`. Default 30000 (or `timeoutMs` when shorter), or `leaseMs`.
   */
  heartbeatMs?: number;
  /**
   * Both times in one field, for declarations written with it: a task starts only while `leaseMs`
   * fits the invocation's time left, its lease lives `leaseMs` without a heartbeat, and its run goes
   * on, extended, until the invocation is about to end. Prefer `timeoutMs` and `heartbeatMs` (not
   * both ways at once).
   */
  leaseMs?: number;
  /**
   * At most this many tasks of this type run at once in one worker invocation (within the worker's
   * `concurrency`). Default: the worker's concurrency.
   */
  concurrency?: number;
  /** Runs before the task is FAILED, 1-1000. Default 5. */
  maxAttempts?: number;
  /**
   * Keep what the handler returns (any JSON value, at most the queue's `maxResultBytes` as JSON)
   * with the DONE task until it is trimmed: `queue.result(id)`, `queue.waitFor(id)`, `leaseq inspect`.
   * A result past the cap fails the task with an error naming both sizes. Default false.
   */
  keepResult?: boolean;
  /** Delay between retries. Default { baseMs: 1000, maxMs: 300000 }. */
  backoff?: Partial<Backoff>;
  /**
   * How the tasks of one group of this type run: `{ concurrency, ordered, rate }` (docs/groups.md).
   * Default: the queue's `groups`, else none (groups only take turns).
   */
  group?: GroupPolicy;
  /** At most `max` claims of this type per `perMs`, across its groups. Default: no limit. */
  rate?: RateLimit;
  /**
   * The flow control of this type's tasks that carry none of their own (docs/flow-control.md), its
   * key computed from the payload as the producer sent it (before a schema transforms it):
   * `{ debounce: { key: (p) => p.docId, delayMs, maxWaitMs } }`. Applied by `producer.enqueue` and
   * the worker's ingest of SQS messages. Default: none.
   */
  flow?: FlowDefaults<Payload>;
}

/** What `defineTasks` takes: the task types of one queue. */
export interface TaskDefinitions {
  /** Strict completion order for the whole queue (see docs/design.md "Ordered queues"). Default false. */
  ordered?: boolean;
  /**
   * How many tasks one worker invocation runs at once, 1-100 (each type may run fewer:
   * its `concurrency`). An ordered queue runs one. Default 10.
   */
  concurrency?: number;
  /**
   * A task whose lease runs out while held (its worker crashed or was stopped: a stall) this many
   * times is FAILED; from its second stall it runs alone in its invocation. 1-1000. Default 3.
   */
  maxStalls?: number;
  types: Record<string, TaskTypeOptions>;
  /** The group policy of the types that declare none of their own (docs/groups.md). */
  groups?: GroupPolicy;
  /**
   * Types this deployment ingests from SQS although it has no handler for them (another consumer of
   * the same Redis queue runs them). Any other undeclared type is rejected at ingest.
   */
  acceptTypes?: string[];
  /**
   * Schedules, by name (docs/schedules.md): each slot of `cron` (in `tz`) or `every` ms becomes one
   * task of `type`, id `<name>@<slot time>`. Written to the queue at the worker's cold start; a
   * schedule no longer declared is removed.
   */
  schedules?: Record<string, ScheduleDefinition>;
}

/** A task type with every default applied. */
export interface DeclaredTaskType {
  handler(task: Task): unknown;
  /** Its handler's result is kept with the DONE task. */
  keepResult: boolean;
  schema: StandardSchemaV1 | undefined;
  /** The longest one attempt may run: a task starts only while it fits the invocation's time left. */
  timeoutMs: number;
  /** How long a lease lives without a heartbeat: the lease length a claim gives. */
  heartbeatMs: number;
  /**
   * Whether a run is stopped at `timeoutMs` (declared so), or only when the invocation is about to
   * end (a type declared with `leaseMs` alone, or with no `timeoutMs`).
   */
  stopsAtTimeout: boolean;
  /** The `leaseMs` it was declared with (both times in one field), else undefined. */
  leaseMs: number | undefined;
  /** At most this many of the type at once in one invocation; undefined: the worker's concurrency. */
  concurrency: number | undefined;
  maxAttempts: number;
  backoff: Backoff;
  /** Its group policy and rate across groups, when it declares either. */
  group: TypeGroupPolicy | undefined;
  /** Its default flow control, when it declares one. */
  flow: FlowDefaults | undefined;
}

declare const PAYLOADS: unique symbol;

/**
 * The one declaration of a queue's task types, shared by the worker, the LeaseQueue construct and
 * a typed producer. `Payloads` maps each declared and accepted type name to the payload producers
 * send for it; the default takes any name and payload.
 */
export interface TaskDeclaration<
  Payloads extends Record<string, unknown> = Record<string, unknown>,
  Results extends Record<string, unknown> = Record<string, unknown>,
> extends ResultDeclaration<Results> {
  readonly ordered: boolean;
  /** Tasks one worker invocation runs at once (1 on an ordered queue). */
  readonly concurrency: number;
  readonly maxStalls: number;
  readonly groups: GroupPolicy | undefined;
  readonly types: Readonly<Record<string, DeclaredTaskType>>;
  readonly acceptTypes: readonly string[];
  /** The declared schedules, by name, in their canonical form. */
  readonly schedules: Readonly<Record<string, ScheduleDefinition>>;
  /** A type only, never set: what `createProducer({ tasks })` reads the names and payloads from. */
  readonly [PAYLOADS]?: Payloads;
}

/** The payloads of a declaration, per type name: `TaskMessage<TaskPayloads<typeof tasks>>`. */
export type TaskPayloads<Declaration extends TaskDeclaration> =
  Declaration extends TaskDeclaration<infer Payloads> ? Payloads : never;

/**
 * The definitions as `defineTasks` reads their types: per type name, the payload its handler takes
 * (`Payloads`, from the handler's `Task<P>` or the schema's output) and the schema's input (`Inputs`).
 */
type TypedDefinitions<Payloads, Inputs, Results, Accepted extends string> = Omit<
  TaskDefinitions,
  "types" | "acceptTypes" | "schedules"
> & {
  /** Each schedule's `type` is a declared one, and its `payload` that type's. */
  schedules?: Record<
    string,
    {
      [K in keyof Payloads & string]: Omit<ScheduleDefinition, "type" | "payload"> & { type: K; payload?: Payloads[K] };
    }[keyof Payloads & string]
  >;
  types: { [K in keyof Payloads]: TaskTypeOptions<Payloads[K], unknown> } & {
    [K in keyof Inputs]: { schema?: StandardSchemaV1<Inputs[K], unknown> };
  } & {
    // What each handler returns: the result `queue.result(id, { tasks, type })` is typed by.
    [K in keyof Results]: { handler(task: never): Results[K] | PromiseLike<Results[K]> };
  };
  acceptTypes?: readonly Accepted[];
  /** A declaration is not definitions: it is returned as it is (the next overload). */
  readonly [PAYLOADS]?: never;
};

/** What producers send per type: a schema's input where one is declared, else the handler's payload. */
type SentPayloads<Payloads, Inputs, Accepted extends string> = {
  [K in keyof Payloads | Accepted]: K extends keyof Payloads
    ? K extends keyof Inputs
      ? unknown extends Inputs[K]
        ? Payloads[K]
        : Inputs[K]
      : Payloads[K]
    : unknown;
};

export const TASK_DEFAULTS = {
  timeoutMs: 60_000,
  heartbeatMs: 30_000,
  maxAttempts: 5,
  backoff: { baseMs: 1_000, maxMs: 300_000 },
  /** Tasks one worker invocation runs at once. */
  concurrency: 10,
} as const;

/** The most tasks one worker invocation may run at once. */
export const CONCURRENCY_MAX = 100;

/** Lambda's longest timeout: 15 minutes. */
export const LAMBDA_TIMEOUT_MAX_MS = 900_000;

/**
 * Time a worker needs besides running a task: ingesting the SQS batch, the claim and settle round
 * trips. A lease must end this long before the worker timeout, or it could outlive the invocation.
 */
export const LEASE_MARGIN_MS = 5_000;

/** The longest wait between two runs of a task: 366 days. */
const BACKOFF_MAX_MS = 366 * 24 * 3600 * 1000;

const DECLARED = Symbol.for("leaseq.taskDeclaration");

/** Thrown by a handler for a failure that no retry can fix: the task goes to FAILED at once. */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/**
 * Declares the task types of a queue, applying the defaults. Throws one ConfigError listing every
 * problem (a bad name, a policy out of range, a schema that is not a Standard Schema). Import the
 * result in your worker entry (`createWorker({ tasks })`), in your CDK app (`new LeaseQueue(...,
 * { tasks })`) and in your producers (`createProducer({ queueUrl, tasks })`): its type carries each
 * type's name and payload.
 */
// A declaration is returned as it is; definitions are typed, each schedule's type and payload
// against the handlers' (no untyped overload for them to fall back to: a wrong schedule is a
// compile error, named against these definitions, as the last overload tried).
export function defineTasks<Declaration extends TaskDeclaration>(declaration: Declaration): Declaration;
export function defineTasks<
  Payloads extends Record<string, unknown>,
  Inputs extends Record<string, unknown>,
  Results extends Record<string, unknown>,
  const Accepted extends string = never,
>(
  definitions: TypedDefinitions<Payloads, Inputs, Results, Accepted>,
): TaskDeclaration<SentPayloads<Payloads, Inputs, Accepted>, Results>;
export function defineTasks(
  definitions:
    | TaskDefinitions
    | TaskDeclaration
    | TypedDefinitions<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, string>,
): TaskDeclaration {
  return declareTasks(definitions as TaskDefinitions | TaskDeclaration);
}

/** defineTasks for what the library takes either way, a declaration or definitions (`createWorker({ tasks })`). */
export function declareTasks(definitions: TaskDefinitions | TaskDeclaration): TaskDeclaration {
  if ((definitions as { [DECLARED]?: true })[DECLARED]) return definitions as TaskDeclaration;
  const problems: string[] = [];
  const types: Record<string, DeclaredTaskType> = {};
  const given = definitions?.types;
  if (given === null || typeof given !== "object") {
    throw new ConfigError([
      "defineTasks: types must be an object of task types, e.g. { types: { email: { handler } } }",
    ]);
  }
  if (Object.keys(given).length === 0) problems.push("defineTasks: declare at least one task type");
  for (const [name, options] of Object.entries(given)) {
    const where = `task type "${name}"`;
    if (!validName(name)) {
      problems.push(
        `task type name ${JSON.stringify(name)} must be 1-${LIMITS.typeMaxBytes} characters of A-Z a-z 0-9 _ . -`,
      );
    }
    if (typeof options?.handler !== "function") problems.push(`${where}: handler must be a function`);
    if (options?.keepResult !== undefined && typeof options.keepResult !== "boolean") {
      problems.push(`${where}: keepResult must be true or false, got ${shown(options.keepResult)}`);
    }
    if (options?.schema !== undefined && !isStandardSchema(options.schema)) {
      problems.push(
        `${where}: schema must be a Standard Schema (zod >= 3.24, valibot >= 1, arktype: an object with "~standard".validate), got ${shown(options.schema)}`,
      );
    }
    const declared: DeclaredTaskType = {
      handler: options?.handler,
      schema: options?.schema,
      ...runTimes(where, options, problems),
      concurrency: options?.concurrency,
      maxAttempts: options?.maxAttempts ?? TASK_DEFAULTS.maxAttempts,
      keepResult: options?.keepResult === true,
      backoff: {
        baseMs: options?.backoff?.baseMs ?? TASK_DEFAULTS.backoff.baseMs,
        maxMs: options?.backoff?.maxMs ?? Math.max(TASK_DEFAULTS.backoff.maxMs, options?.backoff?.baseMs ?? 0),
      },
      group: undefined,
      flow: undefined,
    };
    if (options?.flow !== undefined) {
      const flowProblems = flowDefaultProblems(where, options.flow);
      problems.push(...flowProblems);
      if (flowProblems.length === 0) declared.flow = options.flow as FlowDefaults;
    }
    if (options?.group !== undefined || options?.rate !== undefined) {
      const group = guarded(problems, () =>
        checkGroupPolicy(where, {
          ...(options.group ?? {}),
          ...(options.rate === undefined ? {} : { typeRate: options.rate }),
        }),
      );
      if (group) declared.group = group;
    }
    problems.push(...policyProblems(where, declared));
    types[name] = declared;
  }
  const acceptTypes = definitions.acceptTypes ?? [];
  if (!Array.isArray(acceptTypes)) problems.push("acceptTypes must be an array of task type names");
  else {
    for (const name of acceptTypes) {
      if (!validName(name)) problems.push(`acceptTypes: ${JSON.stringify(name)} is not a valid task type name`);
      else if (name in types) problems.push(`acceptTypes: "${name}" is declared in types already`);
    }
  }
  if (definitions.ordered !== undefined && typeof definitions.ordered !== "boolean") {
    problems.push(`ordered must be true or false, got ${JSON.stringify(definitions.ordered)}`);
  }
  const concurrency = (definitions as TaskDefinitions).concurrency ?? TASK_DEFAULTS.concurrency;
  const maxStalls = (definitions as TaskDefinitions).maxStalls ?? DEFAULTS.maxStalls;
  const integer = (field: string, value: unknown, min: number, max: number) => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`defineTasks: ${field} must be an integer from ${min} to ${max}, got ${shown(value)}`);
    }
  };
  integer("concurrency", concurrency, 1, CONCURRENCY_MAX);
  integer("maxStalls", maxStalls, 1, LIMITS.maxStallsMax);
  for (const [name, type] of Object.entries(types)) {
    if (type.concurrency !== undefined)
      integer(`task type "${name}": concurrency`, type.concurrency, 1, CONCURRENCY_MAX);
  }
  let groups: GroupPolicy | undefined;
  if (definitions.groups !== undefined) {
    groups = guarded(problems, () => checkQueueGroupPolicy("groups", definitions.groups as GroupPolicy));
  }
  const schedules: Record<string, ScheduleDefinition> = {};
  const givenSchedules = (definitions as TaskDefinitions).schedules ?? {};
  if (givenSchedules === null || typeof givenSchedules !== "object" || Array.isArray(givenSchedules)) {
    problems.push('schedules must be an object of schedules by name, e.g. { nightly: { cron: "0 3 * * *", type } }');
  } else {
    for (const [name, given] of Object.entries(givenSchedules)) {
      const schedule = guarded(problems, () => {
        checkScheduleName("defineTasks", name);
        return checkSchedule("defineTasks", name, given);
      });
      if (!schedule) continue;
      if (!(schedule.type in types) && !(Array.isArray(acceptTypes) && acceptTypes.includes(schedule.type))) {
        problems.push(
          `defineTasks: schedule "${name}": type "${schedule.type}" is not declared; declared: ${Object.keys(types).join(", ")}`,
        );
        continue;
      }
      schedules[name] = schedule;
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const declaration = {
    ordered: definitions.ordered ?? false,
    // An ordered queue completes one task at a time, whatever the worker could run.
    concurrency: definitions.ordered ? 1 : concurrency,
    maxStalls,
    groups,
    types,
    acceptTypes: [...acceptTypes],
    schedules,
  };
  Object.defineProperty(declaration, DECLARED, { value: true });
  return Object.freeze(declaration);
}

/** The result of `check`, or undefined with its message added to `problems`. */
function guarded<T>(problems: string[], check: () => T): T | undefined {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof InvalidInputError)) throw error;
    problems.push(error.message);
    return undefined;
  }
}

function validName(name: unknown): boolean {
  return typeof name === "string" && name.length <= LIMITS.typeMaxBytes && NAME_PATTERN.test(name);
}

function policyProblems(where: string, type: DeclaredTaskType): string[] {
  const problems: string[] = [];
  const check = (field: string, value: unknown, min: number, max: number, unit = "") => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`${where}: ${field} must be an integer from ${min} to ${max}${unit}, got ${JSON.stringify(value)}`);
    }
  };
  check("maxAttempts", type.maxAttempts, 1, LIMITS.maxAttemptsMax);
  check("backoff.baseMs", type.backoff.baseMs, 0, BACKOFF_MAX_MS, " ms");
  check("backoff.maxMs", type.backoff.maxMs, type.backoff.baseMs, BACKOFF_MAX_MS, " ms");
  return problems;
}

/**
 * A type's run times from what it declares: `timeoutMs` and `heartbeatMs`, or `leaseMs` alone (both,
 * and a run stopped only by the invocation's end), or the defaults. Adds what is wrong to `problems`.
 */
function runTimes(
  where: string,
  options: TaskTypeOptions | undefined,
  problems: string[],
): Pick<DeclaredTaskType, "timeoutMs" | "heartbeatMs" | "stopsAtTimeout" | "leaseMs"> {
  const { timeoutMs, heartbeatMs, leaseMs } = options ?? {};
  const check = (field: string, value: unknown, min: number, max: number) => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      problems.push(`${where}: ${field} must be an integer from ${min} to ${max} ms, got ${JSON.stringify(value)}`);
      return false;
    }
    return true;
  };
  if (leaseMs !== undefined && (timeoutMs !== undefined || heartbeatMs !== undefined)) {
    problems.push(
      `${where}: leaseMs is the older way to say timeoutMs and heartbeatMs together: give timeoutMs and heartbeatMs, or leaseMs alone`,
    );
  }
  if (leaseMs !== undefined && timeoutMs === undefined && heartbeatMs === undefined) {
    check("leaseMs", leaseMs, 1_000, LIMITS.leaseMaxMs);
    return { timeoutMs: leaseMs, heartbeatMs: leaseMs, stopsAtTimeout: false, leaseMs };
  }
  const timeout = timeoutMs ?? TASK_DEFAULTS.timeoutMs;
  const timeoutOk = check("timeoutMs", timeout, 1_000, LIMITS.leaseMaxMs);
  const heartbeat = heartbeatMs ?? Math.min(TASK_DEFAULTS.heartbeatMs, timeoutOk ? timeout : TASK_DEFAULTS.heartbeatMs);
  if (check("heartbeatMs", heartbeat, 1_000, LIMITS.leaseMaxMs) && timeoutOk && heartbeat > timeout) {
    problems.push(
      `${where}: heartbeatMs ${heartbeat} is longer than timeoutMs ${timeout}: a run ends at its timeout, so a heartbeat longer than it only delays noticing a crash; give at most ${timeout}`,
    );
  }
  return { timeoutMs: timeout, heartbeatMs: heartbeat, stopsAtTimeout: timeoutMs !== undefined, leaseMs: undefined };
}

/** The worker timeout a declaration gets by default: 5 minutes, or what its longest timeout needs (≤ 900 s). */
export function defaultWorkerTimeoutMs(declaration: TaskDeclaration): number {
  const longest = Math.max(0, ...Object.values(declaration.types).map((type) => type.timeoutMs));
  const needed = Math.ceil((longest + LEASE_MARGIN_MS) / 1000) * 1000;
  return Math.min(LAMBDA_TIMEOUT_MAX_MS, Math.max(300_000, needed));
}

/**
 * Problems of a declaration on a worker whose invocations last `workerTimeoutMs`: every type's
 * timeout must end LEASE_MARGIN_MS before the worker's. The construct reports these at synth, the
 * worker at cold start. On Lambda the worker timeout is at most 15 minutes, so no run may be longer
 * than 895 s: a longer job must be split into tasks.
 */
export function timeoutProblems(declaration: TaskDeclaration, workerTimeoutMs: number): string[] {
  const limitMs = workerTimeoutMs - LEASE_MARGIN_MS;
  const lambdaMaxMs = LAMBDA_TIMEOUT_MAX_MS - LEASE_MARGIN_MS;
  return Object.entries(declaration.types)
    .filter(([, type]) => type.timeoutMs > limitMs)
    .map(([name, type]) => {
      const field =
        type.leaseMs !== undefined ? "leaseMs" : type.stopsAtTimeout ? "timeoutMs" : "timeoutMs (the default)";
      const what = `task type "${name}": ${field} ${type.timeoutMs} cannot fit the worker timeout of ${workerTimeoutMs / 1000} s minus the ${LEASE_MARGIN_MS} ms margin (at most ${limitMs} ms)`;
      if (type.timeoutMs > lambdaMaxMs) {
        return `${what}; a Lambda invocation lasts at most 15 minutes, so no run may take longer than ${lambdaMaxMs} ms: split the work into tasks (an ordered group runs them one after another), and let heartbeatMs, not the timeout, say how soon a crash is noticed`;
      }
      return `${what}; shorten it or raise workerTimeout (at most ${LAMBDA_TIMEOUT_MAX_MS / 1000} s)`;
    });
}

/**
 * The policies of a declaration as compact, canonical text (types sorted): what the construct puts
 * in the worker's environment (LEASEQ_TASKS) and the worker compares with its own at cold start.
 */
export function policyText(declaration: TaskDeclaration): string {
  const types = Object.keys(declaration.types)
    .sort()
    .map((name) => {
      const type = declaration.types[name];
      const fields = [
        name,
        type.stopsAtTimeout ? type.timeoutMs : `~${type.timeoutMs}`,
        type.heartbeatMs,
        type.concurrency ?? "",
        type.maxAttempts,
        type.backoff.baseMs,
        type.backoff.maxMs,
        type.group
          ? groupPolicyText(type.group).replaceAll(",", ".") + (type.group.onFailure === "hold" ? ".hold" : "")
          : "",
      ];
      return fields.join(":");
    });
  const accepted = [...declaration.acceptTypes].sort();
  const order = declaration.ordered ? "ordered" : "parallel";
  const groups = declaration.groups
    ? `+${groupPolicyText(declaration.groups).replaceAll(",", ".")}${declaration.groups.onFailure === "hold" ? ".hold" : ""}`
    : "";
  const worker = `${declaration.concurrency}x${declaration.maxStalls}`;
  return [order + groups, types.join(","), accepted.join(","), worker].join(";");
}

/**
 * Differences between a declaration and the policy text the construct deployed with it, field by
 * field in defineTasks's words, ending with what to do; empty when they match. The words are
 * loaded only when the two differ (a start that fails): a worker's cold start compares two texts.
 */
export async function policyMismatches(declaration: TaskDeclaration, deployed: string): Promise<string[]> {
  const mine = policyText(declaration);
  if (mine === deployed) return [];
  const { policyTextMismatches } = await import("./policy-mismatch.js");
  return policyTextMismatches(mine, deployed);
}

/** The delay before retry number `attempt` (1-based), with "equal jitter": half fixed, half random. */
export function backoffDelayMs(backoff: Backoff, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
