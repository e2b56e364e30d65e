// The reclaimer's Lambda entry point, which the LeaseQueue construct bundles unless you name your
// own: it needs no task types, so one entry serves every queue.
import { createReclaimer } from "../reclaimer.js";

export const handler = createReclaimer();
