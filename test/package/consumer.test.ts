// leaseq as a user gets it: `npm pack`, installed from the tarball into a fresh project outside this
// repository (its own package.json; aws-cdk-lib, constructs, cdk-nag, typescript, the cdk CLI, tsx
// and vitest from the registry), whose code imports only `leaseq`, `leaseq/lambda`, `leaseq/cdk` and
// `leaseq/testing`; docs/testing.md's examples are written into it and run there.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { UpstashStore } from "../../shared/stores/upstash.js";
import { captureStdout, envWithoutConnection, lambdaContext, sqsEvent, sqsRecord } from "../helpers/events.js";
import { REPO_ROOT } from "../helpers/paths.js";
import { deleteQueues, uniqueQueueName } from "../helpers/stores.js";

/** The versions this repository's lockfile pins, so the install is served from npm's cache when it can be. */
function locked(name: string): string {
  const lock = JSON.parse(readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8"));
  return `${name}@${lock.packages[`node_modules/${name}`].version}`;
}

const project = mkdtempSync(join(tmpdir(), "leaseq-consumer-"));
const images = uniqueQueueName("pkg-images");
const ledger = uniqueQueueName("pkg-ledger");
const devQueue = uniqueQueueName("pkg-dev");
let tarball = "";

/** Runs a command in the consumer project, killed after `timeoutMs` (its status then null). */
function inProject(command: string, args: string[], env: NodeJS.ProcessEnv = process.env, timeoutMs = 240_000) {
  const run = spawnSync(command, args, { cwd: project, env, encoding: "utf8", timeout: timeoutMs });
  return { status: run.status, stdout: run.stdout, output: `${run.stdout}${run.stderr}` };
}

/**
 * The code blocks of docs/testing.md that name their file on their first line (`// file:
 * test/emails.test.ts`): the consumer project gets each as it is, so the docs show what runs.
 */
function testingDocExamples(): Array<{ path: string; code: string }> {
  const text = readFileSync(join(REPO_ROOT, "docs/testing.md"), "utf8");
  return [...text.matchAll(/```ts\n(\/\/ file: (\S+)\n[\s\S]*?)```/g)].map((match) => ({
    path: match[2],
    code: match[1],
  }));
}

beforeAll(() => {
  const packed = JSON.parse(
    execFileSync("npm", ["pack", "--json", "--pack-destination", project], { cwd: REPO_ROOT, encoding: "utf8" }),
  )[0];
  tarball = join(project, packed.filename);
  console.log(
    `[package] ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1024).toFixed(1)} KB packed, ${(packed.unpackedSize / 1024).toFixed(1)} KB unpacked`,
  );
  cpSync(join(REPO_ROOT, "test/package/fixture"), project, { recursive: true });
  for (const example of testingDocExamples()) {
    mkdirSync(dirname(join(project, example.path)), { recursive: true });
    writeFileSync(join(project, example.path), example.code);
  }
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  const install = inProject("npm", [
    "install",
    "--no-audit",
    "--no-fund",
    "--prefer-offline",
    tarball,
    locked("aws-cdk-lib"),
    locked("constructs"),
    // cdk-nag 2.x (the lockfile's): an Aspect that works with the consumer's aws-cdk-lib.
    locked("cdk-nag"),
    locked("typescript"),
    locked("aws-cdk"),
    locked("tsx"),
    locked("vitest"),
    "@types/node@20",
  ]);
  if (install.status !== 0) throw new Error(`npm install failed:\n${install.output}`);
}, 300_000);

afterAll(async () => {
  rmSync(project, { recursive: true, force: true, maxRetries: 5 });
  await deleteQueues([images, ledger, devQueue]);
});

describe("leaseq installed from its tarball", { timeout: 240_000 }, () => {
  it("ships only what runs: the compiled entry points with their .d.ts, the CLI, the README", () => {
    const files: string[] = JSON.parse(
      execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: REPO_ROOT, encoding: "utf8" }),
    )[0].files.map((file: { path: string }) => file.path);
    for (const entry of ["shared/index", "functions/index", "infra/index", "testing/index"]) {
      expect(files).toContain(`dist/${entry}.js`);
      expect(files).toContain(`dist/${entry}.d.ts`);
    }
    expect(files).toContain("dist/cli/bin.js");
    expect(
      files.filter(
        (file) => !/^dist\/(shared|functions|infra|testing|cli|dev)\/|^(package\.json|README\.md)$/.test(file),
      ),
    ).toEqual([]);
    expect(files.filter((file) => /\.ts$/.test(file) && !file.endsWith(".d.ts"))).toEqual([]);
    const installed = JSON.parse(readFileSync(join(project, "node_modules/leaseq/package.json"), "utf8"));
    expect(Object.keys(installed.dependencies)).not.toContain("tsx");
    expect(Object.keys(installed.peerDependencies).sort()).toEqual(["@opentelemetry/api", "aws-cdk-lib", "constructs"]);
  });

  it("type-checks (strict, library types included) a producer, a worker with its own type, a CDK app with two queues and the tests of docs/testing.md", () => {
    const check = inProject("npx", ["tsc", "-p", "."]);
    expect(check.output).toBe("");
    expect(check.status).toBe(0);
  });

  it("loads `leaseq`, `leaseq/lambda` and `leaseq/testing` without the CDK, and `leaseq/cdk` with it", () => {
    writeFileSync(
      join(project, "probe.mjs"),
      'const { LeaseQueue } = await import("leaseq/cdk"); console.log(JSON.stringify({ leaseQueue: typeof LeaseQueue }));',
    );
    const run = inProject("node", ["probe.mjs"]);
    expect(run.output.trim()).toBe('{"leaseQueue":"function"}');
    // What `leaseq` and `leaseq/lambda` import, transitively: no aws-cdk-lib, no constructs.
    writeFileSync(
      join(project, "imports.mjs"),
      `import { register } from "node:module";
       register("data:text/javascript," + encodeURIComponent(\`export async function resolve(s, c, n) { const r = await n(s, c); if (/aws-cdk-lib|constructs/.test(r.url)) throw new Error("loaded " + r.url); return r; }\`));
       await import("leaseq"); await import("leaseq/lambda"); await import("leaseq/testing");
       console.log("no cdk");`,
    );
    const imports = inProject("node", ["imports.mjs"]);
    expect(imports.output.trim()).toBe("no cdk");
  });

  it("runs docs/testing.md's examples against the real Redis with vitest and with `node --test`, and both finish", () => {
    expect(testingDocExamples().map((example) => example.path)).toEqual([
      "src/emails.ts",
      "test/emails.test.ts",
      "test/emails.node-test.ts",
    ]);
    // A test worker or a handler left open would keep `node --test` waiting on its connection: the
    // timeout, far above what the runs take, is what fails then.
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, REDIS_URL: inject("redisUrl"), NO_COLOR: "1" };
    const vitest = inProject("npx", ["vitest", "run"], env, 90_000);
    expect(vitest.status, vitest.output).toBe(0);
    expect(vitest.output).toMatch(/Tests\s+4 passed \(4\)/);
    const nodeTest = inProject(
      process.execPath,
      ["--import", "tsx", "--test", "test/emails.node-test.ts"],
      env,
      60_000,
    );
    expect(nodeTest.status, nodeTest.output).toBe(0);
    expect(nodeTest.output).toMatch(/# pass 4\n# fail 0/);
  });

  it("refuses at synth a lease that cannot fit the worker timeout, naming the type and the limit", () => {
    const synth = inProject("npx", [
      "cdk",
      "synth",
      "--quiet",
      "--app",
      "npx tsx bin/too-long-lease.ts",
      "-o",
      "cdk.bad",
    ]);
    expect(synth.status).not.toBe(0);
    expect(synth.output).toContain(
      'task type "report": leaseMs 300000 cannot fit the worker timeout of 300 s minus the 5000 ms margin (at most 295000 ms)',
    );
    expect(synth.output).not.toContain("Bundling asset");
  });

  it("synthesizes its app offline (cdk-nag clean with leaseq's suppressions, one shared secret) and runs its own task type from the worker asset over Upstash; no demo type inside", async () => {
    const env = { ...process.env };
    for (const name of Object.keys(env)) if (/^AWS_(?!CA_BUNDLE)|^CDK_DEFAULT_/.test(name)) delete env[name];
    const synth = inProject(
      "npx",
      ["cdk", "synth", "--quiet", "-o", "cdk.out", "-c", `imagesQueue=${images}`, "-c", `ledgerQueue=${ledger}`],
      env,
    );
    expect(synth.status, synth.output).toBe(0);
    expect(synth.output).not.toMatch(/AwsSolutions-\w+: /);
    const template = JSON.parse(readFileSync(join(project, "cdk.out/Consumer.template.json"), "utf8"));
    const resources = Object.values(template.Resources) as Array<{
      Type: string;
      Properties: {
        Description?: string;
        Code?: { S3Key: string };
        Environment?: { Variables: Record<string, unknown> };
      };
    }>;
    const count = (type: string) => resources.filter((r) => r.Type === type).length;
    expect(count("AWS::Lambda::Function")).toBe(6); // an intake, a worker and a reclaimer each
    expect(count("AWS::SQS::Queue")).toBe(6); // a task queue, its dead-letter queue and a wake queue each
    expect(count("AWS::CloudWatch::Dashboard")).toBe(2);
    expect(count("AWS::Events::Rule")).toBe(2);
    expect(count("AWS::SecretsManager::Secret")).toBe(1); // the Ledger queue reads the Images queue's
    const workers = resources.filter(
      (r) => r.Type === "AWS::Lambda::Function" && r.Properties.Description?.startsWith("leaseq worker"),
    );
    expect(workers.map((w) => w.Properties.Environment?.Variables.LEASEQ_QUEUE).sort()).toEqual(
      [images, ledger].sort(),
    );
    const imagesWorker = workers.find((w) => w.Properties.Environment?.Variables.LEASEQ_QUEUE === images);
    expect(imagesWorker?.Properties.Environment?.Variables.LEASEQ_TASKS).toBe(
      "parallel;nightly-report:~600000:600000::5:1000:300000:,resize-image:~20000:20000::4:500:10000:;;10x3",
    );
    // The 10-minute type deploys without a workerTimeout prop: the default fits the longest lease.
    expect(imagesWorker?.Properties.Environment?.Variables.LEASEQ_WORKER_TIMEOUT_MS).toBe("605000");

    // The staged asset the template's S3 key names.
    const manifest = JSON.parse(readFileSync(join(project, "cdk.out/Consumer.assets.json"), "utf8"));
    const key = imagesWorker?.Properties.Code?.S3Key;
    const file = Object.values(
      manifest.files as Record<
        string,
        { source: { path: string }; destinations: Record<string, { objectKey: string }> }
      >,
    ).find((entry) => Object.values(entry.destinations).some((d) => d.objectKey === key));
    const asset = join(project, "cdk.out", String(file?.source.path));
    const bundle = [
      join(asset, "index.mjs"),
      ...readdirSync(join(asset, "chunks")).map((f) => join(asset, "chunks", f)),
    ]
      .map((path) => readFileSync(path, "utf8"))
      .join("\n");
    expect(bundle).toContain("resize-image");
    for (const demo of ["poison: cannot be processed", "flaky: attempt", "failTimes"])
      expect(bundle).not.toContain(demo);

    const saved = process.env;
    process.env = {
      ...envWithoutConnection(),
      ...(imagesWorker?.Properties.Environment?.Variables as Record<string, string>),
      UPSTASH_SECRET_ARN: "",
      UPSTASH_REDIS_REST_URL: inject("upstashUrl"),
      UPSTASH_REDIS_REST_TOKEN: inject("upstashToken"),
      LEASEQ_DLQ_URL: "",
      LEASEQ_WAKE_QUEUE_URL: "",
    };
    const proof = join(project, "proof.txt");
    try {
      const { handler } = await import(pathToFileURL(join(asset, "index.mjs")).href);
      const record = sqsRecord({
        tasks: [{ id: "img-1", type: "resize-image", payload: { image: "cat.png", width: 64, proofFile: proof } }],
      });
      const { result } = await captureStdout(() => handler(sqsEvent(record), lambdaContext()));
      expect(result).toEqual({ batchItemFailures: [] });
    } finally {
      process.env = saved;
    }
    expect(readFileSync(proof, "utf8")).toBe("img-1 cat.png@64");
    const queue = new Queue(new UpstashStore({ url: inject("upstashUrl"), token: inject("upstashToken") }), {
      name: images,
    });
    expect(await queue.admin.inspect("img-1")).toMatchObject({ state: "done", attempts: 1, type: "resize-image" });
  });

  it("runs the compiled CLI without tsx, and `leaseq dev --tasks` runs the user's tasks fed by the user's producer over SQS", async () => {
    const connection = { REDIS_URL: inject("redisUrl"), LEASEQ_QUEUE: devQueue };
    const stats = inProject("npx", ["leaseq", "stats", "--json"], { PATH: process.env.PATH, ...connection });
    expect(stats.status, stats.output).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({
      queue: devQueue,
      backend: expect.stringMatching(/^Redis at redis:/),
      ready: 0,
    });

    // The bin npx runs (node_modules/.bin/leaseq), started by node so the exit code is its own, not npm's.
    const bin = join(project, "node_modules/.bin/leaseq");
    const dev: ChildProcess = spawn(
      process.execPath,
      [bin, "dev", "--tasks", "./src/tasks.ts", "--queue", devQueue, "--sqs-port=0", "--dashboard-port=0"],
      {
        cwd: project,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, REDIS_URL: inject("redisUrl") },
        stdio: ["ignore", "pipe", "pipe"],
        // Its own process group, so the SIGINT below reaches every process of it, as Ctrl-C does in a terminal.
        detached: true,
      },
    );
    let out = "";
    dev.stdout?.on("data", (chunk) => {
      out += chunk;
    });
    dev.stderr?.on("data", (chunk) => {
      out += chunk;
    });
    const exited = new Promise<number | null>((resolve) => dev.once("exit", resolve));
    try {
      const deadline = Date.now() + 60_000;
      const printed = () => /SQS endpoint (\S+): task queue (\S+), dead letters/.exec(out);
      while (!printed() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      const sqs = printed();
      expect(sqs, out).not.toBeNull();
      const proof = join(project, "dev-proof.txt");
      const send = inProject("npx", ["tsx", "src/producer.ts"], {
        PATH: process.env.PATH,
        QUEUE_URL: sqs?.[2],
        SQS_ENDPOINT: sqs?.[1],
        PROOF_FILE: proof,
      });
      expect(send.status, send.output).toBe(0);
      expect(JSON.parse(send.stdout)).toEqual({ ids: ["resize-1"], messages: 1 });
      while (!existsSync(proof) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(readFileSync(proof, "utf8")).toBe("resize-1 cat.png@64");
    } finally {
      if (dev.pid) process.kill(-dev.pid, "SIGINT");
    }
    expect(await exited).toBe(0);
    const after = inProject("npx", ["leaseq", "stats", "--json"], { PATH: process.env.PATH, ...connection });
    expect(JSON.parse(after.stdout)).toMatchObject({ done: 1, ready: 0, leased: 0 });
  });
});
