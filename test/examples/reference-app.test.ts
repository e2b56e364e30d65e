import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/paths.js";
// Imported for its raised test timeout, as in every infra test file (a cold cdk synth takes seconds).
import "../infra/synth.js";

const outdirs: string[] = [];

/**
 * Runs `npm run synth` (the cdk CLI on cdk.json's app) with no AWS credentials or region, so a
 * passing run proves synth works offline; writes to a fresh directory under cdk.out/.
 */
function cdkSynth(...args: string[]) {
  const outdir = join(REPO_ROOT, "cdk.out", `test-cli-${randomBytes(4).toString("hex")}`);
  outdirs.push(outdir);
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/^AWS_(?!CA_BUNDLE)|^CDK_DEFAULT_/.test(name)) delete env[name];
  const run = spawnSync("npm", ["run", "--silent", "synth", "--", "--output", outdir, ...args], {
    cwd: REPO_ROOT,
    env,
    encoding: "utf8",
  });
  return { ...run, outdir };
}

afterAll(() => {
  for (const outdir of outdirs) rmSync(outdir, { recursive: true, force: true });
});

describe("npm run synth (examples/reference/app.ts through the cdk CLI)", () => {
  it("synthesizes offline with bundled assets and cdk-nag: only the reasoned suppressions", () => {
    const run = cdkSynth();
    expect(run.stderr).not.toMatch(/\[Error at|AwsSolutions-.*: /);
    expect(run.status).toBe(0);
    const template = JSON.parse(readFileSync(join(run.outdir, "Leaseq.template.json"), "utf8"));
    const types = Object.values(template.Resources as Record<string, { Type: string }>).map((r) => r.Type);
    // The intake, the worker (one bundle, two roles) and the reclaimer.
    expect(types.filter((type) => type === "AWS::Lambda::Function")).toHaveLength(3);
    // The report cdk-nag writes: every rule either compliant or suppressed with its reason.
    const report = readFileSync(join(run.outdir, "AwsSolutions--Leaseq-NagReport.csv"), "utf8").trim().split("\n");
    const rows = report.slice(1).map((line) => line.split('","').map((cell) => cell.replace(/^"|"$/g, "")));
    expect(
      rows
        .filter((row) => row[2] !== "Compliant")
        .map((row) => `${row[0]} ${row[2]}`)
        .sort(),
    ).toEqual([
      "AwsSolutions-L1 Suppressed",
      "AwsSolutions-L1 Suppressed",
      "AwsSolutions-L1 Suppressed",
      "AwsSolutions-SMG4 Suppressed",
      "AwsSolutions-SQS3 Suppressed",
    ]);
  });

  it("fails with every invalid context value named, before bundling anything", () => {
    const run = cdkSynth("-c", "batchSize=11", "-c", "maxConcurrency=1");
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain("LeaseQueue: 2 invalid prop(s):");
    expect(run.stderr).toContain("batchSize must be an integer from 1 to 10");
    expect(run.stderr).toContain("maxConcurrency must be an integer from 2 to 1000, got 1");
    expect(run.stderr).not.toContain("Bundling asset");
  });
});
