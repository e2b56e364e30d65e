import type { Command } from "commander";
import { startDashboard } from "../dashboard/server.js";
import { withQueue } from "./connect.js";
import { UsageError } from "./errors.js";
import { integer } from "./parse.js";

interface DashboardOptions {
  port: number;
  host: string;
  token?: string;
  readOnly?: boolean;
}

/** Registers `dashboard`: the web dashboard of the queue, served by this process until Ctrl-C. */
export function dashboardCommand(program: Command): void {
  program
    .command("dashboard")
    .description("serve a web dashboard of the queue (counts, lists, tasks, actions) until Ctrl-C")
    .option("--port <n>", "port to listen on (0: a free one)", integer(0, 65_535), 8080)
    .option("--host <host>", "address to bind; anything but loopback exposes the queue to the network", "127.0.0.1")
    .option("--token <token>", "the access token (default: $LEASEQ_DASHBOARD_TOKEN, else a random one)")
    .option("--read-only", "show no actions, and refuse them (403)")
    .addHelpText(
      "after",
      `
The dashboard prints its address with the access token (http://127.0.0.1:8080/?token=...): every
request needs it (a cookie after the first). See docs/dashboard.md.

Examples:
  leaseq dashboard --queue emails
  leaseq dashboard --queue emails --read-only --port 9000`,
    )
    .action(async (options: DashboardOptions, command: Command) => {
      const token = options.token ?? process.env.LEASEQ_DASHBOARD_TOKEN;
      if (token !== undefined && token.length < 16) {
        throw new UsageError("dashboard: the token must be at least 16 characters");
      }
      await withQueue(command, async (queue, where) => {
        const { host, port, readOnly } = options;
        const dashboard = await startDashboard({ queue, where, token, readOnly, host, port });
        const mode = options.readOnly ? ", read-only" : "";
        console.log(`Dashboard ${dashboard.url}\n  queue "${queue.name}" on ${where}${mode}; Ctrl-C to stop`);
        await new Promise<void>((resolve) => {
          process.once("SIGINT", resolve);
          process.once("SIGTERM", resolve);
        });
        await dashboard.close();
      });
    });
}
