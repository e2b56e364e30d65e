// The crash suite's supervisor: it forks worker and reclaimer processes (test/chaos/fixtures/
// chaos-child.ts, the real Lambda handlers over the Upstash path), feeds them invocations as
// Lambda would (SQS batches, drain invocations, scheduled reclaimer runs), and SIGKILLs them at chosen
// moments, restarting each one it kills. It records every execution a worker reports and every
// kill, so the test can trace each duplicate execution to a kill.
import { type ChildProcess, fork } from "node:child_process";
import { bundled } from "../../helpers/bundle.js";
import { envWithoutConnection } from "../../helpers/events.js";
import type { ChildMessage, ParentMessage } from "../fixtures/chaos-child.js";

const FIXTURE = new URL("../fixtures/chaos-child.ts", import.meta.url);

/** Where a process was when it was killed. */
export type KillPoint =
  | "before-handler" // the task is claimed, its handler has not worked yet
  | "mid-handler" // the handler is working
  | "after-handler" // the handler finished (execution counted), the batch is not settled yet
  | "anywhere" // a timer picked a busy worker: claiming, settling, extending, ingesting SQS…
  | "reclaimer"; // the reclaimer process, mid-run or idle

export interface Execution {
  id: string;
  attempt: number;
  incarnation: number;
  at: number;
  /** The `now` of the claim that leased this attempt (starts only). */
  claimedAt?: number;
}

export interface Kill {
  incarnation: number;
  point: KillPoint;
  at: number;
}

export interface SqsMessage {
  messageId: string;
  body: string;
}

interface Incarnation {
  id: number;
  role: "worker" | "reclaimer";
  process: ChildProcess;
  ready: boolean;
  alive: boolean;
  invocation: number | undefined;
  /** The SQS message the current invocation carries, if any. */
  message: SqsMessage | undefined;
  /** The last question its handler asked. */
  lastQuestion: number;
  lastInvokedAt: number;
}

export interface SupervisorOptions {
  env: Record<string, string>;
  workers: number;
  /** Most kills in the run; kills stop when it is reached (or after stopKilling()). */
  killBudget: number;
  /** Chance of a kill at each "start" and "executed" question, and at each timer tick. */
  killRate: number;
  /** Most ms a handler works (uniform 0..maxWorkMs). */
  maxWorkMs: number;
  rng: () => number;
  /** An SQS event for a message (the test's own factory). */
  sqsEvent: (message: SqsMessage) => unknown;
}

export class Supervisor {
  readonly executions = new Map<string, Execution[]>();
  /** Every handler start (a "start" question), in order: a task claimed and handed to its handler. */
  readonly startLog: Execution[] = [];
  readonly kills: Kill[] = [];
  readonly killedAt = new Map<number, number>();
  /** SQS messages whose invocation returned without listing them in batchItemFailures. */
  readonly ackedMessages = new Set<string>();
  readonly unexpectedExits: string[] = [];
  readonly invocationErrors: string[] = [];
  starts = 0;
  spawned = 0;
  private readonly incarnations = new Map<number, Incarnation>();
  private readonly pendingMessages: SqsMessage[] = [];
  private killing = true;
  private running = false;
  private invocations = 0;
  private timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: SupervisorOptions) {}

  start(): void {
    this.running = true;
    for (let i = 0; i < this.options.workers; i++) this.spawn("worker");
    this.spawn("reclaimer");
    this.timers.push(setInterval(() => this.pump(), 20));
    this.timers.push(setInterval(() => this.randomKill(), 100));
  }

  /** Queues an SQS message; it is delivered (again, after a kill or an error) until acknowledged. */
  deliver(message: SqsMessage): void {
    this.pendingMessages.push(message);
  }

  get messagesOutstanding(): number {
    return this.pendingMessages.length + [...this.incarnations.values()].filter((i) => i.message).length;
  }

  stopKilling(): void {
    this.killing = false;
  }

  /** Stops every process (those still alive exit on "stop"; a stuck one is killed). */
  async stop(): Promise<void> {
    this.running = false;
    for (const timer of this.timers) clearInterval(timer);
    await Promise.all(
      [...this.incarnations.values()]
        .filter((incarnation) => incarnation.alive)
        .map(
          (incarnation) =>
            new Promise<void>((resolve) => {
              const force = setTimeout(() => incarnation.process.kill("SIGKILL"), 2_000);
              incarnation.process.once("exit", () => {
                clearTimeout(force);
                resolve();
              });
              incarnation.process.send({ kind: "stop" } satisfies ParentMessage);
            }),
        ),
    );
  }

  private spawn(role: Incarnation["role"]): void {
    const id = ++this.spawned;
    const child = fork(bundled(FIXTURE), [role], {
      env: { ...envWithoutConnection(), ...this.options.env, LEASEQ_CLAIM_BATCH: "5" },
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    const incarnation: Incarnation = {
      id,
      role,
      process: child,
      ready: false,
      alive: true,
      invocation: undefined,
      message: undefined,
      lastQuestion: 0,
      lastInvokedAt: 0,
    };
    this.incarnations.set(id, incarnation);
    child.on("message", (message: ChildMessage) => this.onMessage(incarnation, message));
    child.once("exit", (code, signal) => {
      incarnation.alive = false;
      if (incarnation.message) this.pendingMessages.push(incarnation.message);
      incarnation.message = undefined;
      if (!this.killedAt.has(id) && this.running) {
        this.unexpectedExits.push(`${role} ${id} exited with ${code ?? signal}`);
      }
      this.incarnations.delete(id);
      if (this.running) this.spawn(role);
    });
  }

  private kill(incarnation: Incarnation, point: KillPoint): void {
    if (!incarnation.alive || this.killedAt.has(incarnation.id)) return;
    const at = Date.now();
    this.killedAt.set(incarnation.id, at);
    this.kills.push({ incarnation: incarnation.id, point, at });
    incarnation.process.kill("SIGKILL");
  }

  private mayKill(weight = 1): boolean {
    if (!this.killing || this.kills.length >= this.options.killBudget) return false;
    return this.options.rng() < this.options.killRate * weight;
  }

  private reply(incarnation: Incarnation, question: number, workMs?: number): void {
    if (incarnation.alive) incarnation.process.send({ kind: "reply", question, workMs } satisfies ParentMessage);
  }

  private recordStart(incarnation: Incarnation, message: Extract<ChildMessage, { kind: "start" }>): void {
    this.starts++;
    this.startLog.push({
      id: message.id,
      attempt: message.attempt,
      incarnation: incarnation.id,
      at: Date.now(),
      claimedAt: message.claimedAt,
    });
  }

  private onMessage(incarnation: Incarnation, message: ChildMessage): void {
    // A handler start is a fact, counted even when it reaches us after a kill was decided: that
    // handler did start, and its worker may have confirmed its lease (charging the attempt) before
    // the SIGKILL landed. Nothing else a dying process says is taken.
    if (message.kind === "start") this.recordStart(incarnation, message);
    if (this.killedAt.has(incarnation.id)) return; // the kill is on its way; the process is as good as dead
    switch (message.kind) {
      case "ready":
        incarnation.ready = true;
        return;
      case "start": {
        incarnation.lastQuestion = message.question;
        if (this.mayKill()) {
          this.kill(incarnation, "before-handler");
          return;
        }
        const workMs = Math.floor(this.options.rng() * (this.options.maxWorkMs + 1));
        if (this.mayKill()) {
          // Kill halfway through the work, if it has asked nothing since (it is still working).
          setTimeout(() => {
            if (incarnation.lastQuestion === message.question) this.kill(incarnation, "mid-handler");
          }, workMs / 2);
        }
        this.reply(incarnation, message.question, workMs);
        return;
      }
      case "executed": {
        const executions = this.executions.get(message.id) ?? [];
        executions.push({ id: message.id, attempt: message.attempt, incarnation: incarnation.id, at: Date.now() });
        this.executions.set(message.id, executions);
        incarnation.lastQuestion = message.question;
        if (this.mayKill()) this.kill(incarnation, "after-handler");
        else this.reply(incarnation, message.question);
        return;
      }
      case "invoked": {
        if (message.invocation !== incarnation.invocation) return;
        incarnation.invocation = undefined;
        const carried = incarnation.message;
        incarnation.message = undefined;
        if (!message.ok) this.invocationErrors.push(message.error ?? "unknown error");
        if (carried) {
          if (message.ok && !message.failures.includes(carried.messageId)) this.ackedMessages.add(carried.messageId);
          else this.pendingMessages.push(carried); // SQS would deliver it again
        }
        return;
      }
    }
  }

  /** Gives each idle process its next invocation: an SQS batch if one waits, else a drain invocation. */
  private pump(): void {
    const now = Date.now();
    for (const incarnation of this.incarnations.values()) {
      if (!incarnation.alive || !incarnation.ready || incarnation.invocation !== undefined) continue;
      let event: unknown;
      if (incarnation.role === "reclaimer") {
        if (now - incarnation.lastInvokedAt < 200) continue;
        event = { source: "aws.events", "detail-type": "Scheduled Event" };
      } else {
        incarnation.message = this.pendingMessages.shift();
        if (!incarnation.message && now - incarnation.lastInvokedAt < 50) continue;
        event = incarnation.message ? this.options.sqsEvent(incarnation.message) : { leaseq: "drain" };
      }
      incarnation.invocation = ++this.invocations;
      incarnation.lastInvokedAt = now;
      incarnation.process.send({ kind: "invoke", invocation: incarnation.invocation, event } satisfies ParentMessage);
    }
  }

  /** Kills a busy worker wherever it is, or (less often) the reclaimer. */
  private randomKill(): void {
    if (!this.mayKill(4)) return;
    const busy = [...this.incarnations.values()].filter((i) => i.alive && i.invocation !== undefined);
    if (busy.length === 0) return;
    const victim = busy[Math.floor(this.options.rng() * busy.length)];
    this.kill(victim, victim.role === "reclaimer" ? "reclaimer" : "anywhere");
  }
}
