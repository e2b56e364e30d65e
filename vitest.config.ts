import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** The system tier's test files (below). */
const SYSTEM_TIER = [
  "test/system/**/*.test.ts",
  "test/package/consumer.test.ts",
  "test/examples/reference-app.test.ts",
  "test/dev/dev-loop.test.ts",
  "test/dev/start.test.ts",
  "test/dev/intake-stack.test.ts",
  "test/dev/schedules-stack.test.ts",
  "test/chaos/{cluster,concurrency,crash,faults,groups,hostile,restart,schedules}.test.ts",
];

export default defineConfig({
  resolve: {
    // The package's own names, as tsconfig.json "paths" maps them: the reference deployment and the
    // demo import leaseq as a user does.
    alias: [
      { find: /^leaseq$/, replacement: source("./shared/index.ts") },
      { find: /^leaseq\/lambda$/, replacement: source("./functions/index.ts") },
      { find: /^leaseq\/cdk$/, replacement: source("./infra/index.ts") },
      { find: /^leaseq\/testing$/, replacement: source("./testing/index.ts") },
    ],
  },
  test: {
    globalSetup: ["test/helpers/global-setup.ts"],
    setupFiles: ["test/helpers/cleanup.ts"],
    // The processes the tests start (Lambda stand-ins, the local stack) print no AWS SDK notice
    // about Node 20, as the CLI's do not (cli/bin.ts); a test that checks the CLI's stderr gives its
    // child exactly the environment it names, without this.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    // A full chaos run (LEASEQ_CHAOS=full: thousands of runs, SIGKILLs, real clocks) is long by design
    // and shares the machine with its own processes: no test of it is cut at the default.
    testTimeout: process.env.LEASEQ_CHAOS === "full" ? 900_000 : 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Files run side by side: each test has a queue of its own, so files share one Redis. Most of a
    // test's time is waiting (on Redis, on a lease, on a child process), so more files than the
    // machine's cores run at once (LEASEQ_TEST_WORKERS to change it).
    maxWorkers: Number(process.env.LEASEQ_TEST_WORKERS ?? 4),
    // Two tiers. `npm test` (fast): the library, the scripts and their model suites, the functions,
    // the infra, leaseq/testing and the CLI, with only Node and a redis-server. `npm run test:system`
    // (system): what needs more from the machine (Debian's chromium and luac5.1: `.ci/run` installs
    // them, a missing one fails naming what to install) or runs whole systems: the package as a
    // consumer installs it, the local stack and the reference app, and the small chaos runs that
    // kill and restart processes.
    projects: [
      { extends: true, test: { name: "fast", include: ["test/**/*.test.ts"], exclude: SYSTEM_TIER } },
      { extends: true, test: { name: "system", include: SYSTEM_TIER } },
    ],
  },
});
