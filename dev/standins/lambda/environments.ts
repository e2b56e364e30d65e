import { type ChildProcess, fork } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** What a function's handler module is: its file (a `.ts` runs through tsx) and the export to call. */
export interface HandlerModule {
  /** Absolute path of the module. */
  path: string;
  /** Its export that is the Lambda handler; default `handler`. */
  exportName?: string;
}

/** One execution environment: a process that runs one invocation at a time, reused while warm. */
export interface Environment {
  id: number;
  pid: number | undefined;
  /** The invocation running in it, or undefined while it waits for one. */
  busy: boolean;
  /** Lines its process wrote to stdout (the function's logs), newest last. */
  readonly stdout: string[];
}

type ParentMessage = { kind: "invoke"; invocation: number; event: unknown; deadlineMs: number };
type ChildMessage =
  | { kind: "ready" }
  | { kind: "result"; invocation: number; ok: true; value: unknown }
  | { kind: "result"; invocation: number; ok: false; error: string };

/**
 * Lambda's execution environments as processes: each invocation runs in a process of its own (a
 * warm one when one is idle, else a new one: a cold start), one invocation at a time per process,
 * as Lambda does. A process that dies mid-invocation (SIGKILL: an out-of-memory kill, a native
 * crash) fails that invocation, as Lambda reports a runtime exit, and is not reused. The handler
 * module is loaded in the process with `env` as its environment.
 */
export class Environments {
  /** Every environment ever started, dead ones included (their logs stay readable). */
  readonly all: Environment[] = [];
  private readonly pool = new Map<number, { env: Environment; child: ChildProcess }>();
  private next = 0;
  private invocations = 0;
  private readonly pending = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void; environment: number }
  >();

  constructor(
    private readonly module: HandlerModule,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /** The environments alive now. */
  list(): Environment[] {
    return [...this.pool.values()].map(({ env }) => env);
  }

  /** Runs `event` in an idle environment (a new one when none is idle) with `timeoutMs` to run. */
  async invoke(event: unknown, timeoutMs: number): Promise<unknown> {
    const entry = [...this.pool.values()].find(({ env }) => !env.busy) ?? (await this.spawn());
    entry.env.busy = true;
    const invocation = ++this.invocations;
    try {
      return await new Promise((resolve, reject) => {
        this.pending.set(invocation, { resolve, reject, environment: entry.env.id });
        const message: ParentMessage = { kind: "invoke", invocation, event, deadlineMs: Date.now() + timeoutMs };
        entry.child.send(message);
      });
    } finally {
      entry.env.busy = false;
    }
  }

  /** Starts environments until `count` are alive (Lambda keeps warm ones): an invocation then starts warm. */
  async warm(count: number): Promise<void> {
    while (this.pool.size < count) await this.spawn();
  }

  /** Kills one environment's process (SIGKILL), failing the invocation it runs. */
  kill(id: number): void {
    this.pool.get(id)?.child.kill("SIGKILL");
  }

  /** Stops every environment; an invocation still running fails, as when Lambda ends its runtime. */
  async close(): Promise<void> {
    await Promise.all(
      [...this.pool.values()].map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once("exit", () => resolve());
            child.kill("SIGTERM");
          }),
      ),
    );
  }

  private async spawn(): Promise<{ env: Environment; child: ChildProcess }> {
    const id = ++this.next;
    const child = fork(runnerPath(), [this.module.path, this.module.exportName ?? "handler"], {
      env: this.env as NodeJS.ProcessEnv,
      execArgv: runnerPath().endsWith(".ts") || this.module.path.endsWith(".ts") ? ["--import", "tsx"] : [],
      stdio: ["ignore", "pipe", "inherit", "ipc"],
    });
    const env: Environment = { id, pid: child.pid, busy: false, stdout: [] };
    this.all.push(env);
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      env.stdout.push(...lines);
    });
    const entry = { env, child };
    this.pool.set(id, entry);
    child.on("message", (message: ChildMessage) => {
      if (message.kind !== "result") return;
      const waiting = this.pending.get(message.invocation);
      if (!waiting) return;
      this.pending.delete(message.invocation);
      if (message.ok) waiting.resolve(message.value);
      else waiting.reject(new Error(message.error));
    });
    child.once("exit", (code, signal) => {
      this.pool.delete(id);
      for (const [invocation, waiting] of this.pending) {
        if (waiting.environment !== id) continue;
        this.pending.delete(invocation);
        waiting.reject(new Error(`Runtime.ExitError: the environment's process exited (${signal ?? `code ${code}`})`));
      }
    });
    await new Promise<void>((resolve, reject) => {
      child.once("message", (message: ChildMessage) => (message.kind === "ready" ? resolve() : undefined));
      child.once("exit", (code) => reject(new Error(`the environment's process exited at its start (code ${code})`)));
    });
    return entry;
  }
}

/** The runner a process loads: its compiled `.js` beside this file, or the `.ts` source (tsx). */
function runnerPath(): string {
  const compiled = fileURLToPath(new URL("./environment-runner.js", import.meta.url));
  return existsSync(compiled) ? compiled : fileURLToPath(new URL("./environment-runner.ts", import.meta.url));
}
