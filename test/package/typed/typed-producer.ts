// A user's typed producer: `defineTasks` keeps each type's name and payload, `createProducer({ tasks })`
// takes only those. Each `@ts-expect-error` line must be a type error and every other line must
// compile (tsc fails on an unused directive), so this file proves both directions.
import type { SQSClient } from "@aws-sdk/client-sqs";
import type { Queue } from "leaseq";
import {
  createProducer,
  createWorker,
  defineTasks,
  type Task,
  type TaskDeclaration,
  type TaskMessage,
  type TaskPayloads,
} from "leaseq/lambda";
import * as v from "valibot";
import { z } from "zod";

export const tasks = defineTasks({
  types: {
    // The payload type from the handler's parameter.
    email: { handler: async (_task: Task<{ to: string; cc?: string[] }>) => {} },
    // From a zod schema: producers send its input, the handler receives its output.
    resize: {
      schema: z.object({ image: z.string(), width: z.number().int().default(100) }),
      handler: async (task) => {
        const width: number = task.payload.width;
        // @ts-expect-error the handler's payload is the schema's output: image is a string
        const image: number = task.payload.image;
        void [width, image];
      },
    },
    // From a valibot schema.
    crop: {
      schema: v.object({ box: v.tuple([v.number(), v.number()]) }),
      handler: (task) => {
        const [left, top]: [number, number] = task.payload.box;
        void [left, top];
      },
    },
    // No annotation, no schema: any payload, or none.
    ping: { handler: () => {} },
  },
  acceptTypes: ["report"],
});

declare const client: SQSClient;
declare const queue: Queue;
const producer = createProducer({ queueUrl: "https://sqs.example/emails", tasks, client });

// What must compile.
await producer.send([
  { type: "email", payload: { to: "a@example.com" } },
  { type: "email", payload: { to: "a@example.com", cc: ["b@example.com"] }, id: "e-1", priority: -1, group: "c-42" },
  { type: "resize", payload: { image: "cat.png" } },
  { type: "resize", payload: { image: "cat.png", width: 64 }, delayMs: 1_000 },
  { type: "crop", payload: { box: [1, 2] }, runAt: "2030-01-01T00:00:00Z" },
  { type: "ping" },
  { type: "report", payload: { anything: true } },
]);
await producer.enqueue(queue, [{ type: "email", payload: { to: "a@example.com" }, runAt: new Date() }]);
const typedMessages: TaskMessage<TaskPayloads<typeof tasks>>[] = [{ type: "ping", payload: 1 }];
await producer.send(typedMessages);

// @ts-expect-error a misspelled type
await producer.send([{ type: "emial", payload: { to: "a@example.com" } }]);
// @ts-expect-error a payload field of the wrong type
await producer.send([{ type: "email", payload: { to: 42 } }]);
// @ts-expect-error a required payload field missing
await producer.send([{ type: "resize", payload: { width: 64 } }]);
// @ts-expect-error the payload missing where its type has required fields
await producer.send([{ type: "email" }]);
// @ts-expect-error an unknown task field (the misspelled payload)
await producer.send([{ type: "email", paylod: { to: "a@example.com" } }]);
// @ts-expect-error an unknown task field next to a correct payload
await producer.send([{ type: "email", payload: { to: "a@example.com" }, delay: 5 }]);
// @ts-expect-error a field the payload type does not have
await producer.send([{ type: "crop", payload: { box: [1, 2], scale: 2 } }]);
// @ts-expect-error enqueue is typed the same way
await producer.enqueue(queue, [{ type: "thumbnial", payload: {} }]);
// @ts-expect-error enqueue takes runAt as ms or a Date, not a string
await producer.enqueue(queue, [{ type: "ping", runAt: "2030-01-01T00:00:00Z" }]);

// Without a declaration: any type and payload, as before; still no unknown field.
const loose = createProducer({ queueUrl: "https://sqs.example/emails" });
await loose.send([{ type: "thumbnial", payload: { anything: 1 } }, { type: "x" }]);
const messages: TaskMessage[] = [{ id: "m-1", type: "resize-image", payload: { width: 64 } }];
await loose.send(messages);
// @ts-expect-error an unknown task field
await loose.send([{ type: "x", paylod: {} }]);

// A typed declaration is still a TaskDeclaration: the worker and the construct take it unchanged.
const declaration: TaskDeclaration = tasks;
export const handler = createWorker({ tasks: declaration });
export const again = defineTasks(tasks);
await createProducer({ queueUrl: "https://sqs.example/emails", tasks: again }).send([
  // @ts-expect-error a declaration given again to defineTasks keeps its types
  { type: "emial", payload: { to: "a@example.com" } },
]);

// Flow control (docs/flow-control.md): each mode's fields on a typed task, a type's default with its
// key a function of that type's payload.
await producer.send([
  { type: "email", payload: { to: "a@example.com" }, dedupe: { key: "to:a", ttlMs: 60_000 } },
  { type: "email", payload: { to: "a@example.com" }, debounce: { key: "to:a", delayMs: 1_000, maxWaitMs: 10_000 } },
  { type: "email", payload: { to: "a@example.com" }, throttle: { key: "to:a", perMs: 1_000, onLimit: "defer" } },
  { type: "ping", singleton: { key: "ping" } },
]);
await producer.enqueue(queue, [{ type: "ping", singleton: { key: "ping" } }]);
// @ts-expect-error a singleton's key is a string
await producer.send([{ type: "ping", singleton: { key: 7 } }]);
// @ts-expect-error throttle.onLimit is "drop" or "defer"
await producer.send([{ type: "ping", throttle: { key: "t", perMs: 1_000, onLimit: "queue" } }]);
// @ts-expect-error debounce needs its maxWaitMs
await producer.send([{ type: "ping", debounce: { key: "d", delayMs: 1_000 } }]);
export const flowing = defineTasks({
  types: {
    sync: {
      handler: async (_task: Task<{ doc: string }>) => {},
      flow: { singleton: { key: (payload) => `doc:${payload.doc}` } },
    },
    mail: {
      handler: async (_task: Task<{ to: string }>) => {},
      // @ts-expect-error the key function gets the type's payload: it has no doc
      flow: { dedupe: { key: (payload) => `doc:${payload.doc}`, ttlMs: 1_000 } },
    },
  },
});
