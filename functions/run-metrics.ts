// The worker's metrics per task type (docs/lambda.md "Metrics"): how long each run waited READY
// and how long it ran, as CloudWatch Embedded Metric Format lines on stdout, so CloudWatch keeps
// every value and its p50/p99 come from them. Written here rather than with Powertools Metrics,
// which the reclaimer uses: the worker's cold-start bundle stays under its limit
// (test/functions/bundle.test.ts), and these two metrics need only the format's one object.
import { METRICS_NAMESPACE, RUN_METRICS } from "./metric-names.js";

/** EMF takes at most 100 values of a metric in one line. */
const VALUES_PER_LINE = 100;

/** The runs of one invocation, per task type: values to publish at its end. */
export class RunMetrics {
  private readonly byType = new Map<string, { waited: number[]; ran: number[] }>();

  add(run: { type: string; waitedMs: number; runMs: number }): void {
    let values = this.byType.get(run.type);
    if (!values) {
      values = { waited: [], ran: [] };
      this.byType.set(run.type, values);
    }
    values.waited.push(Math.max(0, Math.round(run.waitedMs)));
    values.ran.push(Math.max(0, Math.round(run.runMs)));
  }

  /**
   * The EMF lines of the runs added (metrics queueWaitMs and runTimeMs, dimensions service, queue,
   * type), at most 100 values of each a line; none when no task ran.
   */
  lines(service: string, queue: string, atMs: number): string[] {
    const lines: string[] = [];
    for (const [type, { waited, ran }] of this.byType) {
      for (let from = 0; from < waited.length; from += VALUES_PER_LINE) {
        lines.push(
          JSON.stringify({
            _aws: {
              Timestamp: atMs,
              CloudWatchMetrics: [
                {
                  Namespace: METRICS_NAMESPACE,
                  Dimensions: [["service", "queue", "type"]],
                  Metrics: Object.entries(RUN_METRICS).map(([Name, Unit]) => ({ Name, Unit })),
                },
              ],
            },
            service,
            queue,
            type,
            queueWaitMs: waited.slice(from, from + VALUES_PER_LINE),
            runTimeMs: ran.slice(from, from + VALUES_PER_LINE),
          }),
        );
      }
    }
    return lines;
  }
}
