import { App, RemovalPolicy, Stack } from "aws-cdk-lib";
import { Match, Template } from "aws-cdk-lib/assertions";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { describe, expect, it } from "vitest";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { onlyResource, problems, REQUIRED_PROPS, SKIP_BUNDLING, synth } from "./synth.js";

const ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:leaseq/upstash-AbC123";

/** The secret statements of every role policy in the template. */
function secretGrants(template: Template) {
  return Object.values(template.findResources("AWS::IAM::Policy")).flatMap((policy) =>
    policy.Properties.PolicyDocument.Statement.filter((s: { Action: unknown }) =>
      JSON.stringify(s.Action).includes("secretsmanager:"),
    ),
  );
}

function functionEnvironments(template: Template): Array<Record<string, unknown>> {
  return Object.values(template.findResources("AWS::Lambda::Function")).map(
    (fn) => fn.Properties.Environment.Variables,
  );
}

describe("Upstash credentials secret", () => {
  it("is created holding empty fields (no credential in the template) when no ARN is given", () => {
    const { template } = synth();
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    expect(JSON.parse(secret.properties.SecretString as string)).toEqual({ url: "", token: "" });
    expect(secret.properties.GenerateSecretString).toBeUndefined();
  });

  it("is readable by exactly the three functions, on exactly that secret, and only its ARN is in their environment", () => {
    const { template } = synth();
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    const grants = secretGrants(template);
    expect(grants).toHaveLength(3);
    for (const grant of grants) {
      expect(grant).toEqual({
        Action: ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
        Effect: "Allow",
        Resource: { Ref: secret.logicalId },
      });
    }
    for (const variables of functionEnvironments(template)) {
      expect(variables.UPSTASH_SECRET_ARN).toEqual({ Ref: secret.logicalId });
      // The queues' URLs are no credentials: Refs to the queues the functions may send to.
      const queueUrls = ["LEASEQ_DLQ_URL", "LEASEQ_WAKE_QUEUE_URL"];
      expect(
        Object.keys(variables).filter((name) => /URL|TOKEN|PASSWORD/.test(name) && !queueUrls.includes(name)),
      ).toEqual([]);
      expect(variables.LEASEQ_WAKE_QUEUE_URL).toMatchObject({ Ref: expect.stringMatching(/^LeaseQueue/) });
    }
  });

  it("is imported by its complete ARN from props: no secret resource, grants and environment name that ARN", () => {
    const { template } = synth({ upstashSecretArn: ARN });
    template.resourceCountIs("AWS::SecretsManager::Secret", 0);
    for (const grant of secretGrants(template)) expect(grant.Resource).toBe(ARN);
    for (const variables of functionEnvironments(template)) expect(variables.UPSTASH_SECRET_ARN).toBe(ARN);
  });

  it("is retained when the stack is deleted or the queue removed, unless secretRemovalPolicy says otherwise", () => {
    const created = synth().template;
    const retained = onlyResource(created, "AWS::SecretsManager::Secret").logicalId;
    expect(created.toJSON().Resources[retained]).toMatchObject({
      DeletionPolicy: "Retain",
      UpdateReplacePolicy: "Retain",
    });
    const { template } = synth({ secretRemovalPolicy: RemovalPolicy.DESTROY });
    const destroyed = onlyResource(template, "AWS::SecretsManager::Secret").logicalId;
    expect(template.toJSON().Resources[destroyed]).toMatchObject({
      DeletionPolicy: "Delete",
      UpdateReplacePolicy: "Delete",
    });
  });

  it("is reported as a stack output", () => {
    const { template } = synth({ upstashSecretArn: ARN });
    template.hasOutput("UpstashSecretArn", { Value: ARN });
    template.hasOutput("UpstashSecretArn", { Description: Match.stringLikeRegexp("url") });
  });
});

describe("one Upstash secret for several queues", () => {
  it("a queue given another's secret creates none: one secret resource, readable by all six functions", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Shared");
    const emails = new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails" });
    const ledger = new LeaseQueue(stack, "Ledger", { ...REQUIRED_PROPS, queueName: "ledger", secret: emails.secret });
    expect(ledger.secret).toBe(emails.secret);
    const template = Template.fromStack(stack);
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    expect(template.toJSON().Resources[secret.logicalId].DeletionPolicy).toBe("Retain");
    // Every function's role may read it, and every function is told its ARN.
    const grants = secretGrants(template);
    expect(grants).toHaveLength(6);
    for (const grant of grants) expect(grant.Resource).toEqual({ Ref: secret.logicalId });
    const roles = Object.values(template.findResources("AWS::IAM::Policy"))
      .filter((policy) => JSON.stringify(policy.Properties.PolicyDocument).includes("secretsmanager:GetSecretValue"))
      .map((policy) => policy.Properties.Roles[0].Ref)
      .sort();
    const functionRoles = Object.values(template.findResources("AWS::Lambda::Function"))
      .map((fn) => fn.Properties.Role["Fn::GetAtt"][0])
      .sort();
    expect(roles).toEqual(functionRoles);
    expect(functionRoles).toHaveLength(6);
    for (const variables of functionEnvironments(template)) {
      expect(variables.UPSTASH_SECRET_ARN).toEqual({ Ref: secret.logicalId });
    }
  });

  it("a secret of the user's, given to both queues, is the only one, and its removal stays the user's", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Own");
    const upstash = new Secret(stack, "Upstash");
    new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails", secret: upstash });
    new LeaseQueue(stack, "Ledger", { ...REQUIRED_PROPS, queueName: "ledger", secret: upstash });
    const template = Template.fromStack(stack);
    const secret = onlyResource(template, "AWS::SecretsManager::Secret");
    expect(secret.logicalId).toMatch(/^Upstash/);
    expect(template.toJSON().Resources[secret.logicalId].DeletionPolicy).toBe("Delete");
    expect(secretGrants(template)).toHaveLength(6);
  });

  it("refuses secret with upstashSecretArn, a removal policy for a secret it does not create, and a snapshot", () => {
    const stack = new Stack();
    const given = Secret.fromSecretCompleteArn(stack, "Given", ARN);
    expect(problems({ secret: given, upstashSecretArn: ARN })).toEqual([
      `secret and upstashSecretArn are exclusive: give one or neither, got both (upstashSecretArn "${ARN}")`,
    ]);
    expect(problems({ secret: given, secretRemovalPolicy: RemovalPolicy.DESTROY })).toEqual([
      'secretRemovalPolicy is for a secret the construct creates, not one given as secret (its removal is yours): leave it out, got "destroy"',
    ]);
    expect(problems({ upstashSecretArn: ARN, secretRemovalPolicy: RemovalPolicy.RETAIN })).toEqual([
      'secretRemovalPolicy is for a secret the construct creates, not one given as upstashSecretArn (its removal is yours): leave it out, got "retain"',
    ]);
    expect(problems({ secretRemovalPolicy: RemovalPolicy.SNAPSHOT })).toEqual([
      'secretRemovalPolicy must be RemovalPolicy.RETAIN, DESTROY or RETAIN_ON_UPDATE_OR_DELETE (a secret has no snapshot), got "snapshot"',
    ]);
    expect(problems({ secret: ARN as never })).toEqual([
      `secret must be an ISecret (another LeaseQueue's secret, or Secret.fromSecretCompleteArn(...)), got "${ARN}"`,
    ]);
  });
});
