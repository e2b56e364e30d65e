import type { Template } from "aws-cdk-lib/assertions";

/** The parts of a synthesized AWS::CloudWatch::Alarm these helpers read. */
export interface AlarmProperties {
  Threshold: number;
  ComparisonOperator: string;
  EvaluationPeriods: number;
  DatapointsToAlarm?: number;
  Metrics?: Array<{
    Id: string;
    Expression?: string;
    ReturnData?: boolean;
    MetricStat?: { Metric: { MetricName: string } };
  }>;
}

/** One period's value of each metric an alarm reads, by metric name (`finishedFailed`, `Errors`); absent: no data. */
export type PeriodValues = Record<string, number | undefined>;

/** The operators and functions leaseq's alarm expressions use; anything else is refused, not guessed. */
const EXPRESSION_GRAMMAR = /^(?:IF|FILL|[a-z][A-Za-z0-9_]*|\d+(?:\.\d+)?|[\s()+\-*/,<>=])+$/;

/**
 * What an alarm's metric math gives for one period, as CloudWatch computes these operators: IF
 * (condition, then, else), FILL (a missing value replaced), comparisons and arithmetic. Undefined
 * when the expression has no value (a metric it reads without FILL has no data).
 */
export function evaluate(alarm: AlarmProperties, values: PeriodValues): number | undefined {
  const queries = alarm.Metrics ?? [];
  const expression = queries.find((query) => query.ReturnData !== false && query.Expression)?.Expression;
  if (!expression || !EXPRESSION_GRAMMAR.test(expression))
    throw new Error(`not an expression these tests read: ${expression}`);
  const ids = queries.filter((query) => query.MetricStat).map((query) => query.Id);
  const metricValue = (id: string) =>
    values[queries.find((query) => query.Id === id)?.MetricStat?.Metric.MetricName ?? ""];
  // A metric read bare without data leaves the period without a value; FILL gives it one.
  const bare = expression.replace(/FILL\(\s*[a-z]\w*\s*,[^)]*\)/g, "");
  if (ids.some((id) => new RegExp(`\\b${id}\\b`).test(bare) && metricValue(id) === undefined)) return undefined;
  const IF = (condition: boolean, then: number, otherwise: number) => (condition ? then : otherwise);
  const FILL = (value: number | undefined, fill: number) => value ?? fill;
  const run = new Function("IF", "FILL", ...ids, `return (${expression});`);
  return run(IF, FILL, ...ids.map(metricValue));
}

/** Whether `value` is on the alarm's side of its threshold. */
export function breaches(alarm: AlarmProperties, value: number | undefined): boolean {
  if (value === undefined) return false; // leaseq's metric alarms treat missing data as not breaching
  switch (alarm.ComparisonOperator) {
    case "GreaterThanThreshold":
      return value > alarm.Threshold;
    case "GreaterThanOrEqualToThreshold":
      return value >= alarm.Threshold;
    case "LessThanThreshold":
      return value < alarm.Threshold;
    default:
      throw new Error(`comparison ${alarm.ComparisonOperator} not read here`);
  }
}

/**
 * Whether the alarm goes to ALARM after these periods (oldest first): of its last EvaluationPeriods,
 * at least DatapointsToAlarm (all of them when unset) breach.
 */
export function fires(alarm: AlarmProperties, periods: PeriodValues[]): boolean {
  const window = periods.slice(-alarm.EvaluationPeriods);
  const breaching = window.filter((values) => breaches(alarm, evaluate(alarm, values))).length;
  return breaching >= (alarm.DatapointsToAlarm ?? alarm.EvaluationPeriods);
}

/** The most characters a Ref may resolve to: a Lambda function's name, an SQS queue's URL. */
const REF_MAX_CHARS: Record<string, number> = {
  "AWS::Lambda::Function": 64,
  // https://sqs.<region>.amazonaws.com[.cn]/<12-digit account>/<name of at most 80 characters>
  "AWS::SQS::Queue": 160,
};

/** The longest `description` (a string, or an Fn::Join of strings and Refs) can be once deployed. */
export function longestDescription(template: Template, description: unknown): number {
  if (typeof description === "string") return description.length;
  const join = (description as { "Fn::Join"?: [string, unknown[]] })["Fn::Join"];
  if (join?.[0] !== "") throw new Error(`not a description these tests read: ${JSON.stringify(description)}`);
  const resources = template.toJSON().Resources as Record<string, { Type: string }>;
  return join[1].reduce<number>((total, part) => {
    if (typeof part === "string") return total + part.length;
    const ref = (part as { Ref?: string }).Ref;
    const bound = ref === undefined ? undefined : REF_MAX_CHARS[resources[ref]?.Type];
    if (bound === undefined) throw new Error(`no bound known for ${JSON.stringify(part)}`);
    return total + bound;
  }, 0);
}
