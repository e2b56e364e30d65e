// `leaseq schedules`, run in process (main, with its own env and streams) against a real redis-server: set (and its refusals:
// a bad definition, a declared schedule), list after a plan, pause, resume, remove, run-now with
// and without the wake queue, and names that are no schedule's or no name at all.
import { afterAll, describe, expect, it } from "vitest";
import { LocalSqs } from "../../dev/standins/sqs/index.js";
import { Queue } from "../../shared/queue.js";
import { TcpStore } from "../../shared/stores/tcp.js";
import { rawClient, redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runCli } from "./cli-run.js";

const store = TcpStore.fromUrl(redisUrl());
afterAll(() => store.close());

function fresh() {
  const name = uniqueQueueName("sched");
  const env = { REDIS_URL: redisUrl(), LEASEQ_QUEUE: name };
  const queue = new Queue(store, { name });
  const cli = (args: string[], extra: Record<string, string> = {}) =>
    runCli(["schedules", ...args], { ...env, ...extra });
  return { name, queue, cli };
}

const MINUTE = 60_000;

/** `schedules set nightly` with every option, its jitter as given (`30s` or `30000`). */
const nightly = (jitter: string) => [
  "set",
  "nightly",
  ...["--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--type", "report", "--payload", '{"to":"ops"}'],
  ...["--priority", "-5", "--group", "@reports", "--catch-up", "2", "--overlap", "skip", "--jitter-ms", jitter],
];

describe("leaseq schedules", { timeout: 60_000 }, () => {
  it("set prints the schedule and its next slot; the same again is unchanged; list shows it", async () => {
    const { cli, queue, name } = fresh();
    const set = await cli(nightly("30s"));
    expect(set.stderr).toBe("");
    expect(set.code).toBe(0);
    const [info] = await queue.schedules.list();
    expect(info.definition).toEqual({
      cron: "0 3 * * *",
      tz: "Europe/Berlin",
      type: "report",
      payload: { to: "ops" },
      priority: -5,
      group: "@reports",
      catchUp: { max: 2 },
      overlap: "skip",
      jitterMs: 30_000,
    });
    expect(set.stdout).toBe(
      `set schedule "nightly" of queue "${name}": cron "0 3 * * *" Europe/Berlin\nnext slot: ${new Date(info.nextSlotMs ?? 0).toISOString()}\n`,
    );
    // 03:00 in Berlin is 01:00 or 02:00 UTC.
    expect(new Date(info.nextSlotMs ?? 0).toISOString()).toMatch(/T0[12]:00:00\.000Z$/);
    const again = await cli(nightly("30000"));
    expect(again).toMatchObject({ code: 0 });
    expect(again.stdout).toMatch(/^schedule "nightly" of queue ".*" is set so already \(unchanged\)\nnext slot: /);
    const every = await cli(["set", "ping", "--every", "90s", "--type", "ping"]);
    expect(every).toMatchObject({ code: 0 });
    expect(every.stdout).toContain('set schedule "ping" of queue');
    expect(every.stdout).toContain(": every 90 s\n");
    const list = await cli(["list"]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+WHEN\s+NEXT SLOT\s+LAST SLOT AND ITS TASK\s+MADE\/PASSED OVER\s+SET BY$/);
    expect(lines.find((line) => line.startsWith("nightly"))).toMatch(
      /^nightly\s+cron "0 3 \* \* \*" Europe\/Berlin\s+\d{4}-\d\d-\d\dT0[12]:00:00\.000Z\s+–\s+0\/0\s+run-time$/,
    );
    expect(lines.find((line) => line.startsWith("ping"))).toMatch(/^ping\s+every 90 s\s+\S+Z\s+–\s+0\/0\s+run-time$/);
  });

  it("a bad definition exits 2 naming every problem, and nothing is set", async () => {
    const { cli, queue } = fresh();
    const bad = await cli([
      "set",
      "bad",
      "--cron",
      "61 * * * *",
      "--tz",
      "Mars/Olympus",
      "--type",
      "job",
      "--catch-up",
      "all",
      "--overlap",
      "never",
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toMatch(
      /^leaseq: schedules\.set: schedule "bad": 4 problems: cron "61 \* \* \* \*" is not valid: .*minute.*; tz must be an IANA time zone .*got "Mars\/Olympus"; catchUp must be "none", "latest" or \{ max: 1-100 \}, got "all"; overlap must be "allow" or "skip", got "never"\n$/,
    );
    const neither = await cli(["set", "bad", "--type", "job"]);
    expect(neither).toMatchObject({ code: 2 });
    expect(neither.stderr).toContain("give exactly one of cron (a cron expression) and every (ms)");
    const both = await cli(["set", "bad", "--every", "5x", "--cron", "* * * * *", "--priority", "high"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(
      /4 problems: .*exactly one of cron.*every must be an integer .*got "5x".*type must be.*priority must be an integer .*got "high"/,
    );
    const json = await cli(["set", "bad", "--every", "1000", "--type", "job", "--payload", "{nope"]);
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/^leaseq: schedules set: --payload is not valid JSON/);
    expect(await queue.schedules.list()).toEqual([]);
  });

  it("refuses to set a declared schedule with the library's message (exit 1); pause still works on it", async () => {
    const { cli, queue } = fresh();
    await queue.schedules.set("owned", { every: MINUTE, type: "job" }, { now: Date.now(), owner: "deploy" });
    const refused = await cli(["set", "owned", "--every", "1000", "--type", "job"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'leaseq: schedules.set: schedule "owned" is declared in the task module of deployment "deploy" (defineTasks schedules): change it there and deploy, or pause it\n',
    );
    expect((await queue.schedules.list())[0].definition).toEqual({ every: MINUTE, type: "job" });
    expect(await cli(["pause", "owned"])).toMatchObject({ code: 0 });
    expect((await cli(["list"])).stdout).toMatch(/\nowned\s+every 60 s\s+paused\s+–\s+0\/0\s+deploy deploy\n$/);
  });

  it("pause, resume and remove say what changed, say 'unchanged' when nothing did, and plan accordingly", async () => {
    const { cli, queue, name } = fresh();
    await queue.schedules.set("hourly", { cron: "0 * * * *", type: "job" }, { now: Date.now() });
    const what = `schedule "hourly" of queue "${name}"`;
    expect(await cli(["pause", "hourly"])).toMatchObject({ code: 0, stdout: `paused ${what}\n`, stderr: "" });
    expect(await cli(["pause", "hourly"])).toMatchObject({
      code: 0,
      stdout: `${what} was paused already (unchanged)\n`,
    });
    expect(await queue.schedules.plan({ now: Date.now(), horizonMs: 2 * 3_600_000 })).toMatchObject({ made: 0 });
    expect(await cli(["resume", "hourly"])).toMatchObject({ code: 0, stdout: `resumed ${what}\n` });
    expect(await cli(["resume", "hourly"])).toMatchObject({ code: 0, stdout: `${what} was not paused (unchanged)\n` });
    expect((await queue.schedules.plan({ now: Date.now(), horizonMs: 2 * 3_600_000 })).made).toBeGreaterThanOrEqual(1);
    expect(await cli(["remove", "hourly"])).toMatchObject({ code: 0, stdout: `removed ${what}\n` });
    expect(await queue.schedules.list()).toEqual([]);
  });

  it("an unknown name exits 1 with the nearest names; a name that cannot be one exits 2, echoed as given", async () => {
    const { cli, queue, name } = fresh();
    for (const each of ["nightly-report", "nightly-reports", "hourly"]) {
      await queue.schedules.set(each, { every: MINUTE, type: "job" }, { now: Date.now() });
    }
    for (const verb of ["remove", "pause", "resume", "run-now"]) {
      const missed = await cli([verb, "nightly-reprt"]);
      expect(missed, verb).toMatchObject({
        code: 1,
        stdout: "",
        stderr: `leaseq: schedules ${verb}: no schedule "nightly-reprt" in queue "${name}"; nearest schedule names: nightly-report, nightly-reports\n`,
      });
    }
    expect((await cli(["pause", "weekly-digest"])).stderr).toContain(
      "no schedule name there is near it (leaseq schedules list lists all 3)",
    );
    const empty = fresh();
    expect((await empty.cli(["remove", "x"])).stderr).toContain("the queue has no schedules");
    expect((await empty.cli(["list"])).stderr).toBe(
      `no schedules in queue "${empty.name}" (leaseq schedules set, or declare them)\n`,
    );
    const hostile = ["<script>alert(1)</script>", "has@at", "a:b", "x".repeat(65), "-- --yes", "$(rm -rf /)"];
    for (const [index, bad] of hostile.entries()) {
      // Every name through pause; the first two through run-now and set as well.
      for (const verb of index < 2 ? ["pause", "run-now", "set"] : ["pause"]) {
        const flags = verb === "set" ? ["--every", "1000", "--type", "job"] : [];
        const refused = await cli([verb, ...flags, "--", bad]);
        expect(refused.code, `${verb} ${bad}`).toBe(2);
        expect(refused.stderr).toContain("schedule name must be 1-64 characters of A-Z a-z 0-9 _ . -, got");
        expect(refused.stderr).toContain(JSON.stringify(bad).slice(0, 40));
      }
    }
    expect((await queue.schedules.list()).map((info) => info.name).sort()).toEqual([
      "hourly",
      "nightly-report",
      "nightly-reports",
    ]);
    expect((await queue.schedules.list()).every((info) => !info.paused)).toBe(true);
  });

  it("list shows a schedule the planner set aside, with why, and a declared one's deployment", async () => {
    const { cli, queue } = fresh();
    const now = Date.now();
    await queue.schedules.syncDeclared({ hourly: { every: 3_600_000, type: "job" } }, { now, owner: "stack-a" });
    await queue.schedules.set("broken", { every: MINUTE, type: "job" }, { now });
    const redis = rawClient();
    try {
      await redis.hset(queue.keys.schedules, "broken", JSON.stringify({ cron: "61 * * * *", type: "job" }));
    } finally {
      redis.disconnect();
    }
    expect((await queue.schedules.plan({ now, horizonMs: 3 * MINUTE })).setAside).toBe(1);
    const list = await cli(["list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/\nbroken\s+cron "61 \* \* \* \*" UTC\s+set aside\s+–\s+0\/0\s+run-time\n/);
    // (Within 3 minutes of the hour, the plan above made hourly's next slot: its last slot shows.)
    expect(list.stdout).toMatch(/\nhourly\s+every 3600 s\s+\S+\s+(–|\S+ scheduled)\s+[01]\/0\s+deploy stack-a\n/);
    expect(list.stdout).toMatch(/\nbroken is set aside: .*cron "61 \* \* \* \*" is not valid/);
  });

  it("list after a plan shows the last slot, its task's state and the counts; --json gives the same", async () => {
    const { cli, queue } = fresh();
    const now = Date.now();
    await queue.schedules.set("tick", { every: MINUTE, type: "job", group: "@grp" }, { now });
    await queue.schedules.set("idle", { cron: "0 0 1 1 *", tz: "America/New_York", type: "job" }, { now });
    await queue.schedules.pause("idle", { now });
    const plan = await queue.schedules.plan({ now, horizonMs: 3 * MINUTE });
    expect(plan.made).toBe(3);
    const [info] = (await queue.schedules.list()).filter((each) => each.name === "tick");
    const lastSlot = info.lastSlotMs ?? 0;
    expect(info.lastTaskId).toBe(`tick@${new Date(lastSlot).toISOString()}`);
    const list = await cli(["list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      new RegExp(
        `\\ntick\\s+every 60 s\\s+${new Date(lastSlot + MINUTE).toISOString()}\\s+${new Date(lastSlot).toISOString()} scheduled\\s+3/0\\s+run-time\\n`,
      ),
    );
    expect(list.stdout).toMatch(/\nidle\s+cron "0 0 1 1 \*" America\/New_York\s+paused\s+–\s+0\/0\s+run-time\n$/);
    // Its task gone (deleted): the last slot says so.
    await queue.admin.delete([info.lastTaskId ?? ""], {});
    expect((await cli(["list"])).stdout).toContain(`${new Date(lastSlot).toISOString()} gone`);
    const json = JSON.parse((await cli(["list", "--json"])).stdout) as Array<Record<string, unknown>>;
    expect(json.map((each) => each.name)).toEqual(["tick", "idle"]);
    expect(json[0]).toMatchObject({
      name: "tick",
      definition: { every: MINUTE, type: "job", group: "@grp" },
      paused: false,
      declared: false,
      nextSlotMs: lastSlot + MINUTE,
      lastTaskId: info.lastTaskId,
      lastSlotMs: lastSlot,
      lastTaskState: null,
      made: 3,
      passedOver: 0,
    });
    expect(json[1]).toMatchObject({ name: "idle", paused: true, nextSlotMs: null, lastTaskId: null, made: 0 });
  });

  it("run-now enqueues one task now and prints its id; with the wake queue's URL it sends the wake-up", async () => {
    const { cli, queue, name } = fresh();
    await queue.schedules.set("report", { cron: "0 3 * * *", type: "report", payload: { n: 1 } }, { now: Date.now() });
    const plain = await cli(["run-now", "report"]);
    expect(plain.code).toBe(0);
    const id = /^enqueued (report@run-\S+) \(schedule "report"\)\n/.exec(plain.stdout)?.[1] ?? "";
    expect(id, plain.stdout).toMatch(/^report@run-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(plain.stdout).toContain(
      "the enqueued task and any other ready ones start at the reclaimer's next run (within a minute); set LEASEQ_WAKE_QUEUE_URL",
    );
    expect(await queue.admin.inspect(id)).toMatchObject({ state: "ready", type: "report", payload: '{"n":1}' });
    const sqs = new LocalSqs(async () => undefined);
    await sqs.listen();
    try {
      const woken = await cli(["run-now", "report"], {
        LEASEQ_WAKE_QUEUE_URL: sqs.queueUrl,
        LEASEQ_SQS_ENDPOINT: sqs.endpoint,
      });
      expect(woken.code).toBe(0);
      expect(woken.stdout).toMatch(
        new RegExp(`^enqueued report@run-\\S+ \\(schedule "report"\\)\\nsent a wake-up to ${sqs.queueUrl}\\n$`),
      );
      expect(sqs.queue.all().map((message) => message.body)).toEqual(['{"leaseq":"wake"}']);
    } finally {
      await sqs.close();
    }
    await queue.admin.pause({ now: Date.now() });
    expect((await cli(["run-now", "report"])).stdout).toMatch(
      new RegExp(`\\nqueue "${name}" is paused: the task starts once it is resumed \\(leaseq resume\\)\\n$`),
    );
    expect((await queue.stats({ now: Date.now() })).ready).toBe(3);
  });
});
