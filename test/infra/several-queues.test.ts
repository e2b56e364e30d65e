import { App, Stack } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { defineTasks } from "../../functions/tasks.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { REQUIRED_PROPS, SKIP_BUNDLING } from "./synth.js";

describe("several LeaseQueues in one stack", () => {
  it("synthesize side by side, one ordered and one not, each with its own queues, functions, alarms and dashboard", () => {
    const stack = new Stack(new App({ context: SKIP_BUNDLING }), "Two");
    const ordered = defineTasks({ ordered: true, types: { "post-entry": { leaseMs: 20_000, handler: () => {} } } });
    const emails = new LeaseQueue(stack, "Emails", { ...REQUIRED_PROPS, queueName: "emails" });
    const ledger = new LeaseQueue(stack, "Ledger", { ...REQUIRED_PROPS, queueName: "ledger", tasks: ordered });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::SQS::Queue", 6);
    template.resourceCountIs("AWS::Lambda::Function", 6);
    template.resourceCountIs("AWS::Lambda::EventSourceMapping", 4);
    template.resourceCountIs("AWS::Events::Rule", 2);
    template.resourceCountIs("AWS::CloudWatch::Dashboard", 2);
    template.resourceCountIs("AWS::CloudWatch::Alarm", 24);
    // Each intake and worker knows its own queue and its own task policies.
    const workers = Object.values(template.findResources("AWS::Lambda::Function"))
      .map((fn) => fn.Properties.Environment.Variables)
      .filter((variables) => "LEASEQ_TASKS" in variables);
    expect(workers.map((variables) => [variables.LEASEQ_QUEUE, variables.LEASEQ_TASKS]).sort()).toEqual([
      ["emails", "parallel;echo:~30000:30000::5:1000:300000:;;10x3"],
      ["emails", "parallel;echo:~30000:30000::5:1000:300000:;;10x3"],
      ["ledger", "ordered;post-entry:~20000:20000::5:1000:300000:;;1x3"],
      ["ledger", "ordered;post-entry:~20000:20000::5:1000:300000:;;1x3"],
    ]);
    // The alarms describe which queue they watch (in the text before the function names they resolve).
    const descriptions = Object.values(template.findResources("AWS::CloudWatch::Alarm")).map((alarm) => {
      const description = alarm.Properties.AlarmDescription as string | { "Fn::Join": [string, string[]] };
      return typeof description === "string" ? description : description["Fn::Join"][1][0];
    });
    expect(descriptions.filter((text) => text.startsWith('leaseq queue "emails"'))).toHaveLength(12);
    expect(descriptions.filter((text) => text.startsWith('leaseq queue "ledger"'))).toHaveLength(12);
    expect(emails.queue.node.path).not.toBe(ledger.queue.node.path);
  });
});
