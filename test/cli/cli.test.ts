import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { failTasks, rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runCli } from "./cli-run.js";

const store = TcpStore.fromUrl(redisUrl());
afterAll(() => store.close());

/** What `requeue` says without the wake queue's URL, as `resume` does. */
const WAKE_HINT =
  "the requeued tasks start at the reclaimer's next run (within a minute); set LEASEQ_WAKE_QUEUE_URL to the wake queue (the stack's WakeQueueUrl output) to wake a worker now";

/** A fresh queue, the env that points the CLI at it, and a library handle to arrange and check. */
function fresh() {
  const name = uniqueQueueName("cli");
  const env = { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name };
  const queue = new Queue(store, { name });
  const cli = (args: string[], input?: string) => runCli(args, env, input);
  return { name, env, queue, cli };
}

// Each test runs the command in process (main, with its own env and streams: cli-run.ts) a few times.
describe("leaseq CLI against real Redis", { timeout: 60_000 }, () => {
  it("enqueue adds one task with its type, payload and priority; the same id again is a duplicate", async () => {
    const { cli, queue } = fresh();
    const first = await cli([
      "enqueue",
      "--type",
      "email",
      "--id",
      "t1",
      "--payload",
      '{"to":"a@x"}',
      "--priority",
      "-5",
    ]);
    expect(first).toMatchObject({ code: 0, stdout: "enqueued t1 (ready)\n" });
    expect(await queue.admin.inspect("t1")).toMatchObject({
      state: "ready",
      type: "email",
      priority: -5,
      payload: '{"to":"a@x"}',
    });
    const again = await cli(["enqueue", "--type", "email", "--id", "t1"]);
    expect(again).toMatchObject({ code: 0, stdout: "duplicate t1: already known (ready); nothing changed\n" });
  });

  it("enqueue reads --payload @file, schedules --delay-ms and --run-at, and generates ids", async () => {
    const { cli, queue } = fresh();
    const file = join(mkdtempSync(join(tmpdir(), "leaseq-cli-")), "payload.json");
    writeFileSync(file, '{"report":42}');
    const before = Date.now();
    expect(
      (await cli(["enqueue", "--type", "r", "--id", "f", "--payload", `@${file}`, "--delay-ms", "60000"])).code,
    ).toBe(0);
    const delayed = await queue.admin.inspect("f");
    expect(delayed).toMatchObject({ state: "scheduled", payload: '{"report":42}' });
    expect(delayed?.dueAt).toBeGreaterThanOrEqual(before + 60_000);
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    expect((await cli(["enqueue", "--type", "r", "--id", "at", "--run-at", runAt])).code).toBe(0);
    expect(await queue.admin.inspect("at")).toMatchObject({ state: "scheduled", dueAt: Date.parse(runAt) });
    const generated = await cli(["enqueue", "--type", "r", "--json"]);
    const result = JSON.parse(generated.stdout);
    expect(result).toMatchObject({ status: "ok", state: "ready" });
    expect(await queue.admin.inspect(result.id)).toMatchObject({ type: "r", payload: "{}" });
  });

  it("enqueue --stdin takes JSON lines in batches of at most 1000", async () => {
    const { cli, queue } = fresh();
    const lines = Array.from({ length: 2500 }, (_, i) =>
      JSON.stringify({ id: `b${i}`, type: "bulk", priority: i % 3 }),
    );
    lines.splice(10, 0, "", '{"type":"bulk","payload":{"n":1},"delayMs":60000}');
    const run = await cli(["enqueue", "--stdin", "--json"], `${lines.join("\n")}\n`);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ tasks: 2501, added: 2501, duplicates: 0, throttled: 0 });
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ ready: 2500, scheduled: 1 });
    const again = await cli(["enqueue", "--stdin"], lines.slice(0, 3).join("\n"));
    expect(again).toMatchObject({ code: 0, stdout: "enqueued 0 of 3 tasks (3 duplicates)\n" });
  });

  it("enqueue whose wake-up cannot be sent exits 0 with the task in, and says so on stderr (--json: wakeError)", async () => {
    const { name, queue } = fresh();
    // The wake queue's endpoint refuses every connection: the task is written, the wake-up is not.
    const env = {
      REDIS_URL: redisUrl(),
      LEASEQ_QUEUE: name,
      LEASEQ_WAKE_QUEUE_URL: "http://127.0.0.1:9/000000000000/wake",
      LEASEQ_SQS_ENDPOINT: "http://127.0.0.1:9",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: "local",
      AWS_SECRET_ACCESS_KEY: "local",
    };
    const run = await runCli(["enqueue", "--type", "email", "--id", "w1"], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe("enqueued w1 (ready)\n");
    expect(run.stderr).toMatch(
      /^warning: the wake-up could not be sent to http:\/\/127\.0\.0\.1:9\/000000000000\/wake \(.+\); the task starts at the reclaimer's next run$/m,
    );
    expect(await queue.admin.inspect("w1")).toMatchObject({ state: "ready" });
    await queue.admin.drop({ confirm: name });
    // A wake-up arranged (and lost) just now covers the next task: none is tried for it, on another queue then.
    const other = fresh();
    const json = await runCli(["enqueue", "--type", "email", "--id", "w2", "--json"], {
      ...env,
      LEASEQ_QUEUE: other.name,
    });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: "w2",
      status: "ok",
      state: "ready",
      wakeError: expect.any(String),
    });
    await other.queue.admin.drop({ confirm: other.name });
  });

  it("a group held behind its FAILED task: stats --groups lists it first, inspect says so, skip lets it go on", async () => {
    const { name, cli } = fresh();
    const queue = new Queue(store, {
      name,
      settings: {
        policies: { import: { leaseMs: 30_000, maxAttempts: 1 } },
        typeGroups: { import: { ordered: true, onFailure: "hold" } },
      },
    });
    await queue.configure();
    const now = Date.now();
    await queue.enqueue(
      [
        { id: "acme-1", type: "import", group: "acme" },
        { id: "acme-2", type: "import", group: "acme" },
        { id: "big-1", type: "import", group: "big" },
        { id: "big-2", type: "import", group: "big" },
        { id: "big-3", type: "import", group: "big" },
      ],
      { now },
    );
    const claimed = await queue.claim({ count: 10, now });
    const acme = claimed.find((task) => task.id === "acme-1");
    if (!acme) throw new Error("acme-1 was not claimed");
    await queue.settle([{ ...acme, outcome: "fail", error: "bad file" }], { now: now + 1 });
    const stats = await cli(["stats", "--groups"]);
    expect(stats.code).toBe(0);
    const lines = stats.stdout.split("\n").filter((line) => line.startsWith("  import/"));
    expect(lines[0]).toMatch(
      /^ {2}import\/acme {2}ready 1 \(1 parked\) {2}leased 0 {2}oldest parked waited [\d.]+ m?s {2}held by acme-1 \(FAILED: requeue or skip it\)$/,
    );
    expect(lines[1]).toMatch(/^ {2}import\/big {2}ready 2/);
    const inspect = await cli(["inspect", "acme-1"]);
    expect(inspect.stdout).toContain(
      "holds:       its group acme waits behind it: leaseq requeue acme-1 (it runs first) or leaseq skip acme-1",
    );
    const skip = await cli(["skip", "acme-1", "acme-2"]);
    expect(skip.code).toBe(1);
    expect(skip.stdout).toContain("skipped acme-1 (FAILED; their groups go on)");
    expect(skip.stderr).toContain(`skip: not skipped in queue "${name}": acme-2 (not FAILED)`);
    expect((await queue.claim({ count: 10, now: now + 2 })).map((task) => task.id)).toEqual(["acme-2"]);
    expect(await queue.admin.inspect("acme-1")).toMatchObject({ state: "failed", holdsGroup: false });
  });

  it("enqueue --stdin sends nothing when any line is malformed, and names the line", async () => {
    const { cli, queue } = fresh();
    const input = ['{"type":"a","id":"ok1"}', '{"type":"a","priorty":1}'].join("\n");
    const run = await cli(["enqueue", "--stdin"], input);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'line 2: unknown field "priorty"; allowed: id, type, payload, priority, delayMs, runAt, group, dedupe, debounce, throttle, singleton',
    );
    const badPriority = await cli(["enqueue", "--stdin"], '{"type":"a"}\n{"type":"a","priority":5000}\n');
    expect(badPriority.code).toBe(2);
    expect(badPriority.stderr).toContain("line 2: priority must be an integer from -1000 to 1000, got 5000");
    expect(await queue.admin.inspect("ok1")).toBeUndefined();
    expect((await queue.stats({ now: Date.now() })).ready).toBe(0);
  });

  it("enqueue takes flow control from flags and from stdin lines, and says what it did", async () => {
    const { cli, queue } = fresh();
    const flags = ["enqueue", "--type", "sync", "--dedupe", "user:42", "--dedupe-ttl-ms", "60000"];
    expect(await cli([...flags, "--id", "a"])).toMatchObject({ code: 0, stdout: "enqueued a (ready)\n" });
    expect(await cli([...flags, "--id", "b"])).toMatchObject({
      code: 0,
      stdout: "duplicate b: its dedupe key holds a (ready); nothing changed\n",
    });
    const debounce = ["--debounce", "doc", "--debounce-delay-ms", "60000", "--debounce-max-wait-ms", "600000"];
    expect((await cli(["enqueue", "--type", "sync", "--id", "c", ...debounce])).stdout).toBe(
      "enqueued c (scheduled)\n",
    );
    expect((await cli(["enqueue", "--type", "sync", "--id", "d", ...debounce])).stdout).toBe(
      "enqueued d (scheduled), replacing c\n",
    );
    const throttle = ["--throttle", "t", "--throttle-per-ms", "600000"];
    expect((await cli(["enqueue", "--type", "sync", "--id", "e", ...throttle])).code).toBe(0);
    expect((await cli(["enqueue", "--type", "sync", "--id", "f", ...throttle])).stdout).toBe(
      "throttled f: its throttle key's period is taken; nothing enqueued\n",
    );
    const deferred = await cli(["enqueue", "--type", "sync", "--id", "g", ...throttle, "--throttle-defer", "--json"]);
    expect(JSON.parse(deferred.stdout)).toEqual({ id: "g", status: "ok", state: "scheduled" });
    const lines = ['{"id":"h","type":"sync","dedupe":{"key":"user:42","ttlMs":60000}}', '{"id":"i","type":"sync"}'];
    expect(JSON.parse((await cli(["enqueue", "--stdin", "--json"], lines.join("\n"))).stdout)).toEqual({
      tasks: 2,
      added: 1,
      duplicates: 1,
      throttled: 0,
    });
    const hostile = await cli(["enqueue", "--stdin"], '{"type":"sync","dedupe":{"key":"a{b}","ttlMs":1}}\n');
    expect(hostile.code).toBe(2);
    expect(hostile.stderr).toContain(
      'line 1: dedupe.key must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "a{b}"',
    );
    expect(await queue.admin.inspect("c")).toBeUndefined();
    expect((await cli(["enqueue", "--type", "sync", "--id", "j", "--singleton", "doc:1"])).stdout).toBe(
      "enqueued j (ready)\n",
    );
    expect((await cli(["enqueue", "--type", "sync", "--id", "k", "--singleton", "doc:1"])).stdout).toBe(
      "enqueued k (ready), replacing j\n",
    );
    const line = '{"id":"l","type":"sync","singleton":{"key":"doc:1"}}';
    expect(JSON.parse((await cli(["enqueue", "--stdin", "--json"], line)).stdout)).toMatchObject({ added: 1 });
    expect(await queue.admin.inspect("k")).toBeUndefined();
    // Two modes from flags are refused, naming both.
    const two = await cli([
      "enqueue",
      "--type",
      "sync",
      "--singleton",
      "doc:1",
      "--dedupe",
      "x",
      "--dedupe-ttl-ms",
      "5",
    ]);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain(
      "at most one flow control (dedupe, debounce, throttle, singleton), got dedupe and singleton",
    );
    // A mode's flag without its window names the flags it needs, and sends nothing.
    const bare = await cli([
      "enqueue",
      "--type",
      "sync",
      "--id",
      "m",
      "--debounce",
      "doc:2",
      "--debounce-delay-ms",
      "5",
    ]);
    expect([bare.code, bare.stderr]).toEqual([2, "leaseq: enqueue: --debounce needs --debounce-max-wait-ms <ms>\n"]);
    expect(await queue.admin.inspect("m")).toBeUndefined();
  });

  it("stats prints the count of each state, as text and as JSON", async () => {
    const { cli, queue, name } = fresh();
    await failTasks(queue, ["f"]); // first: it claims the head of the ready set
    await queue.enqueue(
      [
        { id: "a", type: "x" },
        { id: "b", type: "x" },
        { id: "c", type: "x", delayMs: 60_000 },
      ],
      { now: Date.now() },
    );
    const json = await cli(["stats", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      queue: name,
      backend: `Redis at ${redisUrl().replace(/\/+$/, "")}`,
      ready: 2,
      scheduled: 1,
      leased: 0,
      done: 0,
      failed: 1,
    });
    const text = await cli(["stats"]);
    expect(text.stdout).toMatch(
      /^queue "[^"]+" on Redis at redis:\/\/[^\n]+\nready\s+2 {3}oldest waiting .+\nscheduled\s+1\nleased\s+0\ndone\s+0\nfailed\s+1\n$/,
    );
    const verbose = await cli(["--verbose", "inspect", "a"]);
    expect(verbose.stderr).toBe(`leaseq: queue "${name}" on Redis at ${redisUrl().replace(/\/+$/, "")}\n`);
  });

  it("inspect shows one task; an unknown id fails with exit 1", async () => {
    const { cli, name } = fresh();
    await cli(["enqueue", "--type", "mail", "--id", "i1", "--payload", '{"a":[1,2]}']);
    const json = await cli(["inspect", "i1", "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: "i1", state: "ready", type: "mail", payload: { a: [1, 2] } });
    const text = await cli(["inspect", "i1"]);
    expect(text.stdout).toContain("state:       ready\n");
    expect(text.stdout).toContain('payload:     {"a":[1,2]}');
    const missing = await cli(["inspect", "nope"]);
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toBe(`leaseq: inspect: no task with id "nope" in queue "${name}"\n`);
  });

  it("inspect shows each attempt: its start, wait, run time, outcome and error", async () => {
    const { name, cli } = fresh();
    const queue = new Queue(store, { name, settings: { policies: { etl: { leaseMs: 60_000, maxAttempts: 3 } } } });
    await queue.configure();
    const t0 = Date.UTC(2030, 0, 2, 3, 4, 5);
    await queue.enqueue([{ id: "imp-1", type: "etl" }], { now: t0 });
    const [first] = await queue.claim({ count: 1, now: t0 + 1_500 });
    await queue.settle([{ ...first, outcome: "retry", retryAtMs: t0 + 10_000, error: "row 7: bad date" }], {
      now: t0 + 4_000,
    });
    await queue.claim({ count: 1, now: t0 + 10_000 });
    const inspect = await cli(["inspect", "imp-1"]);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout.trimEnd().split("\n").slice(-3)).toEqual([
      "history:",
      '  #1  2030-01-02T03:04:06.500Z  waited 1.5 s  ran 2.5 s  retried  "row 7: bad date"',
      "  #2  2030-01-02T03:04:15.000Z  waited 0 ms  running",
    ]);
    const json = JSON.parse((await cli(["inspect", "imp-1", "--json"])).stdout);
    expect(json.history[0]).toMatchObject({ attempt: 1, outcome: "retried", waitedMs: 1_500, runMs: 2_500 });
  });

  it("leaseq groups lists a tenant stuck behind a long task first, and stats says its tasks wait parked", async () => {
    const { name, cli } = fresh();
    const queue = new Queue(store, { name, settings: { typeGroups: { etl: { concurrency: 1 } } } });
    await queue.configure();
    // Tenant "stuck" enqueued 90 s ago and its first task still runs; "busy" has more READY, none parked.
    const then = Date.now() - 90_000;
    await queue.enqueue(
      [
        { id: "s1", type: "etl", group: "stuck" },
        { id: "s2", type: "etl", group: "stuck" },
        { id: "s3", type: "etl", group: "stuck" },
      ],
      { now: then },
    );
    await queue.claim({ count: 10, now: then, maxLeaseMs: 600_000 });
    await queue.enqueue(
      ["b1", "b2", "b3", "b4"].map((id) => ({ id, type: "etl", group: "busy" })),
      { now: Date.now() },
    );
    const groups = await cli(["groups"]);
    expect(groups.code).toBe(0);
    const lines = groups.stdout.split("\n").filter(Boolean);
    expect(lines[0]).toBe("groups (2 of 2 with work, stuck first):");
    expect(lines[1]).toMatch(
      /^ {2}etl\/stuck {2}ready 2 \(2 parked\) {2}leased 1 {2}oldest parked waited 1\.[56] min$/,
    );
    expect(lines[2]).toBe("  etl/busy  ready 4  leased 0");
    const filtered = await cli(["groups", "--filter", "bus", "--json"]);
    const json = JSON.parse(filtered.stdout);
    expect(json.groups.map((group: { group: string }) => group.group)).toEqual(["busy"]);
    expect([json.matched, json.scanned, json.more]).toEqual([1, 2, false]);
    const stats = await cli(["stats"]);
    expect(stats.stdout).toMatch(
      /ready +6 {3}oldest waiting 1\.[56] min \(parked behind its group: leaseq groups; the next to run waited [\d.]+ m?s\)/,
    );
  });

  it("enqueue --group puts a task in its group; list --group and stats --groups show the groups", async () => {
    const { cli, queue } = fresh();
    expect((await cli(["enqueue", "--type", "charge", "--group", "alice", "--id", "a1"])).code).toBe(0);
    await queue.enqueue(
      [
        { id: "a2", type: "charge", group: "alice" },
        { id: "b1", type: "charge", group: "bob" },
        { id: "n1", type: "charge" },
      ],
      { now: Date.now() },
    );
    const listed = await cli(["list", "ready", "--group", "alice"]);
    expect(listed.stdout.split("\n").filter(Boolean)).toEqual([
      "a1  charge  group alice  attempts 0  priority 0",
      "a2  charge  group alice  attempts 0  priority 0",
    ]);
    const stats = await cli(["stats", "--groups"]);
    expect(stats.stdout).toContain(
      "groups (2 of 2 with work, stuck first):\n  charge/alice  ready 2  leased 0\n  charge/bob  ready 1  leased 0",
    );
    const json = JSON.parse((await cli(["stats", "--groups", "--json"])).stdout);
    expect(json.groups.list[0]).toEqual({ type: "charge", group: "alice", leased: 0, ready: 2, parked: 0 });
    const bad = await cli(["enqueue", "--type", "charge", "--group", "no spaces"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('group must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "no spaces"');
  });

  it("takes ids and groups with ':' and '@' on the command line and on stdin, through every verb, the check clean", async () => {
    const { cli, queue } = fresh();
    const time = "sweep-2026-12-01T21:15:00Z";
    const slot = "nightly@2026-12-01T03:00:00Z";
    expect(await cli(["enqueue", "--type", "sweep", "--id", time, "--group", "@email"])).toMatchObject({
      code: 0,
      stdout: `enqueued ${time} (ready)\n`,
    });
    const lines = [
      { id: "user:42", type: "charge", group: "tenant:1" },
      { id: slot, type: "report" },
      { id: "user:43", type: "charge", group: "tenant:1" },
    ];
    expect(await cli(["enqueue", "--stdin"], lines.map((line) => JSON.stringify(line)).join("\n"))).toMatchObject({
      code: 0,
      stdout: "enqueued 3 of 3 tasks (0 duplicates)\n",
    });
    const inspected = await cli(["inspect", time]);
    expect(inspected.code).toBe(0);
    expect(inspected.stdout).toMatch(new RegExp(`^id: +${time}\nstate: +ready\ntype: +sweep\ngroup: +@email\n`));
    const listed = await cli(["list", "ready", "--group", "tenant:1"]);
    expect(listed.stdout.split("\n").filter(Boolean)).toEqual([
      "user:42  charge  group tenant:1  attempts 0  priority 0",
      "user:43  charge  group tenant:1  attempts 0  priority 0",
    ]);
    // Fail one and ack the others through the library (the slot stays leased), then requeue,
    // cancel and delete by id.
    const claimed = await queue.claim({ count: 10, now: Date.now() });
    const held = claimed.find((task) => task.id === "user:42");
    expect(held).toBeDefined();
    await queue.settle([{ id: "user:42", token: held?.token ?? "", outcome: "fail", error: "declined" }], {
      now: Date.now(),
    });
    const others = claimed.filter((task) => task.id !== "user:42" && task.id !== slot);
    await queue.ack(others, { now: Date.now() });
    const requeued = await cli(["requeue", "user:42"]);
    expect(requeued.code).toBe(0);
    expect(requeued.stdout).toMatch(/^requeued user:42\n/);
    expect(await cli(["cancel", slot])).toMatchObject({ code: 0, stdout: `cancelled ${slot} (FAILED)\n` });
    expect((await cli(["delete", slot, "user:43"])).code).toBe(0);
    expect(await queue.admin.inspect(slot)).toBeUndefined();
    const check = await cli(["check"]);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect(check.stdout).toMatch(/no problem found/);
    // Still refused, before anything is sent: a separator, and an id naming a task's own field.
    const refused = await cli(["enqueue", "--stdin"], '{"id":"ok:1","type":"x"}\n{"id":"a|b","type":"x"}\n');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      'enqueue --stdin: line 2: id must be 1-128 characters of A-Z a-z 0-9 _ . - : @, got "a|b"',
    );
    const reserved = await cli(["inspect", "user:s"]);
    expect(reserved.code).toBe(2);
    expect(reserved.stderr).toContain('inspect: id must not end in ":" and a lower-case letter');
    expect(await queue.admin.inspect("ok:1")).toBeUndefined();
  });

  it("list shows the tasks of a state in rank order, up to --limit", async () => {
    const { cli, queue } = fresh();
    await queue.enqueue(
      [
        { id: "low", type: "x", priority: 5 },
        { id: "high", type: "x", priority: -5 },
        { id: "mid", type: "x" },
      ],
      { now: Date.now() },
    );
    const run = await cli(["list", "ready", "--limit", "2"]);
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n").filter(Boolean)).toEqual([
      "high  x  attempts 0  priority -5",
      "mid  x  attempts 0  priority 0",
    ]);
    const json = await cli(["list", "ready", "--offset", "2", "--json"]);
    expect(JSON.parse(json.stdout).map((task: { id: string }) => task.id)).toEqual(["low"]);
    expect((await cli(["list", "failed"])).stderr).toBe("no failed tasks\n");
  });

  it("requeue sends failed tasks back to READY, saying when they start; a task that is not FAILED exits 1", async () => {
    const { cli, queue } = fresh();
    await failTasks(queue, ["f1", "f2", "f3", "f4"]);
    expect(await cli(["requeue", "f1"])).toMatchObject({ code: 0, stdout: `requeued f1\n${WAKE_HINT}\n` });
    expect((await queue.admin.inspect("f1"))?.state).toBe("ready");
    // Requeueing f1 again (say, a retry after a lost reply) is harmless and answers ok.
    expect(await cli(["requeue", "f1"])).toMatchObject({ code: 0, stdout: `requeued f1\n${WAKE_HINT}\n` });
    await queue.enqueue([{ id: "r1", type: "t" }], { now: Date.now() });
    const refused = await cli(["requeue", "r1", "f2", "ghost"]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe(`requeued f2\n${WAKE_HINT}\n`);
    expect(refused.stderr).toContain("r1 (not FAILED), ghost (no such task)");
    expect(await cli(["requeue", "r1"])).toMatchObject({ code: 1, stdout: "" });
    expect(await cli(["requeue", "--all-failed"])).toMatchObject({
      code: 0,
      stdout: `requeued 2 failed tasks\n${WAKE_HINT}\n`,
    });
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ ready: 5, failed: 0 }); // f1-f4 and r1
  });

  it("delete-queue --yes deletes every key of the queue, in every state, and nothing of another queue", async () => {
    const { cli, queue, name } = fresh();
    const other = fresh();
    await failTasks(queue, ["f"]); // first: it claims the head of the ready set
    await queue.enqueue(
      [
        { id: "r", type: "x" },
        { id: "s", type: "x", delayMs: 60_000 },
      ],
      { now: Date.now() },
    );
    await other.queue.enqueue([{ id: "keep", type: "x" }], { now: Date.now() });
    const raw = rawClient();
    try {
      expect(await raw.exists(queue.keys.task, queue.keys.ready, queue.keys.failed)).toBe(3);
      const run = await cli(["delete-queue", "--yes"]);
      // task, ready, scheduled, failed, seq, config, and leased (its anchor stays once a claim
      // leased something: docs/storage.md): every key the queue had.
      expect(run).toMatchObject({ code: 0, stdout: `deleted queue "${name}": 7 keys\n` });
      expect(await raw.exists(...Object.values(queue.keys))).toBe(0);
      expect(await other.queue.admin.inspect("keep")).toMatchObject({ state: "ready" });
    } finally {
      raw.disconnect();
    }
  });

  it("delete-queue of a queue that does not exist exits 1 naming the nearest queue names, and deletes nothing", async () => {
    const base = uniqueQueueName("delq");
    const [orders, ordersEu] = [`${base}-orders`, `${base}-orders-eu`];
    const queues = [orders, ordersEu].map((name) => new Queue(store, { name }));
    try {
      for (const queue of queues) await queue.enqueue([{ id: "keep", type: "x" }], { now: Date.now() });
      const typo = `${base}-ordres`;
      const run = await runCli(["--queue", typo, "delete-queue", "--yes"], { REDIS_URL: redisUrl() });
      expect(run).toMatchObject({
        code: 1,
        stdout: "",
        stderr: `leaseq: delete-queue: no such queue "${typo}" on Redis at ${redisUrl()}; nothing was deleted; nearest queue names: ${orders}, ${ordersEu}\n`,
      });
      for (const queue of queues) expect(await queue.admin.inspect("keep")).toMatchObject({ state: "ready" });
      const far = await runCli(["--queue", "zz-no-such-queue-anywhere", "delete-queue", "--yes"], {
        REDIS_URL: redisUrl(),
      });
      expect(far.code).toBe(1);
      expect(far.stderr).toMatch(
        /^leaseq: delete-queue: no such queue "zz-no-such-queue-anywhere" on Redis at \S+; nothing was deleted; no queue name there is near it \(leaseq queues lists all \d+\)\n$/,
      );
    } finally {
      for (const queue of queues) await queue.admin.drop({ confirm: queue.name });
    }
  });

  it("shows a record that cannot be read as corrupt, lists it with the reason, repairs one and deletes another", async () => {
    const { cli, queue } = fresh();
    await queue.enqueue(
      [
        { id: "a", type: "job", payload: { n: 1 } },
        { id: "b", type: "job" },
        { id: "c", type: "job" },
      ],
      { now: Date.now() },
    );
    const raw = rawClient();
    try {
      // A stray write (another program, a bug) breaks two records: a's state, c's body.
      await raw.hset(queue.keys.task, "a:s", "not a state");
      await raw.hset(queue.keys.task, "c", "garbage");
    } finally {
      raw.disconnect();
    }
    const claimed = await queue.claim({ count: 3, now: Date.now() });
    expect(claimed.map((task) => task.id)).toEqual(["b"]);
    const stats = await cli(["stats"]);
    expect(stats.stdout).toMatch(
      /corrupt\s+2 {3}records that cannot be read: leaseq list corrupt, then repair or delete/,
    );
    const listed = await cli(["list", "corrupt"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /^a {2}set aside at \S+ {2}unreadable state record\nc {2}set aside at \S+ {2}unreadable record/,
    );
    expect((await cli(["inspect", "a"])).stdout).toMatch(/state: +corrupt\n[\s\S]*why: +unreadable state record/);

    const repaired = await cli(["repair", "a", "c"]);
    expect(repaired.code).toBe(1);
    expect(repaired.stdout).toBe("repaired a (READY again)\n");
    expect(repaired.stderr).toContain("c (its body cannot be read either: leaseq delete it)");
    expect(await queue.admin.inspect("a")).toMatchObject({ state: "ready", payload: '{"n":1}' });

    expect(await cli(["delete", "c", "b", "ghost"])).toMatchObject({ code: 1, stdout: "deleted c\n" });
    expect((await cli(["delete", "b"])).stderr).toContain(
      "b (LEASED: a worker is running it; delete it once its lease ends)",
    );
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ ready: 1, leased: 1, corrupt: 0 });
  });

  it("trim deletes DONE and FAILED tasks older than the retention given", async () => {
    const { cli, queue } = fresh();
    await failTasks(queue, ["old-f"]);
    await queue.enqueue([{ id: "d", type: "x" }], { now: Date.now() });
    const [claimed] = await queue.claim({ count: 1, now: Date.now() });
    await queue.ack([claimed], { now: Date.now() });
    const keep = await cli(["trim"]);
    expect(keep).toMatchObject({
      code: 0,
      stdout: "trimmed 0 done (older than the queue's retention) and 0 failed (older than the queue's retention)\n",
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const trimmed = await cli(["trim", "--done-retention-ms", "1", "--failed-retention-ms", "1"]);
    expect(trimmed.stdout).toBe("trimmed 1 done (older than 1 ms) and 1 failed (older than 1 ms)\n");
    expect(await queue.stats({ now: Date.now() })).toMatchObject({ done: 0, failed: 0 });
  });

  it("watch prints one plain line per refresh when stdout is not a terminal", async () => {
    const { cli, queue } = fresh();
    await queue.enqueue([{ id: "w", type: "x" }], { now: Date.now() });
    const run = await cli(["watch", "--count", "3", "--interval-ms", "100"]);
    expect(run.code).toBe(0);
    const lines = run.stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).toMatch(/^\S+Z ready=1 scheduled=0 leased=0 done=0 failed=0 finished\/s=\d+\.\d$/);
    }
    expect(run.stdout).not.toContain("\u001b[");
  });
});
