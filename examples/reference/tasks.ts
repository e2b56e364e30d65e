// The reference deployment's task types, declared as your service declares its own: a name, a
// handler and its policy. The worker entry (./worker.ts) runs them; the construct checks that every
// type's timeoutMs fits the worker's timeout. `npm start`'s demo has types of its own (dev/demo/tasks.ts).
import { defineTasks, PermanentError } from "leaseq/lambda";

/** What a `send-webhook` task carries. */
export type Webhook = { url: string; body: unknown };

export default defineTasks({
  ordered: false,
  types: {
    /** Always succeeds: send `{"tasks":[{"type":"echo","payload":{...}}]}` to try a deployment. */
    echo: {
      timeoutMs: 30_000, // the longest one run may take
      heartbeatMs: 10_000, // a crashed worker's task runs again about this soon
      maxAttempts: 3,
      backoff: { baseMs: 1_000, maxMs: 60_000 },
      handler: () => {},
    },
    /**
     * POSTs the payload's `body` to its `url`: a 4xx answer will not change on a retry (FAILED at
     * once), anything else that is not 2xx is retried with backoff.
     */
    "send-webhook": {
      timeoutMs: 30_000,
      heartbeatMs: 10_000,
      maxAttempts: 5,
      backoff: { baseMs: 2_000, maxMs: 300_000 },
      handler: async (task) => {
        const { url, body } = task.payload as Webhook;
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
          signal: task.signal,
        });
        if (response.status >= 400 && response.status < 500)
          throw new PermanentError(`send-webhook: ${url} answered ${response.status}`);
        if (!response.ok) throw new Error(`send-webhook: ${url} answered ${response.status}`);
      },
    },
  },
});
