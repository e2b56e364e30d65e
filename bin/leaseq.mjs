#!/usr/bin/env node
// The `leaseq` CLI: loads TypeScript through tsx and ../lua/*.lua as text (as `npm start` does),
// then runs local/cli/main.ts.
import { register } from "tsx/esm/api";

// `leaseq list ready | head` closes the pipe early: stop quietly, as Unix tools do.
process.stdout.on("error", (error) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
register();
await import("./lua-loader.mjs");
const { main } = await import("../local/cli/main.ts");
process.exitCode = await main(process.argv);
