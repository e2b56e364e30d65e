// The instructions Redis executes per task, counted under valgrind's callgrind: the same as
// `npm run bench -- --instructions` (bench/instructions.ts), kept under its old name.
// Usage: node --import tsx bench/callgrind.ts [tasks] [--only "leaseq b20"] (default 10,000 tasks).
import { instructionsMode } from "./instructions.js";

try {
  await instructionsMode(process.argv.slice(2), (line) => console.log(line));
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
