import { InvalidInputError } from "../shared/errors.js";
import { shown } from "../shared/validate.js";
import { TASK_MESSAGE_FIELDS } from "./messages.js";
import { checkPayload, issuesText } from "./schema.js";
import type { TaskDeclaration } from "./tasks.js";

const FIELDS = TASK_MESSAGE_FIELDS as readonly string[];

/** Most problems one refusal lists; the count of the others follows. */
const PROBLEMS_SHOWN = 10;

/**
 * What a producer refuses before it sends anything: a task with a field that is not a task's, and,
 * with a declaration, a type it does not declare (nor accept) or a payload its schema rejects.
 * Every task of the call is checked first; one bad task throws one InvalidInputError listing every
 * problem found (`send: tasks[2] (type "email"): payload.to: ...`), and nothing is sent.
 */
export async function checkOutgoingTasks(
  operation: "send" | "enqueue",
  tasks: readonly unknown[],
  declaration: TaskDeclaration | undefined,
): Promise<void> {
  if (!Array.isArray(tasks)) throw new InvalidInputError(`${operation}: tasks must be an array, got ${shown(tasks)}`);
  const declared = declaration && [...Object.keys(declaration.types), ...declaration.acceptTypes];
  const problems: string[] = [];
  for (const [index, task] of tasks.entries()) {
    const at = `tasks[${index}]`;
    if (task === null || typeof task !== "object" || Array.isArray(task)) {
      problems.push(`${at} must be an object with at least "type"`);
      continue;
    }
    const unknown = Object.keys(task).filter((key) => !FIELDS.includes(key));
    if (unknown.length > 0) {
      const named = unknown.map((key) => JSON.stringify(key.slice(0, 40))).join(", ");
      problems.push(
        `${at} has unknown field${unknown.length === 1 ? "" : "s"} ${named}; allowed: ${FIELDS.join(", ")}`,
      );
    }
    if (declaration === undefined || declared === undefined) continue;
    const { type, payload } = task as { type?: unknown; payload?: unknown };
    if (typeof type !== "string" || !declared.includes(type)) {
      problems.push(`${at}: task type ${shown(type)} is not declared; declared: ${declared.join(", ")}`);
      continue;
    }
    const schema = Object.hasOwn(declaration.types, type) ? declaration.types[type].schema : undefined;
    if (schema === undefined) continue;
    const checked = await checkPayload(schema, payload);
    if (checked.issues) problems.push(`${at} (type "${type}"): ${issuesText(checked.issues)}`);
  }
  if (problems.length === 0) return;
  const more = problems.length > PROBLEMS_SHOWN ? `; and ${problems.length - PROBLEMS_SHOWN} more` : "";
  throw new InvalidInputError(
    `${operation}: nothing sent, ${problems.length} problem${problems.length === 1 ? "" : "s"}: ${problems.slice(0, PROBLEMS_SHOWN).join("; ")}${more}`,
  );
}
