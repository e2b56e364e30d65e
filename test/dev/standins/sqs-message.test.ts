import { describe, expect, it } from "vitest";
import { md5OfAttributes, messageBytes, selectAttributes, validateMessage } from "../../../dev/standins/sqs/message.js";

// Published digests of SQS's MD5OfMessageAttributes algorithm (from the README of the
// aws-md5-of-message-attributes npm package), so the encoding is checked against outside values.
const string = { attribName1: { DataType: "String", StringValue: "attribValue 1" } };
const number = {
  customNumberTypeAttrib: { DataType: "Number.float", StringValue: "4563442423554324324264524243.32543234" },
};
const binary = { binaryAttribute: { DataType: "Binary", BinaryValue: Buffer.from("Hello binary world!") } };

describe("SQS message attributes", () => {
  it("digest as SQS does, for String, custom Number, Binary and several attributes in any order", () => {
    expect(md5OfAttributes(string)).toBe("19e27d4e946b072f3f58da80d94fd778");
    expect(md5OfAttributes(number)).toBe("9fe1b90bbd9965bdf77bac517c7d2495");
    expect(md5OfAttributes(binary)).toBe("31a92b15d92f8db860eda32aceb656c3");
    expect(md5OfAttributes({ ...binary, ...number, ...string })).toBe("c932db14a896c663f83c260297d594ff");
    expect(md5OfAttributes({})).toBeUndefined();
  });

  it("count name, type and value bytes towards the message size", () => {
    expect(messageBytes("héllo", {})).toBe(6);
    expect(messageBytes("", binary)).toBe("binaryAttribute".length + "Binary".length + 19);
  });

  it("are selected by exact name, by prefix wildcard, or all", () => {
    const attributes = { ...string, "leaseq.reason": { DataType: "String", StringValue: "r" } };
    expect(Object.keys(selectAttributes(attributes, ["All"]))).toEqual(["attribName1", "leaseq.reason"]);
    expect(Object.keys(selectAttributes(attributes, [".*"]))).toEqual(["attribName1", "leaseq.reason"]);
    expect(Object.keys(selectAttributes(attributes, ["leaseq.*"]))).toEqual(["leaseq.reason"]);
    expect(Object.keys(selectAttributes(attributes, ["attribName1"]))).toEqual(["attribName1"]);
    expect(selectAttributes(attributes, [])).toEqual({});
  });

  it("are validated as SQS does: Number values, names, at most 10", () => {
    const send = (attributes: Parameters<typeof validateMessage>[1]) => () => validateMessage("body", attributes, 0);
    expect(send({ n: { DataType: "Number", StringValue: "-1.5e10" } })).not.toThrow();
    expect(send({ n: { DataType: "Number", StringValue: "twelve" } })).toThrow(/not a valid Number/);
    expect(send({ "a..b": { DataType: "String", StringValue: "v" } })).toThrow(/invalid name/);
    expect(send({ "amazon.x": { DataType: "String", StringValue: "v" } })).toThrow(/invalid name/);
    expect(send({ s: { DataType: "Text", StringValue: "v" } })).toThrow(/invalid data type/);
    expect(send({ s: { DataType: "String", StringValue: "" } })).toThrow(/non-empty StringValue/);
    const eleven = Object.fromEntries(
      Array.from({ length: 11 }, (_, n) => [`a${n}`, { DataType: "String", StringValue: "v" }]),
    );
    expect(send(eleven)).toThrow(/exceeds the allowed maximum \[10\]/);
  });
});
