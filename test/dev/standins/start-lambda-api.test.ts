import { InvokeCommand, LambdaClient, ResourceNotFoundException } from "@aws-sdk/client-lambda";
import { afterAll, describe, expect, it } from "vitest";
import { startLambdaApi } from "../../../dev/standins/lambda/lambda-api.js";

describe("the local Lambda API stand-in, called by @aws-sdk/client-lambda", async () => {
  const received: unknown[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const api = await startLambdaApi({
    echo: async (event) => ({ echoed: event }),
    waits: async (event) => {
      await gate;
      received.push(event);
    },
    fails: async () => {
      throw new TypeError("bad input");
    },
  });
  const lambda = new LambdaClient({
    endpoint: api.url,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  afterAll(async () => {
    lambda.destroy();
    await api.close();
  });
  const payload = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

  it("answers a RequestResponse invocation with the function's result", async () => {
    const reply = await lambda.send(new InvokeCommand({ FunctionName: "echo", Payload: payload({ a: 1 }) }));
    expect(reply.StatusCode).toBe(200);
    expect(JSON.parse(new TextDecoder().decode(reply.Payload))).toEqual({ echoed: { a: 1 } });
  });

  it("answers an Event invocation with 202 at once and runs the function in the background", async () => {
    const reply = await lambda.send(
      new InvokeCommand({ FunctionName: "waits", InvocationType: "Event", Payload: payload({ leaseq: "drain" }) }),
    );
    expect(reply.StatusCode).toBe(202);
    expect(received).toEqual([]);
    expect(api.inFlight()).toBe(1);
    release();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(received).toEqual([{ leaseq: "drain" }]);
    expect(api.invocations()).toMatchObject({ waits: 1 });
  });

  it("accepts a function ARN and reports a function error as Lambda does", async () => {
    const reply = await lambda.send(
      new InvokeCommand({ FunctionName: "arn:aws:lambda:us-east-1:000000000000:function:fails", Payload: payload({}) }),
    );
    expect(reply.FunctionError).toBe("Unhandled");
    expect(JSON.parse(new TextDecoder().decode(reply.Payload))).toEqual({
      errorType: "TypeError",
      errorMessage: "bad input",
    });
  });

  it("rejects an unknown function with ResourceNotFoundException", async () => {
    await expect(lambda.send(new InvokeCommand({ FunctionName: "nope", Payload: payload({}) }))).rejects.toBeInstanceOf(
      ResourceNotFoundException,
    );
  });
});
