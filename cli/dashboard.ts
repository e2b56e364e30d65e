import type { Command } from "commander";
import { listQueues } from "../shared/queue-admin.js";
import { partitionsOf, withPartitions, withStore } from "./connect.js";
import { REFRESH_MS_DEFAULT } from "./dashboard/live.js";
import { type RunningDashboard, startDashboard } from "./dashboard/server.js";
import { UsageError } from "./errors.js";
import { counted } from "./output.js";
import { integer } from "./parse.js";

interface DashboardOptions {
  port: number;
  host: string;
  token?: string;
  readOnly?: boolean;
  refresh: number;
}

/**
 * Registers `dashboard`: the web dashboard of one queue (--queue or $LEASEQ_QUEUE), all of its
 * partitions (--partitions), or of every leaseq queue on the backend without one, served by this
 * process until Ctrl-C.
 */
export function dashboardCommand(program: Command): void {
  program
    .command("dashboard")
    .description(
      "serve a web dashboard of every queue, or of the --queue one (counts, lists, tasks, actions) until Ctrl-C",
    )
    .option("--port <n>", "port to listen on (0: a free one)", integer(0, 65_535), 8080)
    .option("--host <host>", "address to bind; anything but loopback exposes the queues to the network", "127.0.0.1")
    .option("--token <token>", "the access token (default: $LEASEQ_DASHBOARD_TOKEN, else a random one)")
    .option("--read-only", "show no actions, and refuse them (403)")
    .option(
      "--refresh <seconds>",
      "how often an open queue overview reads its numbers again (one stats call each time); 0: never",
      integer(0, 3600),
      REFRESH_MS_DEFAULT / 1000,
    )
    .addHelpText(
      "after",
      `
Without --queue (and without $LEASEQ_QUEUE) the dashboard serves every leaseq queue on the backend
the connection rule reaches: "/" lists them (found by SCAN at each visit) with their counts, pausing
and last hour, and each queue's pages are under /q/<queue>/. With --queue it shows that queue only;
any other queue's address is 404.

A partitioned queue (docs/partitions.md; with --queue, --partitions N or $LEASEQ_PARTITIONS; without,
its partitions are found on the backend): its overview sums the partitions and lists each, and its
task lists, tasks, groups, schedules and actions are each partition's, under /q/<queue>/p/<k>/.

The dashboard prints its address with the access token (http://127.0.0.1:8080/?token=...): every
request needs it (a cookie after the first). See docs/dashboard.md.

Examples:
  leaseq dashboard
  leaseq dashboard --queue emails
  leaseq dashboard --queue emails --read-only --port 9000
  leaseq --partitions 6 dashboard --queue imports`,
    )
    .action(async (options: DashboardOptions, command: Command) => {
      const token = options.token ?? process.env.LEASEQ_DASHBOARD_TOKEN;
      if (token !== undefined && token.length < 16) {
        throw new UsageError("dashboard: the token must be at least 16 characters");
      }
      const { host, port, readOnly } = options;
      const refreshMs = options.refresh * 1000;
      const mode = readOnly ? ", read-only" : "";
      const name = (command.optsWithGlobals().queue as string | undefined) ?? process.env.LEASEQ_QUEUE;
      const { count, only } = partitionsOf(command);
      if (only !== undefined) {
        throw new UsageError(
          "dashboard: --partition is not for the dashboard, which shows every partition of the queue (each under /q/<queue>/p/<k>/): drop it",
        );
      }
      if (name) {
        // Every partition of the queue (one, partition 0, unless --partitions says more).
        await withPartitions(command, async (partitions, where) => {
          const queues = partitions.map(({ queue }) => queue);
          const dashboard = await startDashboard({ partitions: queues, where, token, readOnly, refreshMs, host, port });
          const shown = count > 1 ? ` (${count} partitions)` : "";
          console.log(`Dashboard ${dashboard.url}\n  queue "${name}"${shown} on ${where}${mode}; Ctrl-C to stop`);
          await untilStopped(dashboard);
        });
        return;
      }
      if (count > 1) {
        throw new UsageError(
          "dashboard: --partitions (or LEASEQ_PARTITIONS) is the partition count of the --queue one; without --queue the dashboard finds each queue's partitions on the backend, as `leaseq queues` does",
        );
      }
      await withStore(command, "every queue", async (store, where) => {
        // Once now, so that a backend out of reach fails here rather than on the first page.
        const names = await listQueues(store);
        const dashboard = await startDashboard({ store, where, token, readOnly, refreshMs, host, port });
        const count = `${counted(names.length, "queue")} now`;
        console.log(`Dashboard ${dashboard.url}\n  every leaseq queue on ${where} (${count})${mode}; Ctrl-C to stop`);
        await untilStopped(dashboard);
      });
    });
}

/** Waits for Ctrl-C (or SIGTERM), then closes the dashboard. */
async function untilStopped(dashboard: RunningDashboard): Promise<void> {
  await new Promise<void>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await dashboard.close();
}
