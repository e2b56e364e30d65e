// Under the Powertools Tracer (X-Ray, not OpenTelemetry): a worker wrapped as its docs show runs its
// tasks as without it — leases extended from timers, the result kept — and the Tracer's segments
// reach the X-Ray daemon with the handler's own subsegment nested in `## handler`, so leaseq keeps
// the Tracer's async context from the invocation to the task. The daemon is a UDP socket here,
// reading what the X-Ray SDK sends it; the worker runs in a process of its own, in Lambda's tracing
// environment.
import { createSocket } from "node:dgram";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { runNode } from "../cli/cli-run.js";
import { envWithoutConnection, functionEnv } from "../helpers/events.js";
import { adapters, storeFixture, uniqueQueueName } from "../helpers/stores.js";

const fixture = fileURLToPath(new URL("./fixtures/powertools-traced-worker.ts", import.meta.url));

interface Segment {
  name: string;
  id: string;
  trace_id: string;
  parent_id?: string;
  type?: string;
  annotations?: Record<string, unknown>;
  subsegments?: Segment[];
  error?: boolean;
  fault?: boolean;
}

describe.each(adapters)("a worker under the Powertools Tracer, over $name", (adapter) => {
  const { open } = storeFixture(adapter);

  it("runs its tasks as without it, and the task handler's subsegment nests in the invocation's `## handler`", async () => {
    const name = uniqueQueueName("xray");
    const queue = new Queue(await open(), { name });
    try {
      await queue.enqueue([{ id: "import-1", type: "import", payload: { file: "acme.csv" } }], { now: Date.now() });
      const daemon = createSocket("udp4");
      const segments: Segment[] = [];
      daemon.on("message", (message) => {
        // The daemon's protocol: a header line, then one segment (or subsegment) document.
        const [, document] = message.toString("utf8").split("\n");
        segments.push(JSON.parse(document) as Segment);
      });
      await new Promise<void>((resolve) => daemon.bind(0, "127.0.0.1", resolve));
      const traceId = "1-5759e988-bd862e3fe1be46a994272793";
      const { code, stdout, stderr } = await runNode(["--import", "tsx", fixture], {
        ...envWithoutConnection(),
        ...functionEnv(adapter, name, { LEASEQ_LINGER_MS: "0", POWERTOOLS_LOG_LEVEL: "SILENT" }),
        AWS_EXECUTION_ENV: "AWS_Lambda_nodejs20.x",
        AWS_LAMBDA_FUNCTION_NAME: "etl-worker",
        LAMBDA_TASK_ROOT: "/var/task",
        _X_AMZN_TRACE_ID: `Root=${traceId};Parent=53995c3f42cd8ad8;Sampled=1`,
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
        AWS_XRAY_CONTEXT_MISSING: "RUNTIME_ERROR",
      });
      // The last datagrams may still be on their way (a loaded machine delays them): both segments
      // are waited for, up to 5 s.
      const waitUntil = Date.now() + 5_000;
      while (!segments.some((segment) => segment.name === "## handler") && Date.now() < waitUntil) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      daemon.close();
      expect(stderr).toBe("");
      expect(code).toBe(0);
      const result = JSON.parse(stdout.slice(stdout.lastIndexOf("RESULT ") + 7)) as {
        tracingEnabled: boolean;
        result: unknown;
      };
      expect(result.tracingEnabled).toBe(true);

      // The task ran once, past a heartbeat, and its result names the subsegment it ran in.
      expect(await queue.result("import-1")).toMatchObject({
        state: "done",
        result: { rows: 3, parent: "## handler" },
      });
      expect((await queue.admin.inspect("import-1"))?.attempts).toBe(1);
      // The Tracer's `## handler`, in the invocation's trace, with the task handler's own inside it.
      const handler = segments.find((segment) => segment.name === "## handler");
      expect(handler).toMatchObject({
        trace_id: traceId,
        parent_id: "53995c3f42cd8ad8",
        annotations: { ColdStart: expect.any(Boolean), Service: "etl" },
      });
      expect(handler?.error ?? false).toBe(false);
      expect(handler?.fault ?? false).toBe(false);
      // In Lambda the X-Ray SDK sends each subsegment as it closes, naming its parent; one it did not
      // stream yet goes inside its parent's document (seen under a loaded CI run).
      const own = segments.find((segment) => segment.name === "## import");
      const nested = handler?.subsegments?.find((segment) => segment.name === "## import");
      if (own) expect(own).toMatchObject({ trace_id: traceId, parent_id: handler?.id, type: "subsegment" });
      else expect(nested, "the task handler's subsegment, streamed or inside `## handler`").toBeDefined();
    } finally {
      await queue.admin.drop({ confirm: name });
    }
  }, 30_000);
});
