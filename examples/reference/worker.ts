// The reference deployment's worker entry: what a user writes in their own repository.
import { createWorker } from "leaseq/lambda";
import tasks from "./tasks.js";

export const handler = createWorker({ tasks });
