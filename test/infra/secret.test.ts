import { Match, type Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { onlyResource, synth } from "./synth.js";

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

  it("is reported as a stack output", () => {
    const { template } = synth({ upstashSecretArn: ARN });
    template.hasOutput("UpstashSecretArn", { Value: ARN });
    template.hasOutput("UpstashSecretArn", { Description: Match.stringLikeRegexp("url") });
  });
});
