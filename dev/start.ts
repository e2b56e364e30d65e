// `npm start`: the local stack from this repository's sources (see dev/dev.ts).
import { runDev } from "./dev.js";

process.exitCode = await runDev(process.argv.slice(2), "npm start --", "npm run cli --");
