// The mixed benchmark's worker entry, as a user's: run in Lambda execution environments of their own
// (dev/standins/lambda/environments.ts), configured from the environment.
import { createWorker } from "../../functions/worker.js";
import { mixedTasks } from "./tasks.js";

export const handler = createWorker({ tasks: mixedTasks });
