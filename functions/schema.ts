/**
 * Payload schemas: any Standard Schema v1 object (zod ≥ 3.24, valibot ≥ 1, arktype, ...), checked by
 * its own `~standard.validate`. leaseq depends on no schema library: the interface below is the
 * one the standard publishes to be copied (https://standardschema.dev, spec v1), unchanged.
 */

/** The Standard Schema interface. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  /** The Standard Schema properties. */
  readonly "~standard": StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  /** The Standard Schema properties interface. */
  export interface Props<Input = unknown, Output = Input> {
    /** The version number of the standard. */
    readonly version: 1;
    /** The vendor name of the schema library. */
    readonly vendor: string;
    /** Validates unknown input values. */
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    /** Inferred types associated with the schema. */
    readonly types?: Types<Input, Output> | undefined;
  }

  /** The result interface of the validate function. */
  export type Result<Output> = SuccessResult<Output> | FailureResult;

  /** The result interface if validation succeeds. */
  export interface SuccessResult<Output> {
    /** The typed output value. */
    readonly value: Output;
    /** The non-existent issues. */
    readonly issues?: undefined;
  }

  /** The result interface if validation fails. */
  export interface FailureResult {
    /** The issues of failed validation. */
    readonly issues: ReadonlyArray<Issue>;
  }

  /** The issue interface of the failure output. */
  export interface Issue {
    /** The error message of the issue. */
    readonly message: string;
    /** The path of the issue, if any. */
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }

  /** The path segment interface of the issue. */
  export interface PathSegment {
    /** The key representing a path segment. */
    readonly key: PropertyKey;
  }

  /** The Standard Schema types interface. */
  export interface Types<Input = unknown, Output = Input> {
    /** The input type of the schema. */
    readonly input: Input;
    /** The output type of the schema. */
    readonly output: Output;
  }

  /** Infers the input type of a Standard Schema. */
  export type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["input"];

  /** Infers the output type of a Standard Schema. */
  export type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema["~standard"]["types"]>["output"];
}

/** A payload checked by its type's schema: the schema's output, or its issues. */
export type CheckedPayload =
  | { value: unknown; issues?: undefined }
  | { issues: ReadonlyArray<{ path: string; message: string }> };

/** Whether `value` is a Standard Schema v1 object (what `defineTasks` accepts as a type's `schema`). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const props = (value as StandardSchemaV1 | null)?.["~standard"];
  return typeof props === "object" && props !== null && props.version === 1 && typeof props.validate === "function";
}

/**
 * Checks `payload` with `schema` (awaiting an async one): its output value, or its issues, each with
 * the field path (`payload.items[0].qty`). A task sent without a payload runs with {}, so {} is what
 * is checked then. A refused payload is an answer, not an exception; only a schema that throws throws.
 */
export async function checkPayload(schema: StandardSchemaV1, payload: unknown): Promise<CheckedPayload> {
  const result = await schema["~standard"].validate(payload === undefined ? {} : payload);
  if (result.issues === undefined) return { value: result.value };
  return { issues: result.issues.map((issue) => ({ path: pathText(issue.path), message: issue.message })) };
}

/**
 * Why ingest refuses a payload: the field paths its type's schema rejects, never the schema's
 * messages (some quote the value, and ingest's reasons are logged). Undefined when it passes.
 */
export async function payloadPathsProblem(
  type: string,
  schema: StandardSchemaV1 | undefined,
  payload: unknown,
): Promise<string | undefined> {
  if (schema === undefined) return undefined;
  const checked = await checkPayload(schema, payload);
  if (checked.issues === undefined) return undefined;
  const paths = [...new Set(checked.issues.map((issue) => issue.path))].join(", ");
  return `payload of task type ${JSON.stringify(type)} fails its schema at ${paths}`;
}

/** Issues as one line with the schema's messages: `payload.to: Invalid input; payload.size: Too big`. */
export function issuesText(issues: ReadonlyArray<{ path: string; message: string }>): string {
  return issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
}

/** `payload.items[0].qty` for the path ["items", 0, "qty"]. */
function pathText(path: StandardSchemaV1.Issue["path"]): string {
  let text = "payload";
  for (const segment of path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    if (typeof key === "number") text += `[${key}]`;
    else if (typeof key === "string" && /^[A-Za-z_$][\w$]*$/.test(key)) text += `.${key}`;
    else text += `[${typeof key === "string" ? JSON.stringify(key) : String(key)}]`;
  }
  return text;
}
