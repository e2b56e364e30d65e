// A setup file (vitest.config.ts): after each test file, delete the queues it created.
import { afterAll } from "vitest";
import { deleteQueues, takeCreatedQueues } from "./stores.js";

afterAll(async () => {
  await deleteQueues(takeCreatedQueues());
});
