// What a ConfigError lists: configuration is validated once and every problem reported in one
// error, so a test reads the whole list and compares it.
import { expect } from "vitest";
import { ConfigError } from "../../shared/errors.js";

/** The problems of the ConfigError `build` throws; the test fails when it throws nothing or another error. */
export function configProblems(build: () => unknown): string[] {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  return expect.unreachable("no ConfigError was thrown");
}
