import { describe, expect, inject, it } from "vitest";
import { freePort } from "../helpers/redis-server.js";
import { redisUrl, uniqueQueueName } from "../helpers/stores.js";
import { runBin, runCli } from "./cli-run.js";

const COMMANDS = ["enqueue", "stats", "inspect", "list", "requeue", "trim", "watch", "delete-queue", "dev"];

describe("leaseq CLI exit codes and messages", { timeout: 60_000 }, () => {
  const env = () => ({ REDIS_URL: redisUrl(), LEASEQ_QUEUE: uniqueQueueName("cli") });

  it("the built bin, in a process of its own: help exits 0, a usage error 2 with nothing sent, a failed operation 1", async () => {
    const help = await runBin(["--help"], {});
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^Usage: leaseq /);
    const usage = await runBin(["stats", "--jsn"], env());
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("error: unknown option '--jsn'");
    const failed = await runBin(["inspect", "nope"], env());
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain("nope");
  });

  it("prints help and exits 0 for the program and every command", async () => {
    const top = await runCli(["--help"], {});
    expect(top.code).toBe(0);
    for (const command of COMMANDS) expect(top.stdout).toContain(`  ${command} `);
    expect(top.stdout).toContain("Exit codes: 0 ok, 1 the operation failed, 2 usage error");
    for (const command of COMMANDS) {
      const run = await runCli([command, "--help"], {});
      expect(run, command).toMatchObject({ code: 0, stderr: "" });
      expect(run.stdout).toMatch(new RegExp(`^Usage: leaseq ${command} `));
    }
  });

  it.each([
    [["frob"], "error: unknown command 'frob'"],
    [["stats", "--jsn"], "error: unknown option '--jsn'"],
    [["inspect"], "error: missing required argument 'id'"],
    [["list", "waiting"], "Allowed choices are ready, scheduled, leased, done, failed, corrupt."],
    [["list", "ready", "--limit", "0"], "expected an integer from 1 to 1000."],
    [["enqueue", "--type", "x", "--priority", "high"], "expected an integer from -1000 to 1000."],
    [["enqueue", "--type", "x", "--run-at", "tomorrow"], "expected an ISO 8601 time"],
    [["enqueue", "--type", "x", "--delay-ms", "5", "--run-at", "2030-01-01T00:00:00Z"], "cannot be used with option"],
    [["enqueue", "--type", "x", "--stdin"], "cannot be used with option"],
    [["enqueue"], "enqueue: give --type TYPE for one task, or --stdin to read JSON lines"],
    [["enqueue", "--type", "x", "--payload", "{oops"], "enqueue: --payload is not valid JSON"],
    [
      ["enqueue", "--type", "x", "--payload", "@/nonexistent/p.json"],
      "cannot read payload file /nonexistent/p.json (ENOENT)",
    ],
    [["enqueue", "--type", "bad type"], 'type must be 1-64 characters of A-Z a-z 0-9 _ . -, got "bad type"'],
    [
      ["requeue"],
      "requeue: give task ids, --all-failed, or filters (--type, --group, --error, --older-than): one of them",
    ],
    [["delete-queue"], "cannot be undone; run it again with --yes"],
    [
      ["requeue", "a", "--all-failed"],
      "requeue: give task ids, --all-failed, or filters (--type, --group, --error, --older-than): one of them",
    ],
    [["--queue", "no spaces", "stats"], 'queue name must be 1-64 characters of A-Z a-z 0-9 _ . -, got "no spaces"'],
  ])("exits 2 on the usage error %j", async (args, message) => {
    const run = await runCli(args, env());
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(message);
  });

  it("exits 2 naming the variables when no queue or no Redis is configured", async () => {
    const noQueue = await runCli(["stats"], { REDIS_URL: redisUrl() });
    expect(noQueue).toMatchObject({
      code: 2,
      stderr: "leaseq: no queue given: pass --queue NAME or set LEASEQ_QUEUE\n",
    });
    const noRedis = await runCli(["stats", "--json"], { LEASEQ_QUEUE: "q" });
    expect(noRedis.code).toBe(2);
    expect(noRedis.stderr).toContain(
      "no Redis configured: set exactly one of: UPSTASH_SECRET_ARN (a Secrets Manager secret holding the Upstash URL and token; on AWS), UPSTASH_REDIS_REST_URL with UPSTASH_REDIS_REST_TOKEN (Upstash REST), or REDIS_URL (redis:// or rediss://)",
    );
    const halfUpstash = await runCli(["stats"], { LEASEQ_QUEUE: "q", UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1" });
    expect(halfUpstash).toMatchObject({ code: 2 });
    expect(halfUpstash.stderr).toContain("UPSTASH_REDIS_REST_TOKEN must be set with UPSTASH_REDIS_REST_URL");
  });

  it("exits 2 naming every variable when more than one connection is set, whatever their order", async () => {
    const run = await runCli(["stats"], {
      LEASEQ_QUEUE: "q",
      REDIS_URL: redisUrl(),
      UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1",
      UPSTASH_REDIS_REST_TOKEN: "t0ken-never-shown",
      UPSTASH_SECRET_ARN: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq-AbC123",
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "more than one Redis connection is configured (UPSTASH_SECRET_ARN, UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, REDIS_URL are set)",
    );
    expect(run.stderr).not.toContain("t0ken-never-shown");
  });

  it("says a rejected Upstash token is a rejected token (exit 1), not that Upstash is unreachable", async () => {
    const run = await runCli(["stats"], {
      LEASEQ_QUEUE: "q",
      UPSTASH_REDIS_REST_URL: inject("upstashUrl"),
      UPSTASH_REDIS_REST_TOKEN: "wrong-t0ken",
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Upstash rejected the REST token (401 Unauthorized): check UPSTASH_REDIS_REST_TOKEN");
    expect(run.stderr).not.toMatch(/running and reachable/);
    expect(run.stderr).not.toContain("wrong-t0ken");
  });

  it("--queue wins over LEASEQ_QUEUE", async () => {
    const name = uniqueQueueName("cli");
    const run = await runCli(["--queue", name, "stats", "--json"], env());
    expect(JSON.parse(run.stdout).queue).toBe(name);
  });

  it("exits 1 when Redis cannot be reached, saying where, from which variable and what to check, never printing the password", async () => {
    const port = await freePort();
    const run = await runCli(["stats"], { REDIS_URL: `redis://:s3cr3t-pw@127.0.0.1:${port}`, LEASEQ_QUEUE: "q" });
    expect(run).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `leaseq: stats: Redis unreachable at 127.0.0.1:${port} (from REDIS_URL): connection refused (nothing listens on that port); check that Redis is running there, that REDIS_URL names its host and port (rediss:// for TLS), and that this machine may connect to it (firewall, security group, VPC)\n`,
    });
  });

  it("a one-letter password is redacted without taking that letter out of the message's words", async () => {
    const port = await freePort();
    const run = await runCli(["stats"], { REDIS_URL: `redis://:e@127.0.0.1:${port}`, LEASEQ_QUEUE: "q" });
    expect(run).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `leaseq: stats: Redis unreachable at 127.0.0.1:${port} (from REDIS_URL): connection refused (nothing listens on that port); check that Redis is running there, that REDIS_URL names its host and port (rediss:// for TLS), and that this machine may connect to it (firewall, security group, VPC)\n`,
    });
  });

  it("exits 1 when Upstash cannot be reached, saying where, from which variable and what to check, never printing the token", async () => {
    const port = await freePort();
    const run = await runCli(["stats"], {
      UPSTASH_REDIS_REST_URL: `http://127.0.0.1:${port}`,
      UPSTASH_REDIS_REST_TOKEN: "t0ken-never-shown",
      LEASEQ_QUEUE: "q",
    });
    expect(run).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `leaseq: stats: Upstash unreachable at 127.0.0.1:${port} (from UPSTASH_REDIS_REST_URL): connection refused (nothing listens on that port); check that UPSTASH_REDIS_REST_URL is the database's REST URL (https://<database>.upstash.io, in the Upstash console) and that this machine can reach it (a Lambda in a VPC needs a NAT gateway)\n`,
    });
  });

  it("works over the Upstash REST endpoint, and a wrong token exits 1 without printing it", async () => {
    const upstash = { UPSTASH_REDIS_REST_URL: inject("upstashUrl"), LEASEQ_QUEUE: uniqueQueueName("cli") };
    const ok = await runCli(["enqueue", "--type", "x", "--id", "u1"], {
      ...upstash,
      UPSTASH_REDIS_REST_TOKEN: inject("upstashToken"),
    });
    expect(ok).toMatchObject({ code: 0, stdout: "enqueued u1 (ready)\n" });
    const stats = await runCli(["stats", "--json"], { ...upstash, UPSTASH_REDIS_REST_TOKEN: inject("upstashToken") });
    expect(JSON.parse(stats.stdout)).toMatchObject({ ready: 1 });
    const wrong = "wrong-token-0123456789";
    const denied = await runCli(["stats"], { ...upstash, UPSTASH_REDIS_REST_TOKEN: wrong });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^leaseq: stats: /);
    expect(denied.stderr + denied.stdout).not.toContain(wrong);
    expect(denied.stderr).not.toContain(inject("upstashToken"));
  });
});
