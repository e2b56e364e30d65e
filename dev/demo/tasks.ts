import { defineTasks, PermanentError } from "leaseq/lambda";

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

/**
 * The task types of the reference deployment and of `npm start`'s demo, declared as a user of the
 * package declares theirs: a name, a handler and its policy. The worker runs them; the construct
 * checks every lease fits the worker timeout. Your own types live in your repository, not here.
 */
export function demoTasks(options: { crashLeaseMs?: number } = {}) {
  return defineTasks({
    ordered: false,
    types: {
      /** Always succeeds. */
      echo: {
        leaseMs: 30_000,
        maxAttempts: 3,
        backoff: { baseMs: 1_000, maxMs: 60_000 },
        handler: () => {},
      },
      /**
       * Always succeeds, on a short lease: the tasks of `npm start`'s crash demo, claimed by a worker
       * that is killed, come back as soon as the reclaimer sees their lease expired.
       */
      crash: {
        leaseMs: options.crashLeaseMs ?? 5_000,
        maxAttempts: 3,
        backoff: { baseMs: 1_000, maxMs: 60_000 },
        handler: () => {},
      },
      /** Fails its first runs when the payload asks (`{"failTimes": n}`), then succeeds: retried with backoff. */
      flaky: {
        leaseMs: 30_000,
        maxAttempts: 5,
        backoff: { baseMs: 1_000, maxMs: 30_000 },
        handler: (task) => {
          const failTimes = Number((task.payload as { failTimes?: number } | null)?.failTimes ?? 1);
          if (task.attempt <= failTimes)
            throw new Error(`flaky: attempt ${task.attempt} of ${failTimes} planned failures`);
        },
      },
      /** Works longer than its lease (`{"workMs": n}`, default 3 s): the worker extends the lease meanwhile. */
      slow: {
        leaseMs: 2_000,
        maxAttempts: 3,
        backoff: { baseMs: 1_000, maxMs: 30_000 },
        handler: (task) => sleep(Number((task.payload as { workMs?: number } | null)?.workMs ?? 3_000), task.signal),
      },
      /** Never succeeds: a malformed job that must end FAILED with its reason, not loop forever. */
      poison: {
        leaseMs: 30_000,
        maxAttempts: 3,
        backoff: { baseMs: 500, maxMs: 5_000 },
        handler: (task) => {
          if ((task.payload as { permanent?: boolean } | null)?.permanent)
            throw new PermanentError("poison: cannot be processed");
          throw new Error("poison: cannot be processed (yet)");
        },
      },
    },
  });
}

export default demoTasks();
