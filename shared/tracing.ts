// OpenTelemetry, optional (docs/lambda.md#tracing). `@opentelemetry/api` is an optional peer
// dependency, imported once, at the first call that could trace; leaseq's spans
// (shared/tracing-spans.ts) are imported only after it. When the API is absent, or no tracer
// provider is registered, nothing here allocates per task, adds a Redis command or stores more than
// the empty `trace` field of a body. leaseq registers no provider: it takes the global one (the ADOT
// Lambda layer's, or the one the application registered) through `trace.getTracer("leaseq")`.
import type * as OpenTelemetry from "@opentelemetry/api";
import type { AttemptSpan, TracedTask } from "./tracing-spans.js";

type Spans = typeof import("./tracing-spans.js");

export { isTraceparent, TRACEPARENT } from "./traceparent.js";
export type { AttemptSpan, TracedTask } from "./tracing-spans.js";

/** The API and leaseq's spans once the import settled (null: the API is absent); undefined before. */
let loaded: { api: typeof OpenTelemetry; spans: Spans } | null | undefined;
let loading: Promise<void> | undefined;

/**
 * Imports `@opentelemetry/api`, then leaseq's spans, once. Returns undefined once that is done (a
 * promise before); never rejects: an import that fails leaves tracing off for the process.
 */
export function loadTracing(): Promise<void> | undefined {
  if (loaded !== undefined) return undefined;
  // Never bundled (infra/bundling.ts marks it external): found at run time in the function's layers
  // (the ADOT layer carries it) or its own node_modules.
  loading ??= import("@opentelemetry/api")
    .then(async (api) => {
      loaded = api.trace ? { api, spans: await import("./tracing-spans.js") } : null;
    })
    .catch(() => {
      loaded = null;
    });
  return loading;
}

/**
 * Runs `send` (an enqueue, an SQS send of the tasks `ids` to `queue`) in a PRODUCER span `send
 * <queue>`, a child of the active context, and gives it the span's traceparent: what the tasks
 * store. Without tracing, `send` gets "". An error thrown is recorded on the span and thrown on.
 */
export async function withSendSpan<T>(
  queue: string,
  ids: readonly string[],
  send: (traceparent: string) => Promise<T>,
): Promise<T> {
  await loadTracing();
  return loaded ? loaded.spans.withSendSpan(loaded.api, queue, ids, send) : send("");
}

/**
 * Runs `work` (a claim, a settle: one Redis call for a batch) in an INTERNAL span `<operation>
 * <queue>` (operation `receive` for a claim), which `count` of the result tells how many tasks the
 * batch came to.
 */
export async function withBatchSpan<T>(
  queue: string,
  operation: "receive" | "settle",
  work: () => Promise<T>,
  count: (result: T) => number,
): Promise<T> {
  await loadTracing();
  return loaded ? loaded.spans.withBatchSpan(loaded.api, queue, operation, work, count) : work();
}

/**
 * The traceparent of the active span when tracing is on, "" otherwise: what the slots a planner
 * makes store (their runs link to it, docs/lambda.md#tracing).
 */
export async function activeTraceparent(): Promise<string> {
  await loadTracing();
  return loaded ? loaded.spans.activeTraceparent(loaded.api) : "";
}

/**
 * Starts the CONSUMER span `process <queue>` of one attempt at `task`, or undefined without tracing
 * (nothing allocated then; a claim loaded the API before). On the first attempt of a task sent in a
 * trace, the span is a child of the context its body stores; on a later attempt (a retry, a run
 * after a reclaim) and on a schedule's slot (an id of slotId's form, whose context is its
 * planner's), it is a child of the active context (the worker's invocation, or none) and links to
 * the stored one.
 */
export function startAttemptSpan(queue: string, task: TracedTask): AttemptSpan | undefined {
  return loaded ? loaded.spans.startAttemptSpan(loaded.api, queue, task) : undefined;
}
