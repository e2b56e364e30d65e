import type { SQSBatchResponse, SQSRecord } from "aws-lambda";
import { InvalidInputError, ScriptArgumentError } from "../shared/errors.js";
import { mergeWakeTo } from "../shared/queue-context.js";
import type { TaskInput, WakeTo } from "../shared/types.js";
import type { DeadLetterSender } from "./dead-letter.js";
import { withFlowDefault } from "./flow-defaults.js";
import { atLastReceive, receivedText } from "./last-receive.js";
import { payloadPathsProblem } from "./schema.js";
import { bodyWithTaskIds, type RejectedTask, readRecord, traceparentOf } from "./sqs.js";
import type { TaskDeclaration } from "./tasks.js";
import { wakePartition } from "./wake-listen.js";
import type { Wake, WorkQueue } from "./work-queue.js";

/** What one ingest of an SQS batch did, for the invocation log and the batch response. */
export interface IngestResult {
  enqueued: number;
  duplicates: number;
  /** Tasks their throttle key's period dropped (nothing written for them). */
  throttled: number;
  /**
   * Records or tasks rejected as permanently invalid, and records held at their last receive, with
   * why (never a payload).
   */
  rejected: Array<{ messageId: string; reason: string; deadLettered: boolean }>;
  /**
   * Records SQS must deliver again: their invalid input could not reach the dead-letter queue, or
   * (FIFO) an earlier record of their message group is delivered again. One at its last receive is
   * moved to the dead-letter queue by the redrive policy instead.
   */
  failures: SQSBatchResponse["batchItemFailures"];
  /** The wake-ups the enqueues asked for (docs/wake-ups.md), the earliest per partition. */
  wakes: Wake[];
  /** The wake-ups they asked for on other deployments' wake queues (a shared queue), earliest per queue. */
  wakeTo: WakeTo[];
  /** Tasks enqueued that are ready now (no delay), new or not. */
  readyNow: number;
  /** Records that were wake-ups (`{}` or `{"leaseq":"wake"}`), read once with the rest. */
  wakeUps: number;
  /** The partition the first wake-up named (a partitioned queue's), if it named one. */
  wokenPartition: number | undefined;
}

export interface IngestOptions {
  queue: WorkQueue;
  tasks: TaskDeclaration;
  /** Where permanently invalid input goes at once; without it, such records fail until SQS's redrive. */
  deadLetters: DeadLetterSender | undefined;
  now: () => number;
}

/**
 * Enqueues the valid tasks of each record and sends what can never be valid to the dead-letter
 * queue at once (validation is deterministic: a retry would only fail again). Within a record the
 * valid tasks are enqueued and only the invalid ones dead-lettered, with the original message id and
 * their indexes; a redelivery then enqueues nothing twice (ids are derived from the message id).
 * A Redis failure is thrown, so the whole batch fails and SQS redelivers it.
 */
export async function ingest(records: SQSRecord[], options: IngestOptions): Promise<IngestResult> {
  const result: IngestResult = {
    enqueued: 0,
    duplicates: 0,
    throttled: 0,
    rejected: [],
    failures: [],
    wakes: [],
    wakeTo: [],
    readyNow: 0,
    wakeUps: 0,
    wokenPartition: undefined,
  };
  // A FIFO queue's group whose record must come again, and that record's id: the group's later
  // records wait with it, so no task of the group is enqueued ahead of one sent before it. A record
  // failing at its last receive holds nothing: it goes to the dead-letter queue (sent with its
  // reason, or moved by the redrive policy), never to Redis, as SQS's own redrive would do.
  const heldGroups = new Map<string, string>();
  const maxReceiveCount = options.deadLetters?.maxReceiveCount;
  const fail = (record: SQSRecord) => {
    result.failures.push({ itemIdentifier: record.messageId });
    const group = record.attributes?.MessageGroupId;
    if (group !== undefined && !heldGroups.has(group) && !atLastReceive(record, maxReceiveCount)) {
      heldGroups.set(group, record.messageId);
    }
  };
  const runnable = new Set([...Object.keys(options.tasks.types), ...options.tasks.acceptTypes]);
  const declared = [...runnable].join(", ");

  const deadLetter = async (
    record: SQSRecord,
    reason: string,
    content: { invalid: RejectedTask[] } | { body: string } = { body: record.body },
  ) => {
    let deadLettered = false;
    if (options.deadLetters) {
      const invalid = "invalid" in content ? content.invalid : undefined;
      const body = invalid
        ? JSON.stringify({ tasks: invalid.map((item) => item.task) })
        : (content as { body: string }).body;
      try {
        await options.deadLetters.send({ record, body, reason, taskIndexes: invalid?.map((item) => item.index) });
        deadLettered = true;
      } catch (error) {
        const next = atLastReceive(record, maxReceiveCount)
          ? "the redrive policy moves it to the dead-letter queue without this reason"
          : "SQS will deliver it again";
        reason = `${reason} (not dead-lettered: ${(error as Error).message}; ${next})`;
      }
    }
    result.rejected.push({ messageId: record.messageId, reason, deadLettered });
    if (!deadLettered) fail(record);
  };

  for (const record of records) {
    const group = record.attributes?.MessageGroupId;
    const holder = group === undefined ? undefined : heldGroups.get(group);
    if (holder !== undefined) {
      // Held at its last receive, it would be moved to the dead-letter queue without a reason.
      if (atLastReceive(record, maxReceiveCount)) {
        const reason = `held behind message ${holder} of its message group, which SQS delivers again, at its last receive (${receivedText(record, maxReceiveCount)}); none of its tasks was enqueued`;
        await deadLetter(record, reason, { body: bodyWithTaskIds(record) });
      } else fail(record);
      continue;
    }
    const intent = readRecord(record);
    if (intent.kind === "wake") {
      result.wakeUps++;
      result.wokenPartition ??= wakePartition(record.messageAttributes);
      continue;
    }
    if (intent.kind === "reject") {
      await deadLetter(record, intent.reason);
      continue;
    }
    const invalid = [...intent.rejected];
    // Each type's default flow control (docs/flow-control.md), for the tasks that carry none.
    const candidates = intent.tasks.flatMap((candidate) => {
      try {
        return [
          { ...candidate, task: withFlowDefault(options.tasks.types[candidate.task.type]?.flow, candidate.task) },
        ];
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
        invalid.push({
          index: candidate.index,
          task: candidate.sent,
          reason: `tasks[${candidate.index}]: ${error.message}`,
        });
        return [];
      }
    });
    const checks = options.queue.checkTasks(
      candidates.map((candidate) => candidate.task),
      { now: options.now() },
    );
    const payloads = await Promise.all(
      candidates.map(({ task }) =>
        payloadPathsProblem(task.type, options.tasks.types[task.type]?.schema, task.payload),
      ),
    );
    const valid = candidates.filter(({ index, task, sent }, i) => {
      // Well-formed first (the message names the field), then a type this worker runs, then a
      // payload its schema accepts.
      const problem =
        checks[i]?.replace(/^task \d+/, `tasks[${index}]`) ??
        (runnable.has(task.type)
          ? payloads[i] && `tasks[${index}]: ${payloads[i]}`
          : `tasks[${index}]: task type ${JSON.stringify(task.type)} is not declared by this worker; declared: ${declared}`);
      if (problem) invalid.push({ index, task: sent, reason: problem });
      return problem === undefined;
    });
    if (valid.length > 0) {
      try {
        const now = options.now();
        // The tasks store the context the message was sent in (docs/lambda.md#tracing).
        const { results, wakes, wakeTo } = await options.queue.enqueueAndWake(
          valid.map((item) => item.task),
          { now, traceparent: traceparentOf(record) },
        );
        mergeWakeTo(result.wakes, wakes);
        mergeWakeTo(result.wakeTo, wakeTo);
        result.readyNow += valid.filter(({ task }) => readyAt(task, now) <= now).length;
        result.enqueued += results.filter((r) => r.status === "ok").length;
        result.duplicates += results.filter((r) => r.status === "duplicate").length;
        result.throttled += results.filter((r) => r.status === "throttled").length;
      } catch (error) {
        // Checked above, so only a bound the script knows and TypeScript does not can land here.
        if (!(error instanceof InvalidInputError || error instanceof ScriptArgumentError)) throw error;
        await deadLetter(record, error.message);
        continue;
      }
    }
    if (invalid.length > 0) {
      invalid.sort((a, b) => a.index - b.index);
      const reason = invalid.map((item) => item.reason).join("; ");
      // A message with no valid task is dead-lettered as it was sent; otherwise only its invalid tasks.
      await deadLetter(record, reason, valid.length === 0 ? undefined : { invalid });
    }
  }
  return result;
}

/** When a task may first run. */
function readyAt(task: TaskInput, now: number): number {
  if (task.runAt !== undefined) return Number(task.runAt);
  return now + (task.delayMs ?? 0);
}
