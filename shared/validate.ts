import { ID_CHARACTERS, ID_PATTERN, ID_RESERVED_END, LIMITS, NAME_CHARACTERS, NAME_PATTERN } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { groupPolicyLine } from "./protocol/groups.js";
import {
  type GroupPolicy,
  type LeasePolicy,
  type RateLimit,
  TASK_INPUT_FIELDS,
  type TaskInput,
  type TypeGroupPolicy,
} from "./types.js";

/** Shows a received value in an error message: short, and never more than 60 characters. */
export function shown(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value);
  else if (typeof value === "number" || typeof value === "boolean" || value == null) text = String(value);
  else text = `a value of type ${Array.isArray(value) ? "array" : typeof value}`;
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** A task type (or a queue name): 1-`maxBytes` characters of NAME_CHARACTERS; throws naming the field. */
export function checkName(where: string, field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== "string" || value.length < 1 || value.length > maxBytes || !NAME_PATTERN.test(value)) {
    throw new InvalidInputError(
      `${where}: ${field} must be 1-${maxBytes} characters of ${NAME_CHARACTERS}, got ${shown(value)}`,
    );
  }
  return value;
}

/** 1-`maxBytes` characters of ID_CHARACTERS, or throws naming the field. */
function checkIdCharacters(where: string, field: string, value: unknown, maxBytes: number): string {
  if (typeof value !== "string" || value.length < 1 || value.length > maxBytes || !ID_PATTERN.test(value)) {
    throw new InvalidInputError(
      `${where}: ${field} must be 1-${maxBytes} characters of ${ID_CHARACTERS}, got ${shown(value)}`,
    );
  }
  return value;
}

/** A group name: 1-128 characters of ID_CHARACTERS (`:` and `@` too, a leading `@` included); throws naming the field. */
export function checkGroup(where: string, field: string, value: unknown): string {
  return checkIdCharacters(where, field, value, LIMITS.groupMaxBytes);
}

/**
 * A task id: 1-128 characters of ID_CHARACTERS, not ending in `:` and a lower-case letter (how the
 * task hash names a task's own fields: ID_RESERVED_END); throws naming the field.
 */
export function checkId(where: string, field: string, value: unknown): string {
  const id = checkIdCharacters(where, field, value, LIMITS.idMaxBytes);
  if (ID_RESERVED_END.test(id)) {
    throw new InvalidInputError(
      `${where}: ${field} must not end in ":" and a lower-case letter (the task hash names a task's own fields so: "<id>:s" its state), got ${shown(id)}`,
    );
  }
  return id;
}

export function checkInteger(where: string, field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidInputError(`${where}: ${field} must be an integer from ${min} to ${max}, got ${shown(value)}`);
  }
  return value;
}

export function checkBatch(where: string, items: unknown, max: number): void {
  if (!Array.isArray(items) || items.length < 1 || items.length > max) {
    const got = Array.isArray(items) ? `${items.length} items` : shown(items);
    throw new InvalidInputError(`${where}: expected 1 to ${max} items, got ${got}`);
  }
}

export function checkNow(where: string, now: unknown): number {
  return checkInteger(where, "now (ms since epoch)", now, 0, LIMITS.timeMaxMs);
}

function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") deepest = Math.max(deepest, ++depth);
    else if (c === "}" || c === "]") depth--;
  }
  return deepest;
}

/** Serializes a payload; throws when it is not JSON, too large or nested too deep. */
export function serializePayload(where: string, payload: unknown, maxBytes: number): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(payload === undefined ? {} : payload);
  } catch (error) {
    throw new InvalidInputError(`${where}: payload must be JSON-serializable (${(error as Error).message})`);
  }
  if (text === undefined) {
    throw new InvalidInputError(`${where}: payload must be a JSON value, got ${shown(payload)}`);
  }
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) {
    throw new InvalidInputError(`${where}: payload is ${bytes} bytes as JSON; the cap is ${maxBytes} bytes`);
  }
  const depth = nestingDepth(text);
  if (depth > LIMITS.payloadNestingMax) {
    throw new InvalidInputError(
      `${where}: payload nests ${depth} levels deep; at most ${LIMITS.payloadNestingMax} allowed`,
    );
  }
  return text;
}

const TASK_FIELDS: readonly string[] = TASK_INPUT_FIELDS;

/** Throws naming the fields a task has that a TaskInput does not (a misspelled `paylod` would be lost). */
export function checkTaskFields(where: string, task: object): void {
  const unknown = Object.keys(task).filter((key) => !TASK_FIELDS.includes(key));
  if (unknown.length === 0) return;
  const named = unknown.map((key) => JSON.stringify(key.slice(0, 40))).join(", ");
  throw new InvalidInputError(
    `${where} has unknown field${unknown.length === 1 ? "" : "s"} ${named}; allowed: ${TASK_FIELDS.join(", ")}`,
  );
}

/** The due time of a task in ms, or throws naming the field. */
export function dueTime(where: string, task: TaskInput, now: number): number {
  if (task.delayMs !== undefined && task.runAt !== undefined) {
    throw new InvalidInputError(`${where}: give either delayMs or runAt, not both`);
  }
  if (task.delayMs !== undefined) {
    return now + checkInteger(where, "delayMs", task.delayMs, 0, LIMITS.timeMaxMs - now);
  }
  if (task.runAt !== undefined) {
    const runAt = task.runAt instanceof Date ? task.runAt.getTime() : task.runAt;
    if (typeof runAt !== "number" || !Number.isFinite(runAt) || runAt < 0 || runAt > LIMITS.timeMaxMs) {
      throw new InvalidInputError(
        `${where}: runAt must be a time from 1970-01-01 to 9999-12-31T23:59:59.999Z (ms since epoch, or a Date), got ${shown(
          task.runAt instanceof Date ? task.runAt.toString() : task.runAt,
        )}`,
      );
    }
    return Math.round(runAt);
  }
  return now;
}

/** Validates a group policy (and a type's rate), naming the field and what is allowed. */
export function checkGroupPolicy(where: string, policy: TypeGroupPolicy): TypeGroupPolicy {
  if (policy === null || typeof policy !== "object") {
    throw new InvalidInputError(
      `${where}: a group policy must be an object { concurrency?, ordered?, onFailure?, rate? }`,
    );
  }
  const known = ["concurrency", "ordered", "onFailure", "rate", "typeRate"];
  for (const field of Object.keys(policy)) {
    if (!known.includes(field)) {
      throw new InvalidInputError(`${where}: unknown group policy field "${field}"; allowed: ${known.join(", ")}`);
    }
  }
  const rate = (field: "rate" | "typeRate"): RateLimit | undefined => {
    const given = policy[field];
    if (given === undefined) return undefined;
    if (given === null || typeof given !== "object") {
      throw new InvalidInputError(`${where}: ${field} must be { max, perMs }`);
    }
    return {
      max: checkInteger(where, `${field}.max`, given.max, 1, LIMITS.rateMax),
      perMs: checkInteger(where, `${field}.perMs`, given.perMs, 1, LIMITS.rateIntervalMaxMs),
    };
  };
  const checked: TypeGroupPolicy = {};
  if (policy.concurrency !== undefined) {
    checked.concurrency = checkInteger(where, "concurrency", policy.concurrency, 1, LIMITS.groupConcurrencyMax);
  }
  if (policy.ordered !== undefined) {
    if (typeof policy.ordered !== "boolean") throw new InvalidInputError(`${where}: ordered must be true or false`);
    if (policy.ordered && (checked.concurrency ?? 1) !== 1) {
      throw new InvalidInputError(
        `${where}: an ordered group runs one task at a time: concurrency must be 1 (or left out), got ${checked.concurrency}`,
      );
    }
    checked.ordered = policy.ordered;
    if (policy.ordered) checked.concurrency = 1;
  }
  if (policy.onFailure !== undefined) {
    if (policy.onFailure !== "continue" && policy.onFailure !== "hold") {
      throw new InvalidInputError(`${where}: onFailure must be "continue" or "hold", got ${shown(policy.onFailure)}`);
    }
    if (policy.onFailure === "hold" && !checked.ordered) {
      throw new InvalidInputError(
        `${where}: onFailure "hold" keeps an ordered group behind its FAILED task: it needs ordered: true`,
      );
    }
    if (policy.onFailure === "hold") checked.onFailure = "hold";
  }
  const groupRate = rate("rate");
  if (groupRate) checked.rate = groupRate;
  const typeRate = rate("typeRate");
  if (typeRate) checked.typeRate = typeRate;
  return checked;
}

/** Validates a queue's default group policy: a group policy without a type's rate across groups. */
export function checkQueueGroupPolicy(where: string, policy: GroupPolicy): GroupPolicy {
  const checked = checkGroupPolicy(where, policy);
  if (checked.typeRate) {
    throw new InvalidInputError(`${where}: typeRate is a type's rate across its groups, declared per type`);
  }
  return checked;
}

/** A group policy as its config text: "<concurrency>,<ordered>,<rateMax>,<rateMs>,<typeRateMax>,<typeRateMs>". */
export function groupPolicyText(policy: TypeGroupPolicy): string {
  return groupPolicyLine({
    concurrency: policy.concurrency ?? 0,
    ordered: policy.ordered ? 1 : 0,
    rateMax: policy.rate?.max ?? 0,
    rateMs: policy.rate?.perMs ?? 0,
    typeRateMax: policy.typeRate?.max ?? 0,
    typeRateMs: policy.typeRate?.perMs ?? 0,
  });
}

/** Validates a type's lease policy. */
export function checkPolicy(where: string, policy: LeasePolicy): LeasePolicy {
  return {
    leaseMs: checkInteger(where, "leaseMs", policy.leaseMs, 1, LIMITS.leaseMaxMs),
    maxAttempts: checkInteger(where, "maxAttempts", policy.maxAttempts, 1, LIMITS.maxAttemptsMax),
  };
}
