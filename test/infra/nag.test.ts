import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { defineTasks } from "../../functions/tasks.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { nagSuppressions } from "../../infra/nag.js";
import { REPO_ROOT } from "../helpers/paths.js";
import { REQUIRED_PROPS, SKIP_BUNDLING } from "./synth.js";

const ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq/upstash-AbC123";

/** Each suppression as "<rule> <path>". */
const listed = (leaseQueue: LeaseQueue) => nagSuppressions(leaseQueue).map(({ id, path }) => `${id} ${path}`);

describe("nagSuppressions (leaseq/cdk, without cdk-nag)", () => {
  it("lists the runtime on the three functions, the wake queue's dead-letter queue and a created secret's rotation, each with its construct, path and reason", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Nag");
    const emails = new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails" });
    expect(listed(emails)).toEqual([
      "AwsSolutions-L1 Nag/Emails/Intake",
      "AwsSolutions-L1 Nag/Emails/Worker",
      "AwsSolutions-L1 Nag/Emails/Reclaimer",
      "AwsSolutions-SQS3 Nag/Emails/WakeQueue",
      "AwsSolutions-SMG4 Nag/Emails/UpstashSecret",
    ]);
    const suppressions = nagSuppressions(emails);
    expect(suppressions.map((s) => s.construct)).toEqual([
      emails.intake,
      emails.worker,
      emails.reclaimer,
      emails.wakeQueue,
      emails.secret,
    ]);
    for (const { reason } of suppressions) expect(reason.length).toBeGreaterThan(80);
    expect(suppressions[0].reason).toMatch(/^Node\.js 22 is the runtime this queue was given/);
  });

  it("leaves the rotation of a secret it did not create to its owner, and names the runtime given", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Nag");
    const emails = new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails" });
    const ledger = new LeaseQueue(stack, "Ledger", {
      ...REQUIRED_PROPS,
      queueName: "ledger",
      secret: emails.secret,
      runtime: 24,
    });
    const imported = new LeaseQueue(stack, "Imported", {
      ...REQUIRED_PROPS,
      queueName: "imported",
      upstashSecretArn: ARN,
    });
    for (const leaseQueue of [ledger, imported]) {
      expect(listed(leaseQueue).map((line) => line.split(" ")[0])).toEqual([
        "AwsSolutions-L1",
        "AwsSolutions-L1",
        "AwsSolutions-L1",
        "AwsSolutions-SQS3",
      ]);
    }
    expect(nagSuppressions(ledger)[0].reason).toMatch(/^Node\.js 24 is the runtime this queue was given/);
  });

  it("on a queue deployments share, lists the tag-conditioned SendMessage of each function's role policy", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Nag");
    const tasks = defineTasks({ types: { echo: { handler: () => {} } }, acceptTypes: ["report"] });
    const shared = new LeaseQueue(stack, "Shared", { ...REQUIRED_PROPS, tasks, queueName: "shared" });
    expect(listed(shared).filter((line) => line.startsWith("AwsSolutions-IAM5"))).toEqual([
      "AwsSolutions-IAM5 Nag/Shared/IntakeRole/DefaultPolicy",
      "AwsSolutions-IAM5 Nag/Shared/WorkerRole/DefaultPolicy",
      "AwsSolutions-IAM5 Nag/Shared/ReclaimerRole/DefaultPolicy",
    ]);
  });

  it("is shipped code that does not import cdk-nag: cdk-nag stays optional", () => {
    const infra = join(REPO_ROOT, "infra");
    const importers = readdirSync(infra).filter((file) =>
      /from\s+"cdk-nag"|import\(\s*"cdk-nag"/.test(readFileSync(join(infra, file), "utf8")),
    );
    expect(importers).toEqual([]);
    expect(readFileSync(join(REPO_ROOT, "examples/reference/nag.ts"), "utf8")).toContain("nagSuppressions(leaseQueue)");
  });
});
