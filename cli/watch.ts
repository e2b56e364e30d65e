import { setTimeout as sleep } from "node:timers/promises";
import type { Command } from "commander";
import { liveOutput, Throughput } from "../shared/live.js";
import { queueName, withQueue } from "./connect.js";
import { integer } from "./parse.js";
import { formatStats } from "./read.js";

/** Registers `watch`: stats refreshed until Ctrl-C (or --count refreshes). */
export function watchCommand(program: Command): void {
  program
    .command("watch")
    .description("live stats: redrawn in place on a terminal, one line per refresh otherwise")
    .option("--interval-ms <ms>", "time between refreshes", integer(100, 3_600_000), 1000)
    .option(
      "--count <n>",
      "stop after this many refreshes (default: until Ctrl-C)",
      integer(1, Number.MAX_SAFE_INTEGER),
    )
    .action(async (options: { intervalMs: number; count?: number }, command: Command) => {
      const name = queueName(command);
      const output = liveOutput(process.stdout);
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      const throughput = new Throughput();
      try {
        await withQueue(command, async (queue) => {
          for (let shown = 0; options.count === undefined || shown < options.count; shown++) {
            if (shown > 0) {
              // An aborted sleep rejects; Ctrl-C just ends the watch.
              const slept = await sleep(options.intervalMs, true, { signal: stop.signal }).catch(() => false);
              if (!slept) break;
            }
            const now = Date.now();
            const stats = await queue.stats({ now });
            const rate = throughput.sample(stats.done + stats.failed, now).toFixed(1);
            const time = new Date(now).toISOString();
            output.update({
              block: `queue ${name}   ${time}   finished/s ${rate}\n${formatStats(stats)}`,
              line: `${time} ready=${stats.ready} scheduled=${stats.scheduled} leased=${stats.leased} done=${stats.done} failed=${stats.failed}${stats.paused ? " paused" : ""} finished/s=${rate}`,
            });
          }
        });
      } finally {
        output.done();
        process.off("SIGINT", onSignal);
        process.off("SIGTERM", onSignal);
      }
    });
}
