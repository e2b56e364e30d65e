import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync } from "node:zlib";
import { App } from "aws-cdk-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { LeaseqStack } from "../../examples/reference/stack.js";
import { Queue } from "../../shared/queue.js";
import { LUA_BLOCKS, LUA_SCRIPTS } from "../../shared/scripts.generated.js";
import type { Store } from "../../shared/store.js";
import { invoke, loadBundle } from "../helpers/built-bundles.js";
import { envWithoutConnection, functionEnv, scheduledEvent, sqsEvent, sqsRecord } from "../helpers/events.js";
import { recordingLambdaApi } from "../helpers/lambda-api.js";
import { REPO_ROOT } from "../helpers/paths.js";
import { adapters, uniqueQueueName } from "../helpers/stores.js";

interface AlarmMetric {
  Namespace: string;
  MetricName: string;
  Dimensions: Array<{ Name: string; Value: string }>;
}
/** The parts of template resources this test reads. */
interface Resource {
  Type: string;
  Properties: {
    Description?: string;
    Handler?: string;
    Code?: { S3Key: string };
    Environment?: { Variables: Record<string, unknown> };
    Metrics?: Array<{ MetricStat?: { Metric: AlarmMetric } }>;
  };
}

/**
 * Synthesizes the reference stack with real bundling into a cloud assembly under cdk.out/ (inside
 * the repository, so the bundles' external @aws-sdk/* imports resolve from node_modules as they
 * would from the Lambda runtime), and returns each function's asset directory and environment.
 */
function synthesize(queueName: string) {
  const outdir = join(REPO_ROOT, "cdk.out", `test-assets-${randomBytes(4).toString("hex")}`);
  const app = new App({ outdir });
  const stack = new LeaseqStack(app, "Assets", { leaseQueue: { queueName } });
  const assembly = app.synth();
  const artifact = assembly.getStackByName(stack.stackName);
  const resources = Object.values(artifact.template.Resources as Record<string, Resource>);
  // The assets manifest maps each uploaded object key to the staged directory it is zipped from.
  const manifest = JSON.parse(readFileSync(join(assembly.directory, `${stack.artifactId}.assets.json`), "utf8"));
  const directoryOfKey = new Map<string, string>();
  for (const file of Object.values(manifest.files) as Array<{ source: { path: string }; destinations: object }>) {
    for (const destination of Object.values(file.destinations) as Array<{ objectKey: string }>) {
      directoryOfKey.set(destination.objectKey, join(assembly.directory, file.source.path));
    }
  }
  const lambda = (role: string) => {
    const fn = resources.find(
      (r) => r.Type === "AWS::Lambda::Function" && r.Properties.Description?.startsWith(`leaseq ${role}`),
    )?.Properties;
    const directory = directoryOfKey.get(fn?.Code?.S3Key ?? "");
    if (!fn || !directory) throw new Error(`no ${role} function with a staged asset in the cloud assembly`);
    return { directory, handler: fn.Handler, env: fn.Environment?.Variables ?? {} };
  };
  // The metric an alarm watches, to compare with what the reclaimer publishes.
  const alarmMetric = resources
    .filter((r) => r.Type === "AWS::CloudWatch::Alarm")
    .map((r) => r.Properties.Metrics?.[0]?.MetricStat?.Metric)
    .find((metric) => metric?.MetricName === "oldestWaitingAgeMs");
  if (!alarmMetric) throw new Error("no alarm on oldestWaitingAgeMs in the template");
  return { outdir, intake: lambda("intake"), worker: lambda("worker"), reclaimer: lambda("reclaimer"), alarmMetric };
}

/**
 * The deployed environment, with only what cannot exist outside AWS replaced: the secret ARN by
 * the test Redis connection, the worker's function name (a CloudFormation Ref) by a fixed one, and
 * the queues' URLs (Refs) by the SQS stand-in's.
 */
function deployedEnv(
  template: Record<string, unknown>,
  connection: Record<string, string>,
  stand: { lambdaApi: string; sqs: LocalSqs },
): Record<string, string> {
  const env: Record<string, string> = {};
  const replaced: Record<string, string> = {
    LEASEQ_WORKER_FUNCTION: "leaseq-worker-under-test",
    LEASEQ_DLQ_URL: stand.sqs.deadLetterQueueUrl,
    LEASEQ_WAKE_QUEUE_URL: stand.sqs.queueUrl,
  };
  for (const [name, value] of Object.entries(template)) {
    if (name === "UPSTASH_SECRET_ARN") continue;
    env[name] = replaced[name] ?? String(value);
  }
  expect(Object.values(env).every((value) => !value.includes("[object"))).toBe(true);
  return {
    ...env,
    ...connection,
    LEASEQ_LAMBDA_ENDPOINT: stand.lambdaApi,
    LEASEQ_SQS_ENDPOINT: stand.sqs.endpoint,
    AWS_REGION: "us-east-1",
  };
}

describe.each(adapters)("the synthesized assets, run over $name", (adapter) => {
  const queueName = uniqueQueueName("cdk");
  let assets: ReturnType<typeof synthesize>;
  const stores: Store[] = [];
  beforeAll(() => {
    assets = synthesize(queueName);
  });
  afterAll(async () => {
    for (const store of stores) await store.close();
    if (assets) rmSync(assets.outdir, { recursive: true, force: true });
  });

  it("contain the Lua scripts and the index.handler the template names", () => {
    for (const fn of [assets.worker, assets.reclaimer]) {
      expect(fn.handler).toBe("index.handler");
      // The scripts' text, packed at bundle time (packedScripts in infra/bundling.ts): the one long
      // base64 literal, which unpacks to what the generated module exports.
      // In index.mjs or a chunk it shares with a part imported on use (queue.admin).
      const chunks = readdirSync(join(fn.directory, "chunks")).map((file) => join("chunks", file));
      const bundle = ["index.mjs", ...chunks].map((file) => readFileSync(join(fn.directory, file), "utf8")).join("\n");
      const packed = [...bundle.matchAll(/"([A-Za-z0-9+/]{10000,}={0,2})"/g)].map((match) => match[1]);
      expect(packed, `${fn.directory} lacks the packed scripts`).toHaveLength(1);
      const values = JSON.parse(brotliDecompressSync(Buffer.from(packed[0], "base64")).toString());
      expect(values.LUA_SCRIPTS).toEqual(LUA_SCRIPTS);
      expect(values.LUA_BLOCKS).toEqual(LUA_BLOCKS);
    }
    expect(assets.worker.directory).not.toBe(assets.reclaimer.directory);
    // The intake is the worker's bundle in another role.
    expect(assets.intake.directory).toBe(assets.worker.directory);
  });

  it("take an SQS task list through the intake and a wake-up to DONE, publish the metrics the alarms watch, and start the worker with a drain invocation", async () => {
    const api = await recordingLambdaApi();
    const sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    const saved = { ...process.env };
    // Only the connection from the test helper: LEASEQ_QUEUE and the rest come from the template.
    const { LEASEQ_QUEUE: _, ...connection } = functionEnv(adapter, queueName);
    try {
      const intakeEnv = deployedEnv(assets.intake.env, connection, { lambdaApi: api.url, sqs });
      const workerEnv = deployedEnv(assets.worker.env, connection, { lambdaApi: api.url, sqs });
      const reclaimerEnv = deployedEnv(assets.reclaimer.env, connection, { lambdaApi: api.url, sqs });
      expect(workerEnv.LEASEQ_QUEUE).toBe(queueName);
      // Each adapter and role gets a cold start of its own.
      const intake = await loadBundle(assets.intake.directory, `${adapter.name}-intake`);
      const worker = await loadBundle(assets.worker.directory, `${adapter.name}-worker`);
      const reclaimer = await loadBundle(assets.reclaimer.directory, `${adapter.name}-reclaimer`);

      const store = await adapter.open();
      stores.push(store);
      const queue = new Queue(store, { name: queueName });

      // 1. SQS delivers a task list and a malformed record to the intake: the tasks are READY and
      // a wake-up is on the wake queue; the record goes to the dead-letter queue at once, with its
      // reason. The intake runs no task.
      const base = envWithoutConnection();
      process.env = { ...base, ...intakeEnv };
      const good = sqsRecord({ tasks: [{ id: "a1", type: "echo", payload: { n: 1 } }, { type: "echo" }] }, "m-good");
      const { result } = await invoke(intake, sqsEvent(good, sqsRecord("not json", "m-bad")));
      expect(result.batchItemFailures).toEqual([]);
      for (const id of ["a1", "m-good-1"]) expect(await queue.admin.inspect(id)).toMatchObject({ state: "ready" });
      expect(
        sqs.deadLetters.map((letter) => [letter.body, letter.messageAttributes.LeaseqReason?.StringValue]),
      ).toEqual([["not json", "body is not JSON (8 characters)"]]);
      const wakeUps = sqs.queue.all().map((message) => message.body);
      expect(wakeUps).toEqual(['{"leaseq":"wake"}']);

      // The wake-up starts the worker, which takes them to DONE.
      process.env = { ...base, ...workerEnv, ...reclaimerEnv };
      await invoke(worker, sqsEvent(sqsRecord(JSON.parse(wakeUps[0]), "m-wake")));
      for (const id of ["a1", "m-good-1"]) expect(await queue.admin.inspect(id)).toMatchObject({ state: "done" });

      // 2. Tasks wait in READY: the reclaimer publishes EMF matching the alarms and starts the worker
      // with a drain invocation.
      await queue.enqueue(
        [
          { id: "k1", type: "echo" },
          { id: "k2", type: "echo" },
        ],
        { now: Date.now() - 1_000 },
      );
      const tick = await invoke(reclaimer, scheduledEvent());
      expect(tick.result).toMatchObject({ ready: 2, done: 2, drainInvocations: 1 });
      const emf = tick.lines.map((line) => JSON.parse(line)).find((entry) => entry._aws?.CloudWatchMetrics);
      const directive = emf._aws.CloudWatchMetrics[0];
      expect(directive.Namespace).toBe(assets.alarmMetric.Namespace);
      expect([...directive.Dimensions[0]].sort()).toEqual(assets.alarmMetric.Dimensions.map((d) => d.Name).sort());
      for (const { Name, Value } of assets.alarmMetric.Dimensions) expect(emf[Name]).toBe(Value);
      expect(directive.Metrics.map((m: { Name: string }) => m.Name).sort()).toEqual([
        "done",
        "failed",
        "finishedDone",
        "finishedFailed",
        "leased",
        "mostOverdueLeaseMs",
        "oldestReadyAgeMs",
        "oldestWaitingAgeMs",
        "ready",
        "reclaimed",
        "scheduled",
        "trimmed",
      ]);
      expect(api.calls).toHaveLength(1);
      expect(api.calls[0].url).toContain("/functions/leaseq-worker-under-test/invocations");
      expect(api.calls[0].headers["x-amz-invocation-type"]).toBe("Event");

      // 3. The drain invocation runs the worker, which takes the waiting tasks to DONE.
      await invoke(worker, JSON.parse(api.calls[0].body));
      for (const id of ["k1", "k2"]) expect(await queue.admin.inspect(id)).toMatchObject({ state: "done" });
    } finally {
      process.env = saved;
      await api.close();
      await sqs.close();
    }
  });
});
