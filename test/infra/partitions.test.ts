// The construct's side of a partitioned queue (docs/partitions.md, docs/deploy.md "Partitions"):
// the props checked at synth, the variables every function that opens the queue reads, and the
// dashboard's lines per partition; a queue of one partition synthesizes as it did before them.
import { App, Stack, Token } from "aws-cdk-lib";
import type { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { PARTITION_DIMENSION } from "../../functions/metric-names.js";
import { LeaseQueue } from "../../infra/lease-queue.js";
import { LeaseQueuePropsError } from "../../infra/settings.js";
import { onlyResource, problems, REQUIRED_PROPS, SKIP_BUNDLING, synth } from "./synth.js";

/** Each function's environment, by the role its description starts with. */
function environments(template: Template): Record<string, Record<string, unknown>> {
  const found: Record<string, Record<string, unknown>> = {};
  for (const fn of Object.values(template.findResources("AWS::Lambda::Function"))) {
    const role = /^leaseq (\w+)/.exec(fn.Properties.Description)?.[1] ?? "unknown";
    found[role] = fn.Properties.Environment.Variables;
  }
  return found;
}

/** A metric line of the dashboard: its namespace, name and dimensions (name to value). */
interface DashboardMetric {
  namespace: string;
  name: string;
  dimensions: Record<string, string>;
  label: string | undefined;
}

/**
 * Every metric line of the stack's dashboard, read from its body as CloudWatch will: the body is a
 * Fn::Join whose references (function and queue names) sit inside JSON strings, so each is read as
 * a placeholder string. A line is [namespace, name, dimension, value, ..., { options }] (a metric
 * math line has no namespace and is left out).
 */
function dashboardMetrics(template: Template): DashboardMetric[] {
  const body = onlyResource(template, "AWS::CloudWatch::Dashboard").properties.DashboardBody as
    | string
    | { "Fn::Join": [string, unknown[]] };
  const text =
    typeof body === "string"
      ? body
      : body["Fn::Join"][1].map((part) => (typeof part === "string" ? part : "<reference>")).join("");
  const widgets = (JSON.parse(text) as { widgets: Array<{ properties: { metrics?: unknown[][] } }> }).widgets;
  const lines: DashboardMetric[] = [];
  for (const widget of widgets) {
    for (const line of widget.properties.metrics ?? []) {
      const options = typeof line.at(-1) === "object" ? (line.at(-1) as { label?: string }) : {};
      const names = line.filter((part): part is string => typeof part === "string");
      if (names.length < 2 || names.length % 2 !== 0) continue;
      const dimensions: Record<string, string> = {};
      for (let at = 2; at < names.length; at += 2) dimensions[names[at]] = names[at + 1];
      lines.push({ namespace: names[0], name: names[1], dimensions, label: options.label });
    }
  }
  return lines;
}

describe("partitions: props", () => {
  it("accepts 1 to 64 partitions, and shrinkingFrom more than partitions up to 64", () => {
    expect(problems({ partitions: 1 })).toEqual([]);
    expect(problems({ partitions: 64 })).toEqual([]);
    expect(problems({ partitions: 2, shrinkingFrom: 64 })).toEqual([]);
    expect(problems({ shrinkingFrom: 4 })).toEqual([]); // shrinking to the default of 1
  });

  it("refuses a count out of 1..64 or not whole, naming the prop, the allowed range and the value", () => {
    expect(problems({ partitions: 0 })).toEqual(["partitions must be an integer from 1 to 64, got 0"]);
    expect(problems({ partitions: 65 })).toEqual(["partitions must be an integer from 1 to 64, got 65"]);
    expect(problems({ partitions: 2.5 })).toEqual(["partitions must be an integer from 1 to 64, got 2.5"]);
    expect(problems({ partitions: "4" as unknown as number })).toEqual([
      'partitions must be an integer from 1 to 64, got "4"',
    ]);
    // The dashboard draws a line per partition at synth: a count known only at deploy cannot be.
    expect(problems({ partitions: Token.asNumber({ Ref: "PartitionCount" }) })).toEqual([
      "partitions must be an integer from 1 to 64, got a token (the count must be known at synth)",
    ]);
  });

  it("refuses shrinkingFrom not more than partitions, above 64 or not whole", () => {
    const rule = (partitions: number) =>
      `shrinkingFrom must be an integer more than partitions (${partitions}) and at most 64: the partition count before the shrink, whose last ones still drain, got`;
    expect(problems({ partitions: 4, shrinkingFrom: 4 })).toEqual([`${rule(4)} 4`]);
    expect(problems({ partitions: 4, shrinkingFrom: 2 })).toEqual([`${rule(4)} 2`]);
    expect(problems({ partitions: 4, shrinkingFrom: 65 })).toEqual([`${rule(4)} 65`]);
    expect(problems({ partitions: 4, shrinkingFrom: 6.5 })).toEqual([`${rule(4)} 6.5`]);
    expect(problems({ partitions: 64, shrinkingFrom: 64 })).toEqual([`${rule(64)} 64`]);
    expect(problems({ shrinkingFrom: 1 })).toEqual([`${rule(1)} 1`]);
  });

  it("reports both in the construct's one error, with the other props' problems", () => {
    const build = () =>
      new LeaseQueue(new Stack(new App({ context: SKIP_BUNDLING }), "Bad"), "Queue", {
        ...REQUIRED_PROPS,
        partitions: 65,
        shrinkingFrom: 1,
        maxConcurrency: 1,
      });
    expect(build).toThrow(LeaseQueuePropsError);
    expect(build).toThrow(
      [
        "LeaseQueue: 3 invalid prop(s):",
        "  - partitions must be an integer from 1 to 64, got 65",
        // With partitions refused, shrinkingFrom is held to the least it could follow (2).
        "  - shrinkingFrom must be an integer more than partitions and at most 64: the partition count before the shrink, whose last ones still drain, got 1",
        "  - maxConcurrency must be an integer from 2 to 1000, got 1",
      ].join("\n"),
    );
    // ...and 2 to 64 passes it.
    expect(problems({ partitions: 0, shrinkingFrom: 2 })).toEqual([
      "partitions must be an integer from 1 to 64, got 0",
    ]);
  });
});

describe("partitions: the functions' environment", () => {
  it("sets LEASEQ_PARTITIONS on the intake, the worker and the reclaimer for 4 partitions", () => {
    const found = environments(synth({ partitions: 4 }).template);
    expect(Object.keys(found).sort()).toEqual(["intake", "reclaimer", "worker"]);
    for (const variables of Object.values(found)) {
      expect(variables.LEASEQ_PARTITIONS).toBe("4");
      expect(variables).not.toHaveProperty("LEASEQ_SHRINKING_FROM");
    }
  });

  it("sets LEASEQ_SHRINKING_FROM beside it during a shrink, also to one partition", () => {
    for (const [partitions, shrinkingFrom] of [
      [2, 6],
      [1, 4],
    ]) {
      const found = environments(synth({ partitions, shrinkingFrom }).template);
      expect(Object.keys(found)).toHaveLength(3);
      for (const variables of Object.values(found)) {
        expect(variables).toMatchObject({
          LEASEQ_PARTITIONS: String(partitions),
          LEASEQ_SHRINKING_FROM: String(shrinkingFrom),
        });
      }
    }
  });

  it("sets neither by default, and partitions 1 leaves the template exactly as it was", () => {
    const before = synth().template;
    for (const variables of Object.values(environments(before))) {
      expect(variables).not.toHaveProperty("LEASEQ_PARTITIONS");
      expect(variables).not.toHaveProperty("LEASEQ_SHRINKING_FROM");
    }
    expect(synth({ partitions: 1 }).template.toJSON()).toEqual(before.toJSON());
  });
});

describe("partitions: the dashboard", () => {
  const partitionLines = (template: Template) =>
    dashboardMetrics(template).filter((line) => PARTITION_DIMENSION in line.dimensions);

  it("draws ready and the oldest ready age per partition, one line each, beside the totals", () => {
    const { template } = synth({ queueName: "orders", partitions: 4 });
    const lines = partitionLines(template);
    for (const name of ["ready", "oldestReadyAgeMs"]) {
      expect(lines.filter((line) => line.name === name)).toEqual(
        ["0", "1", "2", "3"].map((partition) => ({
          namespace: "leaseq",
          name,
          // The dimension set the reclaimer's Powertools Metrics publishes, the partition added.
          dimensions: { partition, queue: "orders", service: "leaseq-reclaimer" },
          label: `partition ${partition}`,
        })),
      );
    }
    expect(lines).toHaveLength(8);
    // The totals stay: the same lines as a queue of one partition has.
    const totals = dashboardMetrics(template).filter((line) => !(PARTITION_DIMENSION in line.dimensions));
    expect(totals).toEqual(dashboardMetrics(synth({ queueName: "orders" }).template));
  });

  it("draws a shrink's draining partitions too, named so", () => {
    const lines = partitionLines(synth({ partitions: 2, shrinkingFrom: 3 }).template);
    expect(lines.filter((line) => line.name === "ready").map((line) => line.label)).toEqual([
      "partition 0",
      "partition 1",
      "partition 2 (draining)",
    ]);
  });

  it("draws no line per partition for the default of one", () => {
    const lines = dashboardMetrics(synth().template);
    expect(lines.some((line) => line.name === "ready")).toBe(true);
    expect(lines.filter((line) => PARTITION_DIMENSION in line.dimensions)).toEqual([]);
  });
});
