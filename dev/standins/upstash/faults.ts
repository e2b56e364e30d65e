/** What an armed fault does to a request it matches. */
export type FaultAction =
  /** Runs the command(s), then waits `ms` before answering (a slow network or a slow Redis). */
  | { kind: "delay"; ms: number }
  /** Runs the command(s), then closes the socket without answering: the reply is lost after Redis applied it. */
  | { kind: "drop" }
  /**
   * Answers HTTP `status` with `{error}` ("injected fault: HTTP <status>", or `error`: e.g. what a
   * database without a command answers); the command(s) never reach Redis unless `apply` is true.
   */
  | { kind: "status"; status: number; apply?: boolean; error?: string };

/** A fault rule: which requests it matches and what it does to the first `times` of them. */
export interface FaultRule {
  /** Command name, case-insensitive (e.g. "EVALSHA"); omitted: any. A pipeline matches if any of its commands does. */
  command?: string;
  /** A further test on the whole command (name and arguments, as strings). */
  match?: (command: readonly string[]) => boolean;
  /** How many matching requests it hits before it disarms itself. Default 1. */
  times?: number;
  action: FaultAction;
}

/** An armed rule, with counters tests assert on. */
export interface ArmedFault {
  readonly rule: FaultRule;
  /** Requests that matched, including those after the rule ran out. */
  readonly seen: number;
  /** Requests the action was applied to (at most `times`). */
  readonly fired: number;
}

interface FaultState {
  rule: FaultRule;
  seen: number;
  fired: number;
}

/**
 * Fault injection for tests, off until a rule is added. The first armed rule that matches a
 * request and has not run out decides what happens to it; every matching rule counts it as seen.
 */
export class Faults {
  private readonly rules: FaultState[] = [];

  /** Arms a rule; the returned handle's counters update as requests arrive. */
  add(rule: FaultRule): ArmedFault {
    const times = rule.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new Error(`fault times must be an integer ≥ 1, got ${times}`);
    const state: FaultState = { rule: { ...rule, times }, seen: 0, fired: 0 };
    this.rules.push(state);
    return state;
  }

  /** Disarms every rule. */
  clear(): void {
    this.rules.length = 0;
  }

  /** The action for a request carrying `commands`, if an armed rule takes it (and counts it). */
  take(commands: readonly (readonly string[])[]): FaultAction | undefined {
    let chosen: FaultAction | undefined;
    for (const state of this.rules) {
      if (!commands.some((command) => matches(state.rule, command))) continue;
      state.seen++;
      if (chosen === undefined && state.fired < (state.rule.times ?? 1)) {
        state.fired++;
        chosen = state.rule.action;
      }
    }
    return chosen;
  }
}

function matches(rule: FaultRule, command: readonly string[]): boolean {
  if (rule.command !== undefined && rule.command.toUpperCase() !== command[0]?.toUpperCase()) return false;
  return rule.match === undefined || rule.match(command);
}
