// Option parsers for commander, shared by the two programs that take flags: the `leaseq` CLI
// (cli/) and the local stack (dev/). Not part of the library's entry point.
import { InvalidArgumentError } from "commander";

/** A commander argument parser for an integer from `min` to `max`. */
export function integer(min: number, max: number): (text: string) => number {
  return (text) => {
    const value = Number(text);
    if (text.trim() === "" || !Number.isInteger(value) || value < min || value > max) {
      throw new InvalidArgumentError(`expected an integer from ${min} to ${max}.`);
    }
    return value;
  };
}
