/**
 * An SQS API error, as the JSON protocol reports it: the HTTP status, the `__type` shape name the
 * SDK turns into the exception's `.name`, and the awsQuery code of the `x-amzn-query-error` header,
 * which @aws-sdk/client-sqs reads first (it runs the JSON protocol in awsQueryCompatible mode).
 */
export class SqsError extends Error {
  constructor(
    /** The shape name, e.g. `QueueDoesNotExist`: `__type` is `com.amazonaws.sqs#<type>`. */
    readonly type: string,
    message: string,
    /** The awsQuery error code, e.g. `AWS.SimpleQueueService.NonExistentQueue`. */
    readonly queryCode: string = type,
    readonly status = 400,
  ) {
    super(message);
    this.name = type;
  }
}

/** The errors the stand-in answers, with the query codes and statuses of the SQS model in @aws-sdk/client-sqs. */
export const sqsErrors = {
  queueDoesNotExist: () =>
    new SqsError("QueueDoesNotExist", "The specified queue does not exist.", "AWS.SimpleQueueService.NonExistentQueue"),
  // Not modelled in the SDK: it surfaces as an SQSServiceException whose name is the code.
  invalidParameterValue: (message: string) => new SqsError("InvalidParameterValue", message),
  missingParameter: (name: string) =>
    new SqsError("MissingParameter", `The request must contain the parameter ${name}.`),
  invalidValue: (name: string, value: unknown, reason: string) =>
    new SqsError("InvalidParameterValue", `Value ${String(value)} for parameter ${name} is invalid. Reason: ${reason}`),
  receiptHandleIsInvalid: (handle: string) =>
    new SqsError(
      "ReceiptHandleIsInvalid",
      `The input receipt handle "${handle}" is not a valid receipt handle.`,
      "ReceiptHandleIsInvalid",
      404,
    ),
  receiptHandleExpired: (handle: string) =>
    new SqsError(
      "InvalidParameterValue",
      `Value ${handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.`,
    ),
  messageNotInflight: () =>
    new SqsError("MessageNotInflight", "The message is not in flight.", "AWS.SimpleQueueService.MessageNotInflight"),
  emptyBatch: (entry: string) =>
    new SqsError(
      "EmptyBatchRequest",
      `There should be at least one ${entry} in the request.`,
      "AWS.SimpleQueueService.EmptyBatchRequest",
    ),
  tooManyEntries: (count: number) =>
    new SqsError(
      "TooManyEntriesInBatchRequest",
      `Maximum number of entries per request are 10. You have sent ${count}.`,
      "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
    ),
  idsNotDistinct: (id: string) =>
    new SqsError("BatchEntryIdsNotDistinct", `Id ${id} repeated.`, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
  invalidBatchEntryId: () =>
    new SqsError(
      "InvalidBatchEntryId",
      "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
      "AWS.SimpleQueueService.InvalidBatchEntryId",
    ),
  batchTooLong: (limit: number, bytes: number) =>
    new SqsError(
      "BatchRequestTooLong",
      `Batch requests cannot be longer than ${limit} bytes. You have sent ${bytes} bytes.`,
      "AWS.SimpleQueueService.BatchRequestTooLong",
    ),
  invalidAttributeName: (name: string) => new SqsError("InvalidAttributeName", `Unknown Attribute ${name}.`),
  invalidMessageContents: (message: string) => new SqsError("InvalidMessageContents", message),
  purgeInProgress: (queue: string) =>
    new SqsError(
      "PurgeQueueInProgress",
      `Only one PurgeQueue operation on ${queue} is allowed every 60 seconds.`,
      "AWS.SimpleQueueService.PurgeQueueInProgress",
      403,
    ),
  resourceNotFound: (message: string) =>
    new SqsError("ResourceNotFoundException", message, "ResourceNotFoundException", 404),
  unsupportedOperation: (message: string) =>
    new SqsError("UnsupportedOperation", message, "AWS.SimpleQueueService.UnsupportedOperation"),
};
