// The spans leaseq makes (docs/lambda.md#tracing), on the OpenTelemetry API that shared/tracing.ts
// loaded. A module of its own, imported only once the API was: a process without the API never
// loads it (the Lambda bundles carry it as a chunk loaded on demand). Every function here is given
// the API and returns undefined, or does nothing, when no tracer provider is registered.
import type * as OpenTelemetry from "@opentelemetry/api";
import { isSlotId } from "./schedules.js";
import { isTraceparent, TRACEPARENT } from "./traceparent.js";

type Api = typeof OpenTelemetry;
type Span = OpenTelemetry.Span;

/** The tracer's name, and the value of `messaging.system` on every span. */
const SYSTEM = "leaseq";

/** The tracer, when a provider is registered; undefined otherwise (the API alone is a no-op). */
function tracerOf(api: Api): OpenTelemetry.Tracer | undefined {
  const provider = api.trace.getTracerProvider() as OpenTelemetry.TracerProvider & {
    getDelegateTracer?: (name: string) => OpenTelemetry.Tracer | undefined;
  };
  // The API's own ProxyTracerProvider has a delegate only once a provider is registered (a provider
  // registered through another copy of the API is that copy's proxy, with its delegate).
  if (typeof provider.getDelegateTracer === "function" && provider.getDelegateTracer(SYSTEM) === undefined) {
    return undefined;
  }
  return api.trace.getTracer(SYSTEM);
}

/** The messaging attributes (OpenTelemetry semantic conventions) of an operation on `queue`. */
function messaging(
  queue: string,
  operation: "send" | "receive" | "process" | "settle",
  ids: readonly string[],
): OpenTelemetry.Attributes {
  const attributes: OpenTelemetry.Attributes = {
    "messaging.system": SYSTEM,
    "messaging.destination.name": queue,
    "messaging.operation.name": operation,
    "messaging.operation.type": operation,
  };
  if (ids.length === 1) attributes["messaging.message.id"] = ids[0];
  else if (ids.length > 1) attributes["messaging.batch.message_count"] = ids.length;
  return attributes;
}

/** Records `error` on `span`: an exception event, and status ERROR with its text. */
function failed(api: Api, span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({
    code: api.SpanStatusCode.ERROR,
    message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
}

/** A span context's W3C traceparent (version 00), or "" when it is not valid. */
function traceparentOf(api: Api, context: OpenTelemetry.SpanContext | undefined): string {
  if (!context || !api.isSpanContextValid(context)) return "";
  return `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** The remote span context a stored traceparent names, or undefined. */
function spanContextOf(traceparent: string): OpenTelemetry.SpanContext | undefined {
  const match = TRACEPARENT.exec(traceparent);
  if (!match || !isTraceparent(traceparent)) return undefined;
  return { traceId: match[1], spanId: match[2], traceFlags: Number.parseInt(match[3], 16), isRemote: true };
}

/** See shared/tracing.ts withSendSpan. */
export async function withSendSpan<T>(
  api: Api,
  queue: string,
  ids: readonly string[],
  send: (traceparent: string) => Promise<T>,
): Promise<T> {
  const tracer = tracerOf(api);
  if (!tracer) return send("");
  const span = tracer.startSpan(`send ${queue}`, {
    kind: api.SpanKind.PRODUCER,
    attributes: messaging(queue, "send", ids),
  });
  const traceparent = traceparentOf(api, span.spanContext());
  try {
    return await api.context.with(api.trace.setSpan(api.context.active(), span), () => send(traceparent));
  } catch (error) {
    failed(api, span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** See shared/tracing.ts withBatchSpan. */
export async function withBatchSpan<T>(
  api: Api,
  queue: string,
  operation: "receive" | "settle",
  work: () => Promise<T>,
  count: (result: T) => number,
): Promise<T> {
  const tracer = tracerOf(api);
  if (!tracer) return work();
  const span = tracer.startSpan(`${operation} ${queue}`, {
    kind: api.SpanKind.INTERNAL,
    attributes: messaging(queue, operation, []),
  });
  try {
    const result = await api.context.with(api.trace.setSpan(api.context.active(), span), work);
    span.setAttribute("messaging.batch.message_count", count(result));
    return result;
  } catch (error) {
    failed(api, span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** See shared/tracing.ts activeTraceparent. */
export function activeTraceparent(api: Api): string {
  if (!tracerOf(api)) return "";
  return traceparentOf(api, api.trace.getSpanContext(api.context.active()));
}

/** What the span of one attempt needs of its task. */
export interface TracedTask {
  id: string;
  type: string;
  group?: string;
  attempt: number;
  /** The traceparent its body stores (absent or "" when none). */
  trace?: string;
}

/** One attempt's CONSUMER span, started: `run` the handler in it, then `end` it with the outcome. */
export interface AttemptSpan {
  /** Calls `fn` with the span as the active context, so the handler's own spans are its children. */
  run<T>(fn: () => T): T;
  /** Ends the span: OK without `error`; else the error recorded (an exception event, status ERROR). */
  end(error?: unknown): void;
}

/** See shared/tracing.ts startAttemptSpan. */
export function startAttemptSpan(api: Api, queue: string, task: TracedTask): AttemptSpan | undefined {
  const tracer = tracerOf(api);
  if (!tracer) return undefined;
  const stored = task.trace ? spanContextOf(task.trace) : undefined;
  const active = api.context.active();
  const child = stored !== undefined && task.attempt === 1 && !isSlotId(task.id);
  const parent = child ? api.trace.setSpanContext(active, stored) : active;
  const attributes = messaging(queue, "process", [task.id]);
  attributes["leaseq.task.type"] = task.type;
  attributes["leaseq.task.attempt"] = task.attempt;
  if (task.group !== undefined) attributes["leaseq.task.group"] = task.group;
  const span = tracer.startSpan(
    `process ${queue}`,
    {
      kind: api.SpanKind.CONSUMER,
      attributes,
      links: stored !== undefined && !child ? [{ context: stored }] : [],
    },
    parent,
  );
  const context = api.trace.setSpan(parent, span);
  return {
    run: (fn) => api.context.with(context, fn),
    end: (error) => {
      if (error !== undefined) failed(api, span, error);
      span.end();
    },
  };
}
