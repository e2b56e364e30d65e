import type { TaskInput } from "../shared/types.js";
import { seededRandom } from "./random.js";
import type { LocalSqs } from "./standins/sqs/index.js";

/** The demo workload: every task it sends, and the ids worth following. */
export interface DemoWorkload {
  tasks: TaskInput[];
  poisonId: string;
  slowIds: string[];
  flakyIds: string[];
}

/**
 * `count` tasks across the example types of dev/demo/tasks.ts: mostly `echo` with
 * priorities from -3 to 3, a tenth delayed by up to 4 s, a tenth `flaky` (fails once or twice,
 * then succeeds on retry), two `slow` ones that outlive their 2 s lease unless it is extended, and
 * one `poison` that fails every attempt and must end FAILED. Ids start with `prefix`.
 */
export function demoWorkload(count: number, prefix: string, slowMs: number): DemoWorkload {
  const random = seededRandom(42);
  const id = (n: number, type: string) => `${prefix}-${String(n).padStart(4, "0")}-${type}`;
  const tasks: TaskInput[] = [];
  const poisonId = id(0, "poison");
  tasks.push({ id: poisonId, type: "poison", payload: { reason: "a malformed job no retry can fix" } });
  const slowIds = [id(1, "slow"), id(2, "slow")];
  for (const slowId of slowIds) tasks.push({ id: slowId, type: "slow", payload: { workMs: slowMs }, priority: 2 });
  const flakyIds: string[] = [];
  for (let n = tasks.length; n < count; n++) {
    const priority = Math.floor(random() * 7) - 3;
    const roll = random();
    if (roll < 0.1) {
      const flakyId = id(n, "flaky");
      flakyIds.push(flakyId);
      tasks.push({ id: flakyId, type: "flaky", payload: { failTimes: n % 3 === 0 ? 2 : 1 }, priority });
    } else if (roll < 0.2) {
      tasks.push({
        id: id(n, "delayed"),
        type: "echo",
        payload: { n },
        priority,
        delayMs: 500 + Math.floor(random() * 3500),
      });
    } else tasks.push({ id: id(n, "echo"), type: "echo", payload: { n }, priority });
  }
  return { tasks, poisonId, slowIds, flakyIds };
}

/**
 * Sends the tasks as producers do on AWS: SQS messages of `{"tasks": [...]}`, then one wake-up,
 * plus two messages no worker can take, which go to the dead-letter queue at once with their
 * reason: an envelope typo (`"task"`) and a task type the worker does not declare.
 */
export function sendWorkload(sqs: LocalSqs, tasks: TaskInput[], prefix: string, tasksPerMessage = 25): number {
  let messages = 0;
  for (let start = 0; start < tasks.length; start += tasksPerMessage) {
    sqs.send(JSON.stringify({ tasks: tasks.slice(start, start + tasksPerMessage) }));
    messages++;
  }
  sqs.send(JSON.stringify({ task: [{ id: `${prefix}-typo-envelope`, type: "echo" }] }));
  sqs.send(JSON.stringify({ tasks: [{ id: `${prefix}-typo-type`, type: "ecko" }] }));
  sqs.send("{}");
  return messages + 3;
}
