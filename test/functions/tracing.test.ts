// Tracing (docs/lambda.md#tracing): one trace from `producer.send` through the SQS stand-in and the
// intake to the handler's span, over each store; a retry links to the send instead of continuing it;
// and, with no tracer provider registered, tasks run as before and store no context. The provider is
// the OpenTelemetry SDK's, registered globally by this file as the ADOT layer would (leaseq never
// registers one); its in-memory exporter keeps the spans for the assertions.
import { Logger } from "@aws-lambda-powertools/logger";
import { context, propagation, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { AWSXRayIdGenerator } from "@opentelemetry/id-generator-aws-xray";
import { AWSXRAY_TRACE_ID_HEADER, AWSXRayPropagator } from "@opentelemetry/propagator-aws-xray";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import type { SQSRecord } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { createProducer } from "../../functions/producer.js";
import { defineTasks } from "../../functions/tasks.js";
import { functionSqsClient } from "../../functions/wake.js";
import { createWorker } from "../../functions/worker.js";
import { Queue } from "../../shared/queue.js";
import type { Store } from "../../shared/store.js";
import { functionEnv, lambdaContext } from "../helpers/events.js";
import { type Adapter, adapters, rawClient, uniqueQueueName } from "../helpers/stores.js";

const redis = rawClient();
const stores: Store[] = [];
afterAll(async () => {
  redis.disconnect();
  for (const store of stores) await store.close();
});

/** What a handler saw of the context it ran in: its attempt, and the span active in it. */
interface Run {
  id: string;
  attempt: number;
  spanId: string | undefined;
}

/**
 * The local path of a sent task, as on AWS: the SQS stand-in (the real SDK client sends to it) whose
 * mapping invokes the intake, and a worker invoked as the reclaimer's drain invocation does. `flaky`
 * fails its first attempt; each handler opens a span of its own, to show it runs in the attempt's.
 */
async function localPath(adapter: Adapter) {
  const name = uniqueQueueName("trace");
  const runs: Run[] = [];
  const tasks = defineTasks({
    types: {
      echo: { leaseMs: 10_000, handler: (task) => record(task) },
      flaky: {
        leaseMs: 10_000,
        backoff: { baseMs: 1, maxMs: 1 },
        handler: async (task) => {
          record(task);
          if (task.attempt === 1) throw new Error("first attempt fails");
        },
      },
    },
  });
  function record(task: { id: string; attempt: number }): void {
    trace.getTracer("handler").startActiveSpan("handler work", (span: Span) => {
      runs.push({ id: task.id, attempt: task.attempt, spanId: trace.getActiveSpan()?.spanContext().spanId });
      span.end();
    });
  }
  const logger = () => new Logger({ serviceName: "trace", logLevel: "SILENT" });
  const intake = createWorker({ tasks, env: functionEnv(adapter, name, { LEASEQ_ROLE: "intake" }), logger: logger() });
  const worker = createWorker({
    tasks,
    env: functionEnv(adapter, name, { LEASEQ_LINGER_MS: "1000" }),
    logger: logger(),
  });
  // The records the intake was given, as the event source mapping builds them.
  const records: SQSRecord[] = [];
  const sqs = new LocalSqs(
    async (event) => {
      records.push(...event.Records);
      return intake(event, lambdaContext());
    },
    { pollMs: 10 },
  );
  await sqs.listen();
  sqs.start();
  const client = functionSqsClient(sqs.endpoint);
  const store = await adapter.open();
  stores.push(store);
  const queue = new Queue(store, { name });
  return {
    name,
    runs,
    records,
    queue,
    producer: createProducer({ queueUrl: sqs.queueUrl, client, tasks }),
    drain: () => worker({ leaseq: "drain" }, lambdaContext()),
    /** Resolves once the intake put task `id` in Redis. */
    async enqueued(id: string): Promise<void> {
      const deadline = Date.now() + 10_000;
      while (!(await queue.admin.inspect(id))) {
        if (Date.now() > deadline) throw new Error(`task ${id} never reached Redis`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async close(): Promise<void> {
      await sqs.stop();
      await sqs.close();
      client.destroy();
      await intake.close();
      await worker.close();
    },
  };
}

/**
 * Registers, for the describe block it is called in, the SDK's provider (its spans kept by the
 * returned in-memory exporter, emptied after each test) and a context manager, as the ADOT layer
 * would; with `xray`, X-Ray trace ids and the X-Ray propagator too, as the layer's setup has them.
 */
function registeredProvider(options: { xray?: boolean } = {}): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    if (options.xray) propagation.setGlobalPropagator(new AWSXRayPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({
        ...(options.xray ? { idGenerator: new AWSXRayIdGenerator() } : {}),
        spanProcessors: [new SimpleSpanProcessor(exporter)],
      }),
    );
  });
  afterAll(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });
  afterEach(() => exporter.reset());
  return exporter;
}

describe.each(adapters)("with no tracer provider registered, over $name", (adapter) => {
  it("runs tasks sent and enqueued as before: no traceparent on the message, the body of the layout before the trace field", async () => {
    const path = await localPath(adapter);
    try {
      await path.producer.send([{ id: "sent", type: "echo", payload: { n: 1 } }]);
      await path.producer.enqueue(path.queue, [{ id: "direct", type: "echo", payload: { n: 2 } }]);
      await path.enqueued("sent");
      for (const id of ["sent", "direct"]) {
        expect(await redis.hget(path.queue.keys.task, id)).toMatch(/^1\|\d+\|echo\|\|\{"n":\d\}$/);
      }
      await path.drain();
      expect(path.runs.map((run) => run.id).sort()).toEqual(["direct", "sent"]);
      expect(path.runs.every((run) => run.spanId === undefined)).toBe(true);
      const [sent] = path.records.filter((record) => record.body.includes('"sent"'));
      expect(sent.messageAttributes).toEqual({});
      expect(await path.queue.admin.inspect("sent")).toMatchObject({ state: "done" });
    } finally {
      await path.close();
    }
  });
});

describe.each(adapters)("with a tracer provider registered, over $name", (adapter) => {
  const exporter = registeredProvider();

  it("makes one trace from producer.send through the intake to the handler's span; its retry links to the send instead", async () => {
    const path = await localPath(adapter);
    try {
      await trace.getTracer("test").startActiveSpan("request", async (request: Span) => {
        await path.producer.send([{ id: "f1", type: "flaky", payload: {} }]);
        request.end();
      });
      await path.enqueued("f1");
      const body = (await redis.hget(path.queue.keys.task, "f1")) as string;
      // inspect (and the dashboard's task page) names the trace it was sent in, while its body is kept.
      const waiting = await path.queue.admin.inspect("f1");
      expect(waiting?.traceparent).toMatch(/^00-[\da-f]{32}-[\da-f]{16}-0[01]$/);
      expect(body).toContain(`|${waiting?.traceparent}|`);
      await path.drain();
      expect(path.runs.map((run) => run.attempt)).toEqual([1, 2]);

      const spans = exporter.getFinishedSpans();
      const named = (name: string) => spans.filter((span) => span.name === name);
      const [request] = named("request");
      const [send] = named("send leaseq-local");
      const process = named(`process ${path.name}`).sort(
        (a, b) => Number(a.attributes["leaseq.task.attempt"]) - Number(b.attributes["leaseq.task.attempt"]),
      );
      // The send: a PRODUCER child of the request, whose traceparent the task's body stores.
      expect(send.kind).toBe(SpanKind.PRODUCER);
      expect(send.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(send.attributes).toMatchObject({
        "messaging.system": "leaseq",
        "messaging.destination.name": "leaseq-local",
        "messaging.operation.type": "send",
        "messaging.message.id": "f1",
      });
      const { traceId, spanId } = send.spanContext();
      const traceparent = `00-${traceId}-${spanId}-01`;
      expect(path.records.map((record) => record.messageAttributes.traceparent?.stringValue)).toEqual([traceparent]);
      expect(body).toBe(`1|${body.split("|")[1]}|flaky||${traceparent}|{}`);
      // The first attempt: a CONSUMER child of the send, in the request's trace, failed with the error.
      expect(process).toHaveLength(2);
      const [first, retry] = process;
      expect(first.kind).toBe(SpanKind.CONSUMER);
      expect(first.spanContext().traceId).toBe(request.spanContext().traceId);
      expect(first.parentSpanContext?.spanId).toBe(spanId);
      expect(first.links).toEqual([]);
      expect(first.attributes).toMatchObject({
        "messaging.system": "leaseq",
        "messaging.destination.name": path.name,
        "messaging.operation.type": "process",
        "messaging.message.id": "f1",
        "leaseq.task.type": "flaky",
        "leaseq.task.attempt": 1,
      });
      expect(first.status).toEqual({ code: SpanStatusCode.ERROR, message: "Error: first attempt fails" });
      expect(first.events.map((event) => [event.name, event.attributes?.["exception.message"]])).toEqual([
        ["exception", "first attempt fails"],
      ]);
      // The retry: no parent (nothing active in the invocation), another trace, a link to the send.
      expect(retry.kind).toBe(SpanKind.CONSUMER);
      expect(retry.parentSpanContext).toBeUndefined();
      expect(retry.spanContext().traceId).not.toBe(traceId);
      expect(retry.links.map((link) => link.context)).toMatchObject([{ traceId, spanId }]);
      expect(retry.attributes["leaseq.task.attempt"]).toBe(2);
      expect(retry.status.code).toBe(SpanStatusCode.UNSET);
      // Each handler ran in its attempt's span: its own span is that span's child.
      const work = named("handler work");
      expect(work.map((span) => span.parentSpanContext?.spanId)).toEqual(
        process.map((span) => span.spanContext().spanId),
      );
      // The worker's Redis calls: INTERNAL spans of the claims and the settles, with their counts.
      const claims = named(`receive ${path.name}`);
      const settles = named(`settle ${path.name}`);
      expect([...claims, ...settles].every((span) => span.kind === SpanKind.INTERNAL)).toBe(true);
      expect(claims.map((span) => span.attributes["messaging.batch.message_count"])).toEqual(
        expect.arrayContaining([1, 1]),
      );
      expect(settles.reduce((sum, span) => sum + Number(span.attributes["messaging.batch.message_count"]), 0)).toBe(2);
      printTrace(spans, [request, send, ...process, ...work]);
    } finally {
      await path.close();
    }
  });

  it("has a schedule's slot store its planner's context, which its run links to rather than continues", async () => {
    const path = await localPath(adapter);
    try {
      // Set 5 s ago: its slots since then were missed, and the planner makes the latest one.
      await path.queue.schedules.set("tick", { every: 1_000, type: "echo" }, { now: Date.now() - 5_000 });
      const planner = await trace.getTracer("test").startActiveSpan("planner", async (span: Span) => {
        expect((await path.queue.schedules.plan({ now: Date.now(), horizonMs: 0 })).made).toBe(1);
        span.end();
        return span.spanContext();
      });
      await path.drain();
      expect(path.runs.map((run) => run.id)).toEqual([expect.stringMatching(/^tick@.*\.000Z$/)]);
      const [run] = exporter.getFinishedSpans().filter((span) => span.name === `process ${path.name}`);
      expect(run.attributes["leaseq.task.attempt"]).toBe(1);
      expect(run.parentSpanContext).toBeUndefined();
      expect(run.links.map((link) => link.context)).toMatchObject([
        { traceId: planner.traceId, spanId: planner.spanId },
      ]);
    } finally {
      await path.close();
    }
  });

  it("makes the enqueue straight into Redis a PRODUCER span whose context the tasks store, one for the call", async () => {
    const path = await localPath(adapter);
    try {
      await path.producer.enqueue(path.queue, [
        { id: "e1", type: "echo" },
        { id: "e2", type: "echo" },
      ]);
      const [send] = exporter.getFinishedSpans().filter((span) => span.name === `send ${path.name}`);
      expect(send.kind).toBe(SpanKind.PRODUCER);
      expect(send.parentSpanContext).toBeUndefined();
      expect(send.attributes).toMatchObject({ "messaging.batch.message_count": 2 });
      const traceparent = `00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`;
      for (const id of ["e1", "e2"])
        expect(await redis.hget(path.queue.keys.task, id)).toContain(`||${traceparent}|{}`);
      await path.drain();
      const process = exporter.getFinishedSpans().filter((span) => span.name === `process ${path.name}`);
      expect(process.map((span) => span.parentSpanContext?.spanId)).toEqual([
        send.spanContext().spanId,
        send.spanContext().spanId,
      ]);
    } finally {
      await path.close();
    }
  });
});

// The ADOT Lambda layer's setup: its wrapper registers a provider whose trace ids are X-Ray's (the
// first 8 hex digits the epoch second) and the X-Ray propagator as the global one, and its Lambda
// instrumentation runs each invocation in a SERVER span continuing the invocation's X-Ray header.
// leaseq takes the provider, stores W3C traceparents of its own making (not the global propagator's
// header), and parents its per-invocation spans to the invocation's span.
describe.each(adapters)(
  "under the ADOT Lambda layer's setup (X-Ray ids and propagator, an invocation span), over $name",
  (adapter) => {
    const exporter = registeredProvider({ xray: true });

    it("keeps one X-Ray trace from the send to the first attempt; the retry runs in the invocation's span, linked to the send", async () => {
      const path = await localPath(adapter);
      try {
        await trace.getTracer("test").startActiveSpan("request", async (request: Span) => {
          await path.producer.send([{ id: "x1", type: "flaky", payload: {} }]);
          request.end();
        });
        await path.enqueued("x1");
        // The invocation as the layer's instrumentation runs it: its parent from the X-Ray header.
        const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        const parent = propagation.extract(context.active(), { [AWSXRAY_TRACE_ID_HEADER]: header });
        const invocation = await trace
          .getTracer("@opentelemetry/instrumentation-aws-lambda")
          .startActiveSpan("leaseq-worker", { kind: SpanKind.SERVER }, parent, async (span: Span) => {
            await path.drain();
            span.end();
            return span.spanContext();
          });
        expect(path.runs.map((run) => run.attempt)).toEqual([1, 2]);
        expect(invocation.traceId).toBe("5759e988bd862e3fe1be46a994272793");

        const spans = exporter.getFinishedSpans();
        const named = (name: string) => spans.filter((span) => span.name === name);
        const [send] = named("send leaseq-local");
        const { traceId, spanId } = send.spanContext();
        // An X-Ray trace id (its first 8 hex digits the second it began), stored as a W3C traceparent.
        expect(Math.abs(Number.parseInt(traceId.slice(0, 8), 16) - Date.now() / 1000)).toBeLessThan(60);
        expect(path.records.map((record) => record.messageAttributes.traceparent?.stringValue)).toEqual([
          `00-${traceId}-${spanId}-01`,
        ]);
        const [first, retry] = named(`process ${path.name}`).sort(
          (a, b) => Number(a.attributes["leaseq.task.attempt"]) - Number(b.attributes["leaseq.task.attempt"]),
        );
        expect(first.spanContext().traceId).toBe(traceId);
        expect(first.parentSpanContext?.spanId).toBe(spanId);
        expect(retry.spanContext().traceId).toBe(invocation.traceId);
        expect(retry.parentSpanContext?.spanId).toBe(invocation.spanId);
        expect(retry.links.map((link) => link.context)).toMatchObject([{ traceId, spanId }]);
        // The claims and settles are the invocation's children, in its X-Ray trace.
        const batches = [...named(`receive ${path.name}`), ...named(`settle ${path.name}`)];
        expect(batches.length).toBeGreaterThanOrEqual(3);
        expect(batches.every((span) => span.parentSpanContext?.spanId === invocation.spanId)).toBe(true);
        printTrace(spans, [send, first, retry]);
      } finally {
        await path.close();
      }
    });
  },
);

/** Prints the spans of the trace a test made, each with its kind, parent and links: for the report. */
function printTrace(all: ReadableSpan[], shown: ReadableSpan[]): void {
  const names = new Map(all.map((span) => [span.spanContext().spanId, span.name]));
  const kinds = ["INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"];
  for (const span of shown) {
    const parent = span.parentSpanContext ? (names.get(span.parentSpanContext.spanId) ?? "remote") : "none";
    const links = span.links.map((link) => names.get(link.context.spanId) ?? link.context.spanId);
    console.log(
      `[trace] ${span.name} kind=${kinds[span.kind]} trace=${span.spanContext().traceId.slice(0, 8)} parent=${parent} links=[${links.join(", ")}] status=${span.status.code}`,
    );
  }
}
