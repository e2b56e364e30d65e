import { Token } from "aws-cdk-lib";
import { LEASE_QUEUE_DEFAULTS, type LeaseQueueProps } from "./props.js";

/** `failedRateAlarm` with its defaults applied. */
export interface FailedRateAlarmSettings {
  percent: number;
  periodMinutes: number;
  minFailed: number;
}

/** `functionAlarms` with its defaults applied. */
export interface FunctionAlarmSettings {
  errorPercent: number;
  throttlePercent: number;
  breachingMinutes: number;
  windowMinutes: number;
}

/** The alarm thresholds, defaults applied; `false` where the user turned an alarm off. */
export interface AlarmSettings {
  oldestWaitingAgeAlarmMs: number;
  leaseOverdueAlarmMs: number;
  failedRateAlarm: FailedRateAlarmSettings | false;
  functionAlarms: FunctionAlarmSettings | false;
}

/** CloudWatch evaluates an alarm over at most a day; the failed-rate window is one period. */
const MAX_PERIOD_MINUTES = 1440;
const MAX_WINDOW_MINUTES = 60;
const MAX_MIN_FAILED = 1_000_000;

const shown = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : String(value));

/**
 * Checks the alarm props against their ranges, pushing each problem to `problems` (the caller throws
 * them all in one LeaseQueuePropsError), and applies the defaults. `reclaimMinutes` is the reclaim
 * schedule: the queue metrics come once per run, so the failed-rate window holds whole runs.
 */
export function checkAlarms(props: LeaseQueueProps, reclaimMinutes: number, problems: string[]): AlarmSettings {
  const integer = (prop: string, value: unknown, min: number, max: number, unit = ""): number => {
    if (Token.isUnresolved(value)) return value as number;
    if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
      problems.push(`${prop} must be an integer from ${min} to ${max}${unit}, got ${shown(value)}`);
    }
    return value as number;
  };
  // A percent the alarm fires *above*: 100 could never be exceeded.
  const percent = (prop: string, value: unknown): number => {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value >= 100) {
      problems.push(
        `${prop} must be a number from 0 up to (not including) 100: the alarm fires above it, got ${shown(value)}`,
      );
    }
    return value as number;
  };
  /** The object given for `prop`, or undefined when it is not one; either problem, and each unknown field, reported. */
  const fieldsOf = <T extends object>(prop: string, value: unknown, allowed: readonly string[]): T | undefined => {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      problems.push(`${prop} must be false (no such alarm) or an object of ${allowed.join(", ")}, got ${shown(value)}`);
      return undefined;
    }
    const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
    for (const key of unknown) problems.push(`${prop} has no field "${key}"; its fields: ${allowed.join(", ")}`);
    return value as T;
  };

  const waitingAge = (): number => {
    const { oldestWaitingAgeAlarmMs, oldestReadyAgeAlarmMs } = props;
    if (oldestWaitingAgeAlarmMs !== undefined && oldestReadyAgeAlarmMs !== undefined) {
      problems.push(
        `oldestWaitingAgeAlarmMs and oldestReadyAgeAlarmMs (its former name) are exclusive: give oldestWaitingAgeAlarmMs only, got both (oldestReadyAgeAlarmMs ${shown(oldestReadyAgeAlarmMs)})`,
      );
    }
    if (oldestWaitingAgeAlarmMs === undefined && oldestReadyAgeAlarmMs !== undefined) {
      return integer("oldestReadyAgeAlarmMs", oldestReadyAgeAlarmMs, 1000, 86_400_000, " ms");
    }
    const value = oldestWaitingAgeAlarmMs ?? LEASE_QUEUE_DEFAULTS.oldestWaitingAgeAlarmMs;
    return integer("oldestWaitingAgeAlarmMs", value, 1000, 86_400_000, " ms");
  };

  const failedRate = (): FailedRateAlarmSettings | false => {
    if (props.failedRateAlarm === false) return false;
    const D = LEASE_QUEUE_DEFAULTS.failedRateAlarm;
    const given = fieldsOf<Partial<FailedRateAlarmSettings>>(
      "failedRateAlarm",
      props.failedRateAlarm === undefined ? {} : props.failedRateAlarm,
      ["percent", "periodMinutes", "minFailed"],
    );
    if (given === undefined) return false;
    // The default window, 15 minutes, rounded up to whole reclaimer runs (20 with a 10-minute schedule).
    const defaultPeriod = Math.max(1, Math.ceil(D.periodMinutes / reclaimMinutes)) * reclaimMinutes;
    const periodMinutes = given.periodMinutes ?? defaultPeriod;
    if (
      !Token.isUnresolved(periodMinutes) &&
      (!Number.isInteger(periodMinutes) ||
        periodMinutes < reclaimMinutes ||
        periodMinutes > MAX_PERIOD_MINUTES ||
        periodMinutes % reclaimMinutes !== 0)
    ) {
      problems.push(
        `failedRateAlarm.periodMinutes must be whole minutes from ${reclaimMinutes} to ${MAX_PERIOD_MINUTES}, a multiple of reclaimSchedule (${reclaimMinutes} min: each window holds whole reclaimer runs), got ${shown(periodMinutes)}`,
      );
    }
    return {
      percent: percent("failedRateAlarm.percent", given.percent ?? D.percent),
      periodMinutes,
      minFailed: integer("failedRateAlarm.minFailed", given.minFailed ?? D.minFailed, 1, MAX_MIN_FAILED),
    };
  };

  const functions = (): FunctionAlarmSettings | false => {
    if (props.functionAlarms === false) return false;
    const D = LEASE_QUEUE_DEFAULTS.functionAlarms;
    const given = fieldsOf<Partial<FunctionAlarmSettings>>(
      "functionAlarms",
      props.functionAlarms === undefined ? {} : props.functionAlarms,
      ["errorPercent", "throttlePercent", "breachingMinutes", "windowMinutes"],
    );
    if (given === undefined) return false;
    const windowMinutes = integer(
      "functionAlarms.windowMinutes",
      given.windowMinutes ?? D.windowMinutes,
      1,
      MAX_WINDOW_MINUTES,
    );
    // A window refused above is reported there; breachingMinutes is then held to the widest one.
    const windowValid = Number.isInteger(windowMinutes) && windowMinutes >= 1 && windowMinutes <= MAX_WINDOW_MINUTES;
    const breachingMax = windowValid ? windowMinutes : MAX_WINDOW_MINUTES;
    return {
      errorPercent: percent("functionAlarms.errorPercent", given.errorPercent ?? D.errorPercent),
      throttlePercent: percent("functionAlarms.throttlePercent", given.throttlePercent ?? D.throttlePercent),
      breachingMinutes: integer(
        "functionAlarms.breachingMinutes",
        given.breachingMinutes ?? Math.min(D.breachingMinutes, breachingMax),
        1,
        breachingMax,
        " (at most windowMinutes)",
      ),
      windowMinutes,
    };
  };

  return {
    oldestWaitingAgeAlarmMs: waitingAge(),
    leaseOverdueAlarmMs: integer(
      "leaseOverdueAlarmMs",
      props.leaseOverdueAlarmMs ?? 2 * reclaimMinutes * 60_000,
      1000,
      86_400_000,
      " ms",
    ),
    failedRateAlarm: failedRate(),
    functionAlarms: functions(),
  };
}
