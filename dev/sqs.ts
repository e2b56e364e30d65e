// The local SQS stand-in lives in ./sqs/; this keeps `import … from "./sqs.js"` working.
export * from "./sqs/index.js";
