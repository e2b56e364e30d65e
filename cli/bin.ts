#!/usr/bin/env node
// The `leaseq` command (package.json "bin" runs its compiled form, dist/cli/bin.js).
import { main } from "./main.js";

// `leaseq list ready | head` closes the pipe early: stop quietly, as Unix tools do.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
process.exitCode = await main(process.argv);
