import { createHash } from "node:crypto";
import { DEFAULTS, DEPLOYMENT_PATTERN, DEPLOYMENT_RULE, LIMITS } from "./config.js";
import { InvalidInputError } from "./errors.js";
import { itemArgs } from "./protocol/index.js";
import { policyLine } from "./protocol/values.js";
import type { GroupPolicy, LeasePolicy, TypeGroupPolicy } from "./types.js";
import {
  checkGroupPolicy,
  checkInteger,
  checkName,
  checkPolicy,
  checkQueueGroupPolicy,
  groupPolicyText,
} from "./validate.js";

/**
 * What must be the same for every caller of a queue, kept in its Redis config (configure.lua) and
 * read by the scripts: one process declares it (the worker, at its cold start), every other reads it.
 */
export interface QueueSettings {
  /** Strict order: a claim returns nothing while any task of the queue is leased or held. Default false. */
  ordered?: boolean;
  /** Lease and attempts per task type; types not listed get `defaultPolicy`. */
  policies?: Record<string, LeasePolicy>;
  /**
   * Only the types in `policies` (and `acceptTypes`) may be enqueued: enqueue refuses any other,
   * naming the declared ones (the worker sets it from its task declaration). Default false: any
   * type, `defaultPolicy`.
   */
  strictTypes?: boolean;
  /**
   * Types another deployment sharing this queue runs: accepted at enqueue, their policies left as
   * that deployment wrote them, and never claimed by a worker that passes its own types (docs/deploy.md).
   */
  acceptTypes?: string[];
  /** Default 60000 ms, 5 attempts. */
  defaultPolicy?: LeasePolicy;
  /** The group policy of the types without one in `typeGroups` (docs/groups.md). Default: none (groups only take turns). */
  groups?: GroupPolicy;
  /** Group policies (and rates across groups) per task type. */
  typeGroups?: Record<string, TypeGroupPolicy>;
  /** Default 262144. */
  maxPayloadBytes?: number;
  /** Default 2048. */
  maxErrorBytes?: number;
  /**
   * The longest result (JSON bytes) an ack may keep with a DONE task (`settle` with `result`; the
   * worker's types with `keepResult`): a longer one is refused with an error naming both. Default
   * 16384, at most 1 MiB.
   */
  maxResultBytes?: number;
  /**
   * A task whose lease runs out while held (its worker crashed or stopped: a stall) this many times
   * is FAILED; from its second stall it runs alone. Default 3.
   */
  maxStalls?: number;
  /**
   * Ended attempts (retried, failed, expired) a task's history keeps, the newest: `inspect` shows
   * each with its start, wait, end, outcome and error. 0 keeps none. Default 10.
   */
  historyAttempts?: number;
  /** Reclaim only leases expired by more than this. Default 2000. */
  clockSkewMs?: number;
  /**
   * Take the time decisions that cannot be undone (a lease expired, a finished task past its
   * retention, a schedule's slot missed) on the callers' `now` as given, not bounded by the store's
   * own clock plus `clockSkewMs`. For tests that drive time (leaseq/testing sets it); never in
   * production, where a caller whose clock runs ahead would take live leases. Default false.
   */
  trustCallerClock?: boolean;
  /** Default 24 h. */
  doneRetentionMs?: number;
  /** Default 7 days. */
  failedRetentionMs?: number;
  /**
   * The deployment declaring these settings (LEASEQ_DEPLOYMENT): the types in `policies` are its.
   * On a queue two or more deployments share, each keeps its own wake-up marks, and a task's
   * wake-up goes to the wake queue of the deployment running its type (docs/wake-ups.md). Default "".
   */
  deployment?: string;
  /** That deployment's wake queue URL, where the others send the wake-ups for its types. Default "". */
  wakeQueueUrl?: string;
}

/** The settings with defaults applied and checked. */
export type ResolvedSettings = Required<QueueSettings>;

/** Checks `settings`, naming the field, the range and the value; applies the defaults. */
export function resolveSettings(where: string, settings: QueueSettings = {}): ResolvedSettings {
  const policies: Record<string, LeasePolicy> = {};
  for (const [type, policy] of Object.entries(settings.policies ?? {})) {
    checkName(where, "policy type", type, LIMITS.typeMaxBytes);
    policies[type] = checkPolicy(`${where} policy "${type}"`, policy);
  }
  type IntegerSetting =
    | "maxPayloadBytes"
    | "maxErrorBytes"
    | "maxResultBytes"
    | "maxStalls"
    | "historyAttempts"
    | "clockSkewMs"
    | "doneRetentionMs"
    | "failedRetentionMs";
  const integer = (field: IntegerSetting, fallback: number, min: number, max: number) =>
    checkInteger(where, field, settings[field] ?? fallback, min, max);
  const typeGroups: Record<string, TypeGroupPolicy> = {};
  for (const [type, policy] of Object.entries(settings.typeGroups ?? {})) {
    checkName(where, "group policy type", type, LIMITS.typeMaxBytes);
    typeGroups[type] = checkGroupPolicy(`${where} group policy "${type}"`, policy);
  }
  const groups = settings.groups === undefined ? {} : checkQueueGroupPolicy(`${where} groups`, settings.groups);
  if (settings.acceptTypes !== undefined && !Array.isArray(settings.acceptTypes)) {
    throw new InvalidInputError(`${where}: acceptTypes must be an array of task types`);
  }
  const acceptTypes = [...new Set(settings.acceptTypes ?? [])].sort();
  for (const type of acceptTypes) {
    checkName(where, "accepted type", type, LIMITS.typeMaxBytes);
    if (type in policies) {
      throw new InvalidInputError(
        `${where}: acceptTypes: "${type}" has a policy already (a type is run or accepted, not both)`,
      );
    }
  }
  const deployment = settings.deployment ?? "";
  if (deployment !== "" && !DEPLOYMENT_PATTERN.test(deployment)) {
    throw new InvalidInputError(`${where}: deployment must be ${DEPLOYMENT_RULE}, got ${JSON.stringify(deployment)}`);
  }
  const wakeQueueUrl = settings.wakeQueueUrl ?? "";
  if (wakeQueueUrl !== "" && !WAKE_QUEUE_URL.test(wakeQueueUrl)) {
    throw new InvalidInputError(
      `${where}: wakeQueueUrl must be an http(s) URL of at most 1024 characters without spaces or commas, got ${JSON.stringify(wakeQueueUrl.slice(0, 100))}`,
    );
  }
  for (const flag of ["ordered", "strictTypes", "trustCallerClock"] as const) {
    if (settings[flag] !== undefined && typeof settings[flag] !== "boolean") {
      throw new InvalidInputError(`${where}: ${flag} must be true or false`);
    }
  }
  return {
    ordered: settings.ordered ?? false,
    policies,
    groups,
    typeGroups,
    strictTypes: settings.strictTypes ?? false,
    trustCallerClock: settings.trustCallerClock ?? false,
    acceptTypes,
    defaultPolicy: checkPolicy(`${where} defaultPolicy`, settings.defaultPolicy ?? DEFAULTS),
    maxPayloadBytes: integer("maxPayloadBytes", DEFAULTS.maxPayloadBytes, 1, LIMITS.payloadMaxBytes),
    maxErrorBytes: integer("maxErrorBytes", DEFAULTS.maxErrorBytes, 0, LIMITS.errorMaxBytes),
    maxResultBytes: integer("maxResultBytes", DEFAULTS.maxResultBytes, 0, LIMITS.resultMaxBytes),
    maxStalls: integer("maxStalls", DEFAULTS.maxStalls, 1, LIMITS.maxStallsMax),
    historyAttempts: integer("historyAttempts", DEFAULTS.historyAttempts, 0, LIMITS.historyAttemptsMax),
    clockSkewMs: integer("clockSkewMs", DEFAULTS.clockSkewMs, 0, LIMITS.clockSkewMaxMs),
    doneRetentionMs: integer("doneRetentionMs", DEFAULTS.doneRetentionMs, 0, LIMITS.retentionMaxMs),
    failedRetentionMs: integer("failedRetentionMs", DEFAULTS.failedRetentionMs, 0, LIMITS.retentionMaxMs),
    deployment,
    wakeQueueUrl,
  };
}

/** A wake queue URL the config may name (configure.lua checks the same). */
const WAKE_QUEUE_URL = /^https?:\/\/[A-Za-z0-9\-._~:/%]{1,1016}$/;

/** The config fields configure.lua writes for `settings`, and their revision (a digest of them). */
export function configFields(settings: ResolvedSettings): { revision: string; fields: string[] } {
  const policy = (p: LeasePolicy) => policyLine(p.leaseMs, p.maxAttempts);
  const pairs: Array<[string, string]> = [
    ["ordered", settings.ordered ? "1" : "0"],
    ["skewMs", String(settings.clockSkewMs)],
    ["doneRetentionMs", String(settings.doneRetentionMs)],
    ["failedRetentionMs", String(settings.failedRetentionMs)],
    ["maxPayloadBytes", String(settings.maxPayloadBytes)],
    ["maxErrorBytes", String(settings.maxErrorBytes)],
    ...(settings.maxStalls === DEFAULTS.maxStalls
      ? []
      : [["maxStalls", String(settings.maxStalls)] as [string, string]]),
    ...(settings.maxResultBytes === DEFAULTS.maxResultBytes
      ? []
      : [["maxResultBytes", String(settings.maxResultBytes)] as [string, string]]),
    ...(settings.historyAttempts === DEFAULTS.historyAttempts
      ? []
      : [["historyAttempts", String(settings.historyAttempts)] as [string, string]]),
    ["d", policy(settings.defaultPolicy)],
    ...(settings.strictTypes ? [["strictTypes", "1"] as [string, string]] : []),
    ...(settings.trustCallerClock ? [["callerClock", "1"] as [string, string]] : []),
    ...Object.keys(settings.policies)
      .sort()
      .map((type): [string, string] => [`p:${type}`, policy(settings.policies[type])]),
    ...settings.acceptTypes.map((type): [string, string] => [`a:${type}`, "1"]),
    // The deployment running each type, and its wake queue (docs/wake-ups.md).
    ...(settings.deployment === ""
      ? []
      : Object.keys(settings.policies)
          .sort()
          .map((type): [string, string] => [`n:${type}`, settings.deployment])),
    ...(settings.deployment !== "" && settings.wakeQueueUrl !== ""
      ? [[`u:${settings.deployment}`, settings.wakeQueueUrl] as [string, string]]
      : []),
    ...(Object.keys(settings.groups).length > 0 ? [["gd", groupPolicyText(settings.groups)] as [string, string]] : []),
    ...(settings.groups.onFailure === "hold" ? [["od", "hold"] as [string, string]] : []),
    ...Object.keys(settings.typeGroups)
      .sort()
      .flatMap(
        (type): Array<[string, string]> => [
          [`g:${type}`, groupPolicyText(settings.typeGroups[type])],
          ...(settings.typeGroups[type].onFailure === "hold" ? [[`o:${type}`, "hold"] as [string, string]] : []),
        ],
      ),
  ];
  const revision = createHash("sha256").update(JSON.stringify(pairs)).digest("hex").slice(0, 16);
  return { revision, fields: pairs.flatMap(([field, value]) => itemArgs("configure", { field, value })) };
}
