// A script's raw ARGV for the tests that call a script directly (past the TypeScript layer), built
// from the protocol's declaration so a test names the argument it changes, never its position.
import { type FixedArgs, scriptArgs } from "../../shared/protocol/index.js";

/** The ARGV of a good claim at `now`: one task, a 1-second lease, claim id "c1", but for `given`. */
export function claimArgs(now: number, given: Partial<FixedArgs<"claim">> = {}): string[] {
  return scriptArgs("claim", {
    now: String(now),
    count: "1",
    maxLeaseMs: "1000",
    claimId: "c1",
    repeat: "0",
    promoteLimit: "10",
    types: "",
    busy: "0",
    room: "",
    woken: "0",
    lingers: "1",
    ...given,
  });
}
