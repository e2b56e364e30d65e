/**
 * The keys a Redis store of the SQS stand-in writes, all under the prefix it is given (`<prefix>`)
 * and, but for the first, the queue's name (`<queue>`, e.g. `leaseq-local-dlq` or `orders.fifo`):
 *
 * | Key                              | Type   | Holds                                                                  |
 * |----------------------------------|--------|------------------------------------------------------------------------|
 * | `<prefix>:queues`                | set    | the names of the queues that have keys under the prefix                |
 * | `<prefix>:<queue>:messages`      | hash   | message id → JSON: body, attributes, sent time, arrival, group and     |
 * |                                  |        | deduplication ids, SequenceNumber, and its position in the queue       |
 * | `<prefix>:<queue>:deliveries`    | hash   | message id → JSON: `availableAtMs` (delay or visibility, epoch ms),    |
 * |                                  |        | `receiveCount`, `firstReceivedMs`                                      |
 * | `<prefix>:<queue>:deduplication` | hash   | FIFO: deduplication id → JSON: `sentMs`, and the `messageId` and       |
 * |                                  |        | `sequenceNumber` a repeated send answers; ids older than 5 minutes     |
 * |                                  |        | are deleted on the next send and when a broker opens                   |
 * | `<prefix>:<queue>:sequence`      | string | FIFO: the SequenceNumber the queue's next message gets                 |
 *
 * A message's two records are written when the queue takes it and deleted when it leaves (deleted,
 * redriven, moved, purged); a receive rewrites only the small delivery record. A queue holds as
 * many fields as messages, and its deduplication hash as many as sends in the last 5 minutes.
 */
export interface QueueKeys {
  messages: string;
  deliveries: string;
  deduplication: string;
  sequence: string;
}

/** The set of queue names under `prefix`. */
export const queuesKey = (prefix: string): string => `${prefix}:queues`;

/** The keys of one queue under `prefix`. */
export function queueKeys(prefix: string, queueName: string): QueueKeys {
  const key = (part: string) => `${prefix}:${queueName}:${part}`;
  return {
    messages: key("messages"),
    deliveries: key("deliveries"),
    deduplication: key("deduplication"),
    sequence: key("sequence"),
  };
}
