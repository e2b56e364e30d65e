// The worker's cold-start check against the construct's LEASEQ_TASKS, in the words of defineTasks:
// each field that differs, named as the user writes it, and what to do about it.

/** One field of a policy as the user writes it in defineTasks, and its value as text. */
type Fields = Map<string, string>;

/** What to do when the two sides differ: they were built from different declarations. */
export const REDEPLOY_ADVICE =
  "the worker entry and the construct were deployed from different declarations: have both import the same defineTasks(...) result (createWorker({ tasks }) and new LeaseQueue(..., { tasks })) and redeploy them together (one cdk deploy)";

const NONE = "none";

/**
 * Differences between the policy text of the worker's declaration (`mine`, policyText's output) and
 * the one the construct deployed (`deployed`, LEASEQ_TASKS): one problem per task type or queue
 * setting that differs, naming only the fields that differ, then REDEPLOY_ADVICE. Empty when they
 * are the same.
 */
export function policyTextMismatches(mine: string, deployed: string): string[] {
  if (mine === deployed) return [];
  const a = parse(mine);
  const b = parse(deployed);
  const problems: string[] = [];
  const queueFields = differences(a.queue, b.queue);
  if (queueFields) problems.push(queueFields);
  for (const [name, fields] of a.types) {
    const other = b.types.get(name);
    if (other === undefined) {
      problems.push(`task type "${name}" is declared in the worker but not in the construct's tasks`);
      continue;
    }
    const differing = differences(fields, other);
    if (differing) problems.push(`task type "${name}": ${differing}`);
  }
  for (const name of b.types.keys()) {
    if (!a.types.has(name))
      problems.push(`task type "${name}" is in the construct's tasks but not declared in the worker`);
  }
  if (a.accepted !== b.accepted) {
    problems.push(`acceptTypes: ${versus(`[${a.accepted}]`, `[${b.accepted}]`)}`);
  }
  // Texts that differ only in a way this reader does not know (a newer format) still fail the check.
  if (problems.length === 0) problems.push(`LEASEQ_TASKS differs from the worker's policies: "${deployed}"`);
  return [...problems, REDEPLOY_ADVICE];
}

function versus(mine: string, deployed: string): string {
  return `the worker declares ${mine}, the construct was given ${deployed}`;
}

/** "field: the worker declares x, the construct was given y; ..." for the fields that differ, or "". */
function differences(mine: Fields, deployed: Fields): string {
  const names = [...new Set([...mine.keys(), ...deployed.keys()])];
  return names
    .filter((name) => (mine.get(name) ?? NONE) !== (deployed.get(name) ?? NONE))
    .map((name) => `${name}: ${versus(mine.get(name) ?? NONE, deployed.get(name) ?? NONE)}`)
    .join("; ");
}

/**
 * Reads policyText's output: "<order>[+<groups>];<type>,<type>...;<accepted>,...;<concurrency>x<maxStalls>".
 * A type's timeout written "~<ms>" was declared as `leaseMs` (both times at once).
 */
function parse(text: string): { queue: Fields; types: Map<string, Fields>; accepted: string } {
  const [order = "", types = "", accepted = "", worker = ""] = text.split(";");
  const [ordering, groups] = order.split("+");
  const [concurrency, maxStalls] = worker.split("x");
  const queue: Fields = new Map([
    ["ordered", String(ordering === "ordered")],
    ["concurrency", concurrency || NONE],
    ["maxStalls", maxStalls || NONE],
  ]);
  for (const [field, value] of groupFields(groups, "groups")) queue.set(field, value);
  const byName = new Map<string, Fields>();
  for (const entry of types.split(",").filter(Boolean)) {
    const [name, timeoutMs = "", heartbeatMs, concurrency, maxAttempts, baseMs, maxMs, group] = entry.split(":");
    // "~": a run goes on past it until the invocation ends (a type declared with leaseMs, or none).
    const fields: Fields = new Map([
      ["timeoutMs", timeoutMs.startsWith("~") ? `${timeoutMs.slice(1)} (runs until the invocation ends)` : timeoutMs],
      ["heartbeatMs", heartbeatMs],
      ["concurrency", concurrency || NONE],
      ["maxAttempts", maxAttempts],
      ["backoff.baseMs", baseMs],
      ["backoff.maxMs", maxMs],
    ]);
    for (const [field, value] of groupFields(group, "group")) fields.set(field, value);
    byName.set(name, fields);
  }
  return { queue, types: byName, accepted: accepted.split(",").filter(Boolean).join(", ") };
}

/**
 * A group policy's text (groupPolicyText, "." for ","): concurrency, ordered, rate max and window,
 * the type's rate max and window; 0 is "not set". Named as defineTasks takes them: `group.concurrency`,
 * `group.ordered`, `group.rate`, and the type's own `rate` (across its groups).
 */
function groupFields(text: string | undefined, prefix: "group" | "groups"): Fields {
  // No group policy reads as every field not set, so only a field set on one side shows.
  const [concurrency, ordered, rateMax, ratePerMs, typeRateMax, typeRatePerMs, onFailure] = (text ?? "").split(".");
  const rate = (max: string | undefined, perMs: string | undefined) =>
    max && max !== "0" ? `{ max: ${max}, perMs: ${perMs} }` : NONE;
  const fields: Fields = new Map();
  fields.set(`${prefix}.concurrency`, concurrency && concurrency !== "0" ? concurrency : NONE);
  fields.set(`${prefix}.ordered`, String(ordered === "1"));
  fields.set(`${prefix}.onFailure`, onFailure === "hold" ? "hold" : "continue");
  fields.set(`${prefix}.rate`, rate(rateMax, ratePerMs));
  if (prefix === "group") fields.set("rate", rate(typeRateMax, typeRatePerMs));
  return fields;
}
