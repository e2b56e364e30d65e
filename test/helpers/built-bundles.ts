// The built Lambda bundles (dist/lambda/, or a cloud assembly's staged assets) run as Lambda runs
// them: each loaded as a cold start of its own, each invocation given a fresh context.
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { captureStdout, lambdaContext } from "./events.js";

/** The handler a built bundle exports. */
export type BundleHandler = (event: unknown, context: unknown) => Promise<Record<string, unknown>>;

/**
 * The handler of the bundle in `directory` (its index.mjs), loaded as a module instance of its own
 * (`instance` goes in a query string), hence its own cold start, which reads the environment of
 * that moment.
 */
export async function loadBundle(directory: string, instance: string): Promise<BundleHandler> {
  return (await import(`${pathToFileURL(join(directory, "index.mjs")).href}?${instance}`)).handler;
}

/** Invokes `handler` with `event` and a fresh context; resolves to its result and the lines it logged. */
export function invoke(handler: BundleHandler, event: unknown) {
  return captureStdout(() => handler(event, lambdaContext()));
}
