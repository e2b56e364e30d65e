// Each operation script's contract, declared once: its arguments (ARGV, by name, in order, with
// their kind and bounds), the items that follow them, and its reply. From this table
// `npm run generate` writes each script's argument prologue (lua/lib/protocol.lua: `<name>_args()`
// checks and returns the fixed arguments in order) and docs/design.md's scripts table; `Queue`
// encodes every call and decodes every reply through it (./index.ts). Every call gets all the
// queue's keys (shared/keys.ts), in their order, so KEYS is the same for every operation.

/**
 * One fixed argument. `time`: ms since epoch, 0 .. TIME_MAX_MS (the prologue returns the number
 * and its text); `int`: an integer within [min, max] (a number, or the name of a constant of
 * shared/config.ts's LUA_CONSTANTS; `default` when it is absent); `flag`: 0 or 1 (a boolean); `name`: 1 to `max` characters of
 * A-Z a-z 0-9 _ . - ("" too when `optional`); `id`: a task id (1-128 characters of A-Z a-z 0-9 _ .
 * - : @, not ending in ":" and a lower-case letter); `callId`: the retry-safe call id, a name of 1-64
 * characters or "" (none); `choice`: one of `values` ("" too when `optional`); `text`: passed as
 * it is, checked by the script (`note` says what it must be).
 */
export type Arg = { name: string; note?: string } & (
  | { kind: "time" }
  | { kind: "int"; min: number | string; max: number | string; unit?: "ms"; default?: number }
  | { kind: "flag" }
  | { kind: "name"; max: number | string; optional?: boolean }
  | { kind: "id" }
  | { kind: "callId" }
  | { kind: "choice"; values: readonly string[]; optional?: boolean }
  | { kind: "text" }
);

/**
 * What follows the fixed arguments: `per` item, its `fields` (each "<name> (<note>)"). `more`: the
 * fields an item has besides, unless its field `when` is one of `except` (settle's retry and fail
 * carry a time and an error, an ack does not). `keys`: one argument more per item that has one,
 * after all the items (enqueue's flow keys). `npm run generate` writes, per operation, the Lua
 * readers `<name>_items(max, min)` (how many, checked), `<name>_item(i)` (the i-th item's fields,
 * in order; with `more`, `<name>_item(at)` from ARGV[at], its fields and where the next begins),
 * and `<name>_key(n, j)`; no script indexes ARGV itself (test/shared/protocol.test.ts).
 */
export type Items = {
  per: string;
  fields: readonly string[];
  note?: string;
  more?: { when: string; except: readonly string[]; fields: readonly string[] };
  keys?: string;
};

/**
 * A reply: `head` values, then `rows` of `fields` (`per` one of them), then `tail` values. Each
 * field is "<name>" or "<name> (<what it holds>)": the name is what `Queue` decodes it by, the
 * whole text what docs/design.md shows. `note` follows in the docs.
 */
export type Reply = {
  head?: readonly string[];
  per?: string;
  fields?: readonly string[];
  tail?: readonly string[];
  note?: string;
};

export type Operation = { args: readonly Arg[]; items?: Items; reply: Reply };

const now = { name: "now", kind: "time" } as const;
const callId = { name: "callId", kind: "callId" } as const;
const limit = { name: "limit", kind: "int", min: 1, max: "MAINTENANCE_MAX" } as const;
const ids = { per: "id", fields: ["id"], note: "1..1000 of them" } as const;
const WAKE_AT = 'wakeAt (the time to send a wake-up for, or `""`)';
/** A reply's wake-ups when they may be for several deployments' wake queues. */
const WAKE_UPS =
  'wakeAt (`"<ms>"` for the caller\'s wake queue, then `",<ms> <url>"` per other deployment\'s of a shared queue; `""` when none)';
/** The caller's deployment: on a queue shared by deployments, whose wake-up marks it uses. */
const deployment = {
  name: "deployment",
  kind: "name",
  max: "OWNER_MAX_BYTES",
  optional: true,
  note: 'the caller\'s (LEASEQ_DEPLOYMENT), or `""`: on a shared queue, whose wake-up marks ([wake-ups.md](wake-ups.md))',
} as const;
/** The values of stats, in order (tick answers them too). */
const STATS = [
  "ready (parked included)",
  "scheduled",
  "leased",
  "done",
  "failed",
  "oldestReadyAgeMs",
  "mostOverdueLeaseMs",
  "dueScheduled",
  "corrupt",
  "paused (1/0)",
  "pauses (paused types, comma-separated)",
  "oldestWaitingAgeMs (parked tasks included)",
] as const;

export const OPERATIONS = {
  configure: {
    args: [{ name: "revision", kind: "text", note: "the declaration's digest, 1-64 hex characters" }, now],
    items: { per: "setting", fields: ["field", "value"] },
    reply: {
      head: ["changed (1, or 0: already this revision)"],
      note: "a type the declaration no longer runs or accepts is retired, its fields kept a day (`r:<type>`, [deploy.md](deploy.md))",
    },
  },
  enqueue: {
    args: [
      now,
      callId,
      {
        name: "flows",
        kind: "text",
        note: '`""` for none; else runs covering the tasks, `"<count>:-"` or `"<count>:<m>|<a>|<b>"`, joined by `,`; a key per task with a flow follows the tasks ([flow-control.md](flow-control.md))',
      },
    ],
    items: {
      per: "task",
      fields: ["id", "priority (-1000..1000)", "runAtMs", "body"],
      keys: "flowKey (one per task with a flow, after the tasks)",
    },
    reply: {
      per: "task",
      fields: [
        "status (0, 5, 11)",
        'state (`R`/`S`, or a duplicate\'s, `C` if quarantined, `""` if gone or throttled)',
        'other (the task a dedupe found or a debounce or singleton replaced, or `""`)',
      ],
      tail: [WAKE_UPS],
    },
  },
  claim: {
    args: [
      now,
      { name: "count", kind: "int", min: 1, max: "CLAIM_MAX" },
      { name: "maxLeaseMs", kind: "int", min: 1, max: "LEASE_MAX_MS", unit: "ms" },
      { name: "claimId", kind: "name", max: 64 },
      { name: "repeat", kind: "flag", note: "1: may repeat an earlier call of this claim id" },
      { name: "promoteLimit", kind: "int", min: 1, max: "MAINTENANCE_MAX" },
      { name: "types", kind: "text", note: 'the caller\'s, comma-separated, or `""`: any' },
      {
        name: "busy",
        kind: "flag",
        note: "1: the caller runs other tasks now (a solo task is left for one running none)",
      },
      {
        name: "room",
        kind: "text",
        note: 'the caller\'s types it may lease only so many more of, `"<type>:<n>"` comma-separated, or `""`',
      },
      {
        name: "woken",
        kind: "flag",
        note: "1: a wake-up brought this claim (an invocation's first, or a free slot's that took one); it answers it",
      },
      {
        name: "lingers",
        kind: "flag",
        note: "1: the caller looks again soon if this claim leases nothing (an empty claim marks it active); 0: it handed off",
      },
    ],
    reply: {
      per: "task in rank order",
      fields: [
        "id",
        "body",
        "attempt",
        "token",
        "deadline (the lease's)",
        'solo (`1`: it stalled twice, run it alone; or `""`)',
        "readySince (ms: since when it was READY when this claim leased it; its queue wait is now minus it)",
      ],
      tail: [
        'next (when none was leased: the next due time, or `""`)',
        "soloWaiting (`1`: a solo task waits for a caller running nothing)",
        WAKE_AT,
      ],
      note: "a solo task comes alone",
    },
  },
  settle: {
    args: [now],
    items: {
      per: "item",
      fields: [
        "id",
        "token",
        "outcome (`ack`, `retry`, `fail`, or `done`: an ack keeping a result, its retryAtMs `0` and its error the result)",
      ],
      more: {
        when: "outcome",
        except: ["ack"],
        fields: ["retryAtMs", "error"],
      },
    },
    reply: { per: "item", fields: ["status (0, 1, 2, 3, 6)", "state (after: `D`/`S`/`R`/`F`, `C` when quarantined)"] },
  },
  extend: {
    args: [now],
    items: {
      per: "item",
      fields: ["id", "token", "leaseMs", 'progress (JSON text the handler reported since the last heartbeat, or `""`)'],
    },
    reply: {
      per: "item",
      fields: ["status (0, 1, 2, 3, 6)", "deadline (the new one)"],
      note: "an unreadable one set aside (6)",
    },
  },
  release: {
    args: [now],
    items: { per: "item", fields: ["id", "token"] },
    reply: {
      per: "item",
      fields: ["status (0, 1, 2, 3, 6)"],
      note: "READY again, rank kept, attempt given back (a confirmed lease keeps it, and ends FAILED at its last), token revoked; an unreadable one set aside (6)",
    },
  },
  reclaim: {
    args: [now, limit],
    reply: {
      per: "task",
      fields: ["id", 'letter (`R`: READY, rank kept, solo; `F`: "lease expired after attempt n of m")'],
    },
  },
  promote: { args: [now, limit], reply: { head: ["promoted"] } },
  trim: {
    args: [
      now,
      limit,
      { name: "doneRetentionMs", kind: "int", min: -1, max: "RETENTION_MAX_MS", unit: "ms", note: "-1: the config's" },
      {
        name: "failedRetentionMs",
        kind: "int",
        min: -1,
        max: "RETENTION_MAX_MS",
        unit: "ms",
        note: "-1: the config's",
      },
    ],
    reply: { head: ["doneTrimmed", "failedTrimmed"] },
  },
  stats: { args: [now], reply: { head: STATS } },
  tick: {
    args: [
      now,
      limit,
      { name: "wakeHorizonMs", kind: "int", min: 0, max: "WAKE_HORIZON_MAX_MS", unit: "ms", default: 0 },
      callId,
      deployment,
    ],
    reply: {
      head: [
        "reclaimed",
        "reclaimFailed",
        "promoted",
        "doneTrimmed",
        "failedTrimmed",
        ...STATS,
        WAKE_AT,
        'planAt (when the first schedule is due for planning, `""` when none is)',
        "finishedDone (tasks that finished DONE since the previous tick counted them, config `finishedTo`)",
        "finishedFailed (the same for FAILED)",
      ],
    },
  },
  handoff: {
    args: [
      now,
      { name: "horizonMs", kind: "int", min: 0, max: "WAKE_HORIZON_MAX_MS", unit: "ms" },
      { name: "cutOff", kind: "flag", note: "1: the worker's time ran out" },
      callId,
      { name: "woken", kind: "flag", note: "1: a wake-up started the worker and no claim of it answered it" },
      deployment,
    ],
    reply: { head: [WAKE_AT], note: "([wake-ups.md](wake-ups.md))" },
  },
  inspect: {
    args: [{ name: "id", kind: "id" }],
    reply: {
      head: [
        "state",
        "type",
        "group",
        "priority",
        "attempts",
        "maxAttempts",
        "at (`queue.admin.inspect` names it for the state: readySince, dueAt, leaseDeadline, finishedAt, setAsideAt)",
        "lastError",
        "payload",
        "rank",
        "enqueuedAtMs",
        "stalls (leases that ran out while held)",
        'holding (`1`: a FAILED task its ordered group waits behind; or `""`)',
        'run (the current or last attempt\'s `<started>,<readySince>`, `""` before the first)',
        "history (its attempts that ended other than DONE, `<id>:h`: [storage.md](storage.md))",
        'result (DONE: the result its ack kept, JSON text; else `""`)',
        'progress (what its handler last reported with a heartbeat, JSON text; or `""`)',
        'trace (the W3C traceparent its body keeps, while it has one: not once DONE; or `""`)',
      ],
      note: "`[]` for an unknown id",
    },
  },
  requeue: {
    args: [now],
    items: ids,
    reply: { per: "id", fields: ["status (0, 2, 3, 4, 6)"], note: "FAILED → READY, rank kept, attempts reset" },
  },
  amend: {
    args: [
      now,
      { name: "id", kind: "id" },
      { name: "payload", kind: "text", note: "the new payload's JSON text, at most `maxPayloadBytes`" },
      { name: "note", kind: "text", note: "0-200 bytes: who changed it and how, kept in its history" },
    ],
    reply: { head: ["status (0, 3, 4, 6)"], note: "FAILED → READY with the new payload, rank kept, attempts reset" },
  },
  list: {
    args: [
      { name: "state", kind: "choice", values: ["ready", "scheduled", "leased", "done", "failed", "corrupt"] },
      { name: "offset", kind: "int", min: 0, max: 1_000_000_000 },
      { name: "limit", kind: "int", min: 1, max: 1000 },
    ],
    reply: {
      per: "task",
      fields: ["id", "score", "type", "attempts", "lastError (the reason, for corrupt)", "group"],
      note: "`ready` lists the parked tasks after the ready set",
    },
  },
  repair: {
    args: [now],
    items: ids,
    reply: {
      per: "id",
      fields: ["status (0, 3, 7)"],
      note: "a quarantined task READY again when its body can be read",
    },
  },
  delete: {
    args: [
      { ...now, note: "0: none" },
      {
        name: "state",
        kind: "choice",
        values: ["ready", "scheduled", "done", "failed", "corrupt"],
        optional: true,
        note: "the state a filter found the tasks in",
      },
    ],
    items: ids,
    reply: {
      per: "id",
      fields: ["status (0, 3, 8, 10)"],
      note: "deleted, unknown, LEASED (refused), no longer in that state (nothing changed)",
    },
  },
  drop: {
    args: [
      { name: "confirm", kind: "text", note: "the queue's name" },
      { name: "name", kind: "text" },
      {
        name: "only",
        kind: "choice",
        values: ["drained"],
        optional: true,
        note: '`"drained"`: only when no task waits or runs there (a shrink\'s partition); `""`: whatever it holds',
      },
    ],
    reply: { head: ["deleted (keys; UNLINK frees them in the background), or -1: tasks wait or run (only drained)"] },
  },
  pause: {
    args: [
      now,
      { name: "action", kind: "choice", values: ["pause", "resume"] },
      { name: "type", kind: "name", max: "TYPE_MAX_BYTES", optional: true, note: '`""`: the queue' },
      callId,
    ],
    reply: {
      head: ["changed (1/0)", WAKE_UPS],
      note: "a resume with work ready now or falling due within 15 minutes answers a wake-up time",
    },
  },
  cancel: {
    args: [now],
    items: ids,
    reply: {
      per: "id",
      fields: ["status (0, 2, 3, 6, 9)"],
      note: 'READY, SCHEDULED or LEASED → FAILED "cancelled", generation + 1',
    },
  },
  skip: {
    args: [now],
    items: ids,
    reply: {
      per: "id",
      fields: ["status (0, 3, 4, 6, 12)"],
      note: "a FAILED task its ordered group waits behind (onFailure hold): the group goes on, the task stays FAILED",
    },
  },
  history: {
    args: [now, { name: "minutes", kind: "int", min: 1, max: "HISTORY_MINUTES_MAX" }],
    reply: {
      head: ["start (the first minute's)"],
      per: "minute",
      fields: ["done", "failed"],
      note: "`ZCOUNT` of the finish times",
    },
  },
  groups: {
    args: [
      { name: "cursor", kind: "text", note: 'an HSCAN cursor, `"0"` to start' },
      { name: "count", kind: "int", min: 1, max: 1000 },
    ],
    reply: {
      head: ['cursor (the next, `""` at the end)'],
      per: "group",
      fields: [
        "type",
        "group",
        "leased",
        "ready",
        "parked",
        'held (the FAILED task an ordered group waits behind, or `""`)',
        'parkedSince (when its next parked task became READY, ms; `""` when none is parked)',
      ],
    },
  },
  plan: {
    args: [
      now,
      { name: "horizonMs", kind: "int", min: 0, max: "WAKE_HORIZON_MAX_MS", unit: "ms" },
      { ...callId, note: "a tick's (\"tick-...\"): the wake-up it arranges is trusted as the tick's own" },
    ],
    items: {
      per: "schedule",
      fields: [
        "name",
        "revision (the definition's the caller planned from)",
        "from (the cursor the caller read: the slots are after it)",
        "to (the cursor after this call: every slot up to it is made or passed over)",
        "next (when the schedule is next planned: its first slot after `to`)",
        "priority (-1000..1000)",
        'flags (`k`: overlap skip, or `""`)',
        'body (`"1|<enqueuedAtMs>|<type>|<group>|<trace>|<payload>"`)',
        'slots (`"<runAtMs> <id> ..."`, at most SCHEDULE_SLOTS_MAX pairs, or `""`)',
        "passedOver (slots missed and not caught up)",
      ],
      note: "at most PLAN_ITEMS_MAX of them",
    },
    reply: {
      per: "schedule",
      fields: [
        "made (tasks made, or -1: stale, another planner or a change came first, or -2: it passes over slots and `now` is later than the store's clock plus the skew)",
      ],
      tail: [WAKE_UPS],
    },
  },
  schedules: {
    args: [
      { name: "until", kind: "time", note: "the schedules whose next planning is due by then" },
      { name: "all", kind: "flag", note: "1: every schedule, paused ones too (`until` ignored)" },
      { name: "offset", kind: "int", min: 0, max: 1_000_000_000 },
      { name: "count", kind: "int", min: 1, max: 1000 },
    ],
    reply: {
      head: [
        "time (the store's clock, ms, the planner plans at no later time; `\"\"` when the queue trusts its callers' clocks)",
      ],
      per: "schedule",
      fields: [
        "name",
        "definition (JSON)",
        "revision",
        "cursor (slots up to it are made or passed over)",
        "next (when it is next planned)",
        "paused (1/0)",
        'owner (the deployment that declared it, `"1"` one declared before owners were kept, `""` a run-time one)',
        'lastId (its last slot\'s task, or `""`)',
        'lastState (that task\'s state letter, `""` when it is gone)',
        "made (slots made into tasks, in all)",
        "passedOver (slots missed, or skipped by overlap, in all)",
        'aside (why the planner set it aside, or `""`)',
      ],
      note: "in the order of their next planning",
    },
  },
  schedule: {
    args: [
      now,
      { name: "action", kind: "choice", values: ["set", "remove", "retire", "pause", "resume", "aside"] },
      { name: "name", kind: "name", max: "SCHEDULE_NAME_MAX_BYTES" },
      {
        name: "revision",
        kind: "text",
        note: "set: the definition's digest, 1-64 hex characters; aside: the one the planner read",
      },
      {
        name: "definition",
        kind: "text",
        note: "set: the canonical JSON; aside: why (what the planner could not compute)",
      },
      {
        name: "owner",
        kind: "name",
        max: "OWNER_MAX_BYTES",
        optional: true,
        note: 'the deployment whose task declaration sets it (a cold start), or `""`: a run-time caller',
      },
    ],
    reply: {
      head: [
        "status (0 done, 1 unchanged, 3 unknown schedule, 4 declared: a run-time caller may not set it, 5 another deployment's)",
        "cursor",
        'owner (the deployment that declared it, or `""`)',
      ],
      note: "a new schedule's cursor is now (or the one a removed schedule of the name left); a changed one keeps its cursor; `retire` (a cold start's, of a schedule its deployment no longer declares) removes it as `remove` does, only when the caller owns it, and a `set` by the same owner within a day takes it back at its cursor; `aside` (the planner's, of a schedule it cannot compute) keeps it unplanned with its reason until a `set` changes it, unless its revision is no longer the one read",
    },
  },
  check: {
    args: [
      now,
      { name: "cursor", kind: "text", note: '`""` to start' },
      { name: "count", kind: "int", min: 1, max: "CHECK_PAGE_MAX" },
      { name: "repair", kind: "flag" },
    ],
    reply: {
      head: ['cursor (to go on from, `""` at the end)'],
      per: "problem",
      fields: ["code", "subject", "detail", "repaired (1/0)"],
      note: "([Checking a queue](#checking-a-queue))",
    },
  },
} as const satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATIONS;

/** A field's name: its text up to the first space ("status (0, 5)" is `status`). */
export function fieldName(field: string): string {
  return field.split(" ")[0];
}
