// A group's record and a type's group policy, declared once (docs/groups.md, docs/storage.md
// "Groups"). `npm run generate` derives from these tables the patterns lua/lib/lanes.lua reads them
// with and the function that writes a record (lua/lib/protocol.lua); settings.ts writes a policy and
// the test oracles read both through the same declarations.
import { type Field, recordPattern } from "./record.js";

/**
 * The record of a lane ("<type>|<group>"), of a type ("@<type>": its rate window and the tasks set
 * aside while it may not run) and of the tasks without a group ("|"): the groups hash's field of that
 * name, its fields in this order, "|" between them. The fields after `slots` are written only when
 * `parked` or `count` is not 0 (LANE_TAIL_WHEN), and `ahead` only when it names a task (so a record
 * without a list reads as the build before `ahead` wrote it); a record without them reads them as
 * their initial.
 */
export const LANE_FIELDS = {
  ready: {
    kind: "digits",
    maxDigits: 15,
    meaning: "the group's READY tasks, parked ones included: what `groups` shows",
  },
  last: {
    kind: "digit list",
    meaning: "the group's last turn per priority, as the ready-set score it gave: at most 4 scores, the newest first",
  },
  slots: {
    kind: "id list",
    meaning:
      "the ids of the tasks using the group's slots: leases (a group with a concurrency), an ordered group's retry keeping its place (S, flag h), and tasks let out, not claimed yet (R or W, flag u)",
  },
  parked: { kind: "digits", maxDigits: 15, initial: "0", meaning: "the tasks in `grouped` under this name" },
  window: {
    kind: "digits",
    maxDigits: 15,
    initial: "0",
    meaning: "the start (ms) of the rate window; a window never moves backwards",
  },
  count: { kind: "digits", maxDigits: 15, initial: "0", meaning: "the claims counted in the rate window" },
  ahead: {
    kind: "id list",
    initial: "",
    meaning:
      'the group\'s first parked tasks, in the order of `grouped` (each the part of its member after the group: its rank as 16 digits, a NUL byte, its id; "," between them; at most AHEAD_MAX of lua/lib/lanes.lua, empty when not known): a step that lets tasks out takes them from here instead of reading `grouped`, which it reads again only when this runs short',
  },
} as const satisfies Record<string, Field>;

export type LaneField = keyof typeof LANE_FIELDS;

/** The name of the lane of the tasks without a group (a type and a group, both empty). */
export const UNGROUPED_LANE = "|";

/** The last field a short record holds, and the fields whose value other than 0 makes it long. */
export const LANE_HEAD_THROUGH = "slots" satisfies LaneField;
export const LANE_TAIL_WHEN = ["parked", "count"] as const satisfies readonly LaneField[];

/**
 * A type's group policy: config field `g:<type>`, else the queue's `gd`; its fields in this order,
 * "," between them. 0 means no limit.
 */
export const GROUP_POLICY_FIELDS = {
  concurrency: { kind: "digits", meaning: "tasks of one group running at once" },
  ordered: { kind: "digits", meaning: "1: a group runs its tasks one at a time, in order" },
  rateMax: { kind: "digits", meaning: "claims per group per rate window" },
  rateMs: { kind: "digits", meaning: "the group's rate window (ms)" },
  typeRateMax: { kind: "digits", meaning: "claims of the type, across its groups, per window" },
  typeRateMs: { kind: "digits", meaning: "the type's rate window (ms)" },
} as const satisfies Record<string, Field>;

export type GroupPolicyField = keyof typeof GROUP_POLICY_FIELDS;

const laneNames = Object.keys(LANE_FIELDS) as LaneField[];
const policyNames = Object.keys(GROUP_POLICY_FIELDS) as GroupPolicyField[];

/**
 * The patterns the scripts read a group record and a policy with, by their Lua names. A record of
 * any form (short, long, long with its list, or long as written before `ahead`) is read with the
 * first two (lua/lib/lanes.lua lane_fields), as parseLane reads it.
 */
export const groupPatterns = () => ({
  /**
   * Any lane record's fields through LANE_HEAD_THROUGH, and where they end: the end of a short
   * record, or the separator LANE_COUNTS_PATTERN reads a long one's counts from (one pass over the
   * record, where trying the short form first would fail on a long one after backtracking over it).
   */
  LANE_FRONT_PATTERN: recordPattern(LANE_FIELDS, {
    reads: Object.fromEntries(laneNames.map((name) => [name, "take"])),
    through: LANE_HEAD_THROUGH,
    end: "()",
  }),
  /** A long lane record's fields after LANE_HEAD_THROUGH through `count`, read from the separator before them. */
  LANE_COUNTS_PATTERN: recordPattern(LANE_FIELDS, {
    reads: Object.fromEntries(laneNames.map((name) => [name, "take"])),
    from: "parked",
    through: "count",
    prefix: "|",
    end: "()",
  }),
  GROUP_POLICY_PATTERN: recordPattern(GROUP_POLICY_FIELDS, {
    reads: { ...Object.fromEntries(policyNames.map((name) => [name, "take"])), ordered: { lua: "([01])" } },
    through: "typeRateMs",
    end: "$",
    separator: ",",
  }),
});

/** A lane record's fields by name (the tail's as 0 when the record is short), or undefined. */
export function parseLane(text: string): Record<LaneField, string> | undefined {
  const parts = text.split("|");
  // Every field, the fields through LANE_HEAD_THROUGH, or every field but `ahead` (as written before it).
  const lengths = [laneNames.length, laneNames.indexOf(LANE_HEAD_THROUGH) + 1, laneNames.length - 1];
  if (!lengths.includes(parts.length)) return undefined;
  return Object.fromEntries(
    laneNames.map((name, i) => [name, parts[i] ?? (LANE_FIELDS[name] as { initial?: string }).initial ?? ""]),
  ) as Record<LaneField, string>;
}

/** A policy's text, as config g:<type> and gd hold it. */
export function groupPolicyLine(policy: Record<GroupPolicyField, number>): string {
  return policyNames.map((name) => String(policy[name])).join(",");
}

/** A policy's fields by name, as numbers, or undefined. */
export function parseGroupPolicy(text: string): Record<GroupPolicyField, number> | undefined {
  const parts = text.split(",");
  if (parts.length !== policyNames.length) return undefined;
  return Object.fromEntries(policyNames.map((name, i) => [name, Number(parts[i])])) as Record<GroupPolicyField, number>;
}
