// A type's default flow control as defineTasks checks it (docs/flow-control.md "Per-type
// defaults"): every bad `flow` is reported in one ConfigError, naming the type, the field, what
// was given and what is allowed; a good one is kept and applied by withFlowDefault.
import { describe, expect, it } from "vitest";
import { withFlowDefault } from "../../functions/flow-defaults.js";
import { defineTasks } from "../../functions/tasks.js";
import { InvalidInputError } from "../../shared/errors.js";
import { configProblems } from "../helpers/config-errors.js";

const handler = () => {};
const key = (payload: unknown) => `doc:${(payload as { doc: string }).doc}`;

describe("defineTasks and a type's default flow", () => {
  it("reports every bad flow in one ConfigError, each naming its type and field", () => {
    const problems = configProblems(() =>
      defineTasks({
        types: {
          twoModes: { handler, flow: { dedupe: { key, ttlMs: 1_000 }, singleton: { key } } },
          keyText: { handler, flow: { throttle: { key: "t" as never, perMs: 1_000 } } },
          windowTooLong: { handler, flow: { debounce: { key, delayMs: 1_000, maxWaitMs: 367 * 24 * 3600 * 1000 } } },
          windowZero: { handler, flow: { dedupe: { key, ttlMs: 0 } } },
          singletonKey: { handler, flow: { singleton: { key: 42 as never } } },
          unknownMode: { handler, flow: { lottery: { key } } as never },
          good: { handler, flow: { singleton: { key } } },
        },
      }),
    );
    expect(problems).toEqual([
      'task type "twoModes": flow: a task takes at most one flow control (dedupe, debounce, throttle, singleton), got dedupe and singleton',
      'task type "keyText": flow.throttle.key must be a function (payload) => string, got "t"',
      'task type "windowTooLong": flow: debounce.maxWaitMs must be an integer of ms from 1 to 31622400000 (366 days), got 31708800000',
      'task type "windowZero": flow: dedupe.ttlMs must be an integer of ms from 1 to 31622400000 (366 days), got 0',
      'task type "singletonKey": flow.singleton.key must be a function (payload) => string, got 42',
      'task type "unknownMode": flow has unknown mode "lottery"; allowed: dedupe, debounce, throttle, singleton',
    ]);
  });

  it("keeps a good default and applies it to the tasks that carry none", () => {
    const tasks = defineTasks({ types: { sync: { handler, flow: { singleton: { key } } } } });
    const flow = tasks.types.sync.flow;
    expect(withFlowDefault(flow, { id: "a", type: "sync", payload: { doc: "7" } })).toEqual({
      id: "a",
      type: "sync",
      payload: { doc: "7" },
      singleton: { key: "doc:7" },
    });
    // A task's own flow control wins.
    const own = { id: "b", type: "sync", payload: { doc: "7" }, dedupe: { key: "mine", ttlMs: 5 } };
    expect(withFlowDefault(flow, own)).toBe(own);
    // A key function that throws refuses that task, naming the type.
    expect(() => withFlowDefault(flow, { id: "c", type: "sync", payload: null })).toThrow(InvalidInputError);
    expect(() => withFlowDefault(flow, { id: "c", type: "sync", payload: null })).toThrow(
      /task type "sync": its flow\.singleton\.key function threw/,
    );
  });
});
