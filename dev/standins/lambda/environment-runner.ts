// One Lambda execution environment (dev/standins/lambda/environments.ts): loads a handler module
// and runs the invocations its parent sends, one at a time, with a context whose remaining time
// counts down to the invocation's deadline.
// Use: fork(this file, [module path, export name]) with an IPC channel.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

const [path, exportName] = process.argv.slice(2);
const loaded = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
const handler = loaded[exportName] as Handler | undefined;
if (typeof handler !== "function") {
  process.stderr.write(`environment: ${path} exports no function "${exportName}"\n`);
  process.exit(1);
}

process.on("message", (message: { kind: "invoke"; invocation: number; event: unknown; deadlineMs: number }) => {
  if (message.kind !== "invoke") return;
  const context = {
    awsRequestId: randomUUID(),
    functionName: "leaseq-worker",
    getRemainingTimeInMillis: () => Math.max(0, message.deadlineMs - Date.now()),
  };
  handler(message.event, context).then(
    (value) => process.send?.({ kind: "result", invocation: message.invocation, ok: true, value: value ?? null }),
    (error: unknown) =>
      process.send?.({
        kind: "result",
        invocation: message.invocation,
        ok: false,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      }),
  );
});
process.on("SIGTERM", () => process.exit(0));
// An environment never outlives the service that runs it: its parent gone (killed, crashed), it ends.
process.on("disconnect", () => process.exit(0));
process.send?.({ kind: "ready" });
