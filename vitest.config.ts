import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

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

/**
 * The files that take longest (a minute or more of a loaded two-core machine: installing the
 * package, the model suites, whole stacks, a browser), longest first. They start first, so the run
 * ends with short files filling the workers rather than with one long file alone: vitest's own order
 * runs the "fast" project's files before any of "system", and on a clean clone (no timings cached)
 * the larger files first.
 */
const LONG_FIRST = [
  "test/package/consumer.test.ts",
  "test/chaos/guarantees-model.test.ts",
  "test/chaos/model.test.ts",
  "test/dev/dev-loop.test.ts",
  "test/examples/reference-app.test.ts",
  "test/chaos/restart.test.ts",
  "test/functions/crash-isolation.test.ts",
  "test/dev/start.test.ts",
  "test/system/dashboard/dashboard.test.ts",
  "test/functions/worker-close.test.ts",
  "test/infra/assets.test.ts",
];

/** vitest's order, with LONG_FIRST's files ahead of the rest, in that list's order. */
class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const at = LONG_FIRST.findIndex((path) => file.moduleId.endsWith(`/${path}`));
      return at === -1 ? LONG_FIRST.length : at;
    };
    return sorted
      .map((file, at) => ({ file, at, rank: rank(file) }))
      .sort((a, b) => a.rank - b.rank || a.at - b.at)
      .map(({ file }) => file);
  }
}

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
    sequence: { sequencer: LongFirstSequencer },
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
