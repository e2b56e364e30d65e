import {
  GetQueueAttributesCommand,
  ListDeadLetterSourceQueuesCommand,
  ListMessageMoveTasksCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";
import type { Command } from "commander";
import { DEAD_LETTER_ATTRIBUTES } from "../functions/dead-letter.js";
import { UsageError } from "./errors.js";
import { counted, printResult } from "./output.js";
import { integer } from "./parse.js";

interface DlqOptions {
  dlqUrl?: string;
}

/**
 * An SQS client (the dead-letter queue's, the worker queue's for a wake-up). LEASEQ_SQS_ENDPOINT points it at a local stand-in (with
 * placeholder credentials); otherwise the SDK's usual chain applies (AWS_PROFILE, AWS_REGION, and
 * AWS_ENDPOINT_URL_SQS, which it reads itself).
 */
export function sqsClient(env: NodeJS.ProcessEnv = process.env): SQSClient {
  if (!env.LEASEQ_SQS_ENDPOINT) return new SQSClient({});
  return new SQSClient({
    endpoint: env.LEASEQ_SQS_ENDPOINT,
    region: env.AWS_REGION ?? "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
}

function dlqUrl(options: DlqOptions, env: NodeJS.ProcessEnv = process.env): string {
  const url = options.dlqUrl ?? env.LEASEQ_DLQ_URL;
  if (!url) throw new UsageError("no dead-letter queue given: pass --dlq-url URL or set LEASEQ_DLQ_URL");
  return url;
}

const attribute = (message: Message, name: string) => message.MessageAttributes?.[name]?.StringValue;

/**
 * What `show` says of a message the redrive policy moved (no LeaseqReason: a function that failed
 * at its last receive before it could say why, or one without LEASEQ_MAX_RECEIVE_COUNT). The receive
 * count goes on in the dead-letter queue: this receive is taken off, earlier `show`s are not.
 */
function noReason(message: Message): string {
  const received = Number(message.Attributes?.ApproximateReceiveCount ?? 0) - 1;
  const times = received > 0 ? counted(received, "time") : "an unknown number of times";
  return `no reason recorded: received ${times} (the function failed each time; see its logs)`;
}

/** Registers `dlq show` and `dlq redrive`: looking into the dead-letter queue, and sending its messages back. */
export function dlqCommands(program: Command): void {
  const dlq = program
    .command("dlq")
    .description("inspect the dead-letter queue and redrive it (through @aws-sdk/client-sqs)")
    .option(
      "--dlq-url <url>",
      "the dead-letter queue's URL (default: $LEASEQ_DLQ_URL; the stack output DeadLetterQueueUrl)",
    )
    .addHelpText(
      "after",
      `
Examples:
  leaseq dlq show --dlq-url https://sqs.eu-west-1.amazonaws.com/123456789012/Leaseq-DeadLetterQueue-abc
  leaseq dlq redrive --wait`,
    );

  dlq
    .command("show")
    .description("list dead-lettered messages with why they are there, without taking them off the queue")
    .option("--max <n>", "most messages to show", integer(1, 1000), 50)
    .option("--body", "print each message body too")
    .option("--json", "print the messages as JSON lines")
    .action(async (options: { max: number; body?: boolean; json?: boolean }, command: Command) => {
      const url = dlqUrl(command.optsWithGlobals());
      const client = sqsClient();
      const seen = new Map<string, Message>();
      // SQS has no peek: receive with a visibility timeout of 0, so nothing is hidden from the
      // queue's own consumers, until no new message comes back.
      for (let empty = 0; seen.size < options.max && empty < 3; ) {
        const { Messages = [] } = await client.send(
          new ReceiveMessageCommand({
            QueueUrl: url,
            MaxNumberOfMessages: Math.min(10, options.max - seen.size),
            VisibilityTimeout: 0,
            MessageAttributeNames: ["All"],
            MessageSystemAttributeNames: ["SentTimestamp", "ApproximateReceiveCount"],
          }),
        );
        const fresh = Messages.filter((message) => message.MessageId && !seen.has(message.MessageId));
        for (const message of fresh) seen.set(message.MessageId as string, message);
        empty = fresh.length === 0 ? empty + 1 : 0;
      }
      for (const message of seen.values()) {
        const row = {
          messageId: message.MessageId,
          sentAt: new Date(Number(message.Attributes?.SentTimestamp ?? 0)).toISOString(),
          reason: attribute(message, DEAD_LETTER_ATTRIBUTES.reason) ?? noReason(message),
          sourceMessageId: attribute(message, DEAD_LETTER_ATTRIBUTES.sourceMessageId),
          taskIndexes: attribute(message, DEAD_LETTER_ATTRIBUTES.taskIndexes),
          bodyBytes: Buffer.byteLength(message.Body ?? ""),
          ...(options.body ? { body: message.Body } : {}),
        };
        printResult(options.json, {
          json: () => row,
          text: () => {
            const source = row.sourceMessageId ? ` from ${row.sourceMessageId}` : "";
            const tasks = row.taskIndexes ? ` (tasks ${row.taskIndexes})` : "";
            const reason = row.reason.replaceAll("\n", "\n  ");
            const head = `${row.messageId}  ${row.sentAt}${source}${tasks}  ${row.bodyBytes} bytes\n  ${reason}`;
            return options.body ? [head, `  ${row.body}`] : [head];
          },
        });
      }
      if (seen.size === 0) console.error("the dead-letter queue is empty");
    });

  dlq
    .command("redrive")
    .description("move every dead-lettered message back to the queue it feeds (after fixing what made it fail)")
    .option("--to <url>", "send them to this queue instead (default: the one source queue of the DLQ)")
    .option("--wait", "wait until the move has finished and print the count")
    .action(async (options: { to?: string; wait?: boolean }, command: Command) => {
      const url = dlqUrl(command.optsWithGlobals());
      const client = sqsClient();
      const arnOf = async (queueUrl: string) =>
        (await client.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["QueueArn"] })))
          .Attributes?.QueueArn as string;
      let destination = options.to;
      if (!destination) {
        // Messages the worker sent straight to the DLQ have no recorded source: name it explicitly.
        const { queueUrls = [] } = await client.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: url }));
        if (queueUrls.length !== 1) {
          throw new UsageError(
            `the dead-letter queue feeds ${queueUrls.length} queues (${queueUrls.join(", ") || "none"}): pass --to URL`,
          );
        }
        destination = queueUrls[0];
      }
      const sourceArn = await arnOf(url);
      const { TaskHandle } = await client.send(
        new StartMessageMoveTaskCommand({ SourceArn: sourceArn, DestinationArn: await arnOf(destination) }),
      );
      console.log(`redriving ${url} to ${destination} (task ${TaskHandle})`);
      if (!options.wait) return;
      for (;;) {
        const { Results = [] } = await client.send(
          new ListMessageMoveTasksCommand({ SourceArn: sourceArn, MaxResults: 1 }),
        );
        const task = Results[0];
        if (task && task.Status !== "RUNNING") {
          console.log(`${task.Status}: ${task.ApproximateNumberOfMessagesMoved ?? 0} messages moved`);
          // Exit 1: the move did not complete (the bin's exit code is main's, never a stray exitCode).
          if (task.Status !== "COMPLETED") {
            throw new Error(`the move task ended ${task.Status}${task.FailureReason ? `: ${task.FailureReason}` : ""}`);
          }
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    });
}
