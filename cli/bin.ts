#!/usr/bin/env node
// The `leaseq` command (package.json "bin" runs its compiled form, dist/cli/bin.js).
import { main } from "./main.js";

// `leaseq list ready | head` closes the pipe early: stop quietly, as Unix tools do.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});
// On Node 20 the AWS SDK (v3) warns on stderr, at the first client it builds (`dlq`,
// UPSTASH_SECRET_ARN, the worker and reclaimer `dev` runs), that its versions published after
// January 2027 need Node 22: a notice for whoever picks the SDK's version, noise in an operator's
// output. This variable is its documented switch (aws/aws-sdk-js-v3#7983), read when a client is
// built, so setting it here is in time; a value the user set is kept.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";
process.exitCode = await main(process.argv);
