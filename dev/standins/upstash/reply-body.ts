// Replies as the JSON bytes of an HTTP body. Written straight into one growing Buffer (no string
// per element and no final UTF-8 encoding of a multi-megabyte string), iteratively with an
// explicit stack (a script reply can nest ~8,000 deep in Redis 7, past the JS call stack), and in
// slices that give the event loop back every few milliseconds, so one 300k-element LRANGE does
// not hold up every other request while its body is built.
import { setImmediate as nextTurn } from "node:timers/promises";
import type { Outcome } from "./json.js";
import { type Bytes, type Reply, RespError, RespInteger } from "./resp.js";

/** How long one slice of body building may hold the event loop, in ms. */
const SLICE_MS = 5;
/** Values written between clock checks. */
const CHECK_EVERY = 1024;

const QUOTE = 0x22;

/** A Buffer that doubles as it fills: appending is amortised linear. */
class ByteWriter {
  private buffer = Buffer.allocUnsafe(16 * 1024);
  private length = 0;
  private scratch = Buffer.allocUnsafe(1024);

  /** Text whose chars are all below 256, one byte each (ASCII, or a byte string). */
  latin1(text: string): void {
    this.reserve(text.length);
    this.length += this.buffer.write(text, this.length, "latin1");
  }

  /** A byte string's bytes, base64-encoded (through a scratch buffer, reused, for the encoding). */
  base64(bytes: Bytes): void {
    if (this.scratch.length < bytes.length) this.scratch = Buffer.allocUnsafe(Math.max(bytes.length, 1024));
    const length = this.scratch.write(bytes, 0, "latin1");
    this.latin1(this.scratch.toString("base64", 0, length));
  }

  utf8(text: string): void {
    this.reserve(Buffer.byteLength(text, "utf8"));
    this.length += this.buffer.write(text, this.length, "utf8");
  }

  byte(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  result(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  private reserve(extra: number): void {
    if (this.length + extra <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + extra));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

/** Text JSON carries as it is: printable ASCII but the quote and the backslash. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7f]*$/;

/**
 * A string reply: UTF-8 text, or base64 of its bytes. Plain ASCII (most replies) is copied as it
 * is; anything else goes through JSON.stringify of its UTF-8 decoding (invalid bytes become
 * U+FFFD, as they always did).
 */
function writeString(out: ByteWriter, bytes: Bytes, base64: boolean): void {
  if (base64) {
    out.byte(QUOTE);
    out.base64(bytes);
    out.byte(QUOTE);
  } else if (PLAIN_ASCII.test(bytes)) {
    out.byte(QUOTE);
    out.latin1(bytes);
    out.byte(QUOTE);
  } else {
    out.utf8(JSON.stringify(Buffer.from(bytes, "latin1").toString("utf8")));
  }
}

function writeScalar(out: ByteWriter, value: Exclude<Reply, Reply[]>, base64: boolean): void {
  if (value === null) out.latin1("null");
  else if (value instanceof RespInteger) out.latin1(value.digits);
  else if (value instanceof RespError) writeString(out, Buffer.from(value.message, "utf8").toString("latin1"), base64);
  else writeString(out, value, base64);
}

/** Says when the current slice has run for SLICE_MS (checked synchronously: an await per value would cost a microtask each). */
class Slicer {
  private count = 0;
  private started = performance.now();

  due(): boolean {
    if (++this.count % CHECK_EVERY !== 0 || performance.now() - this.started < SLICE_MS) return false;
    return true;
  }

  async yield(): Promise<void> {
    await nextTurn();
    this.started = performance.now();
  }
}

/**
 * Writes a reply: strings as UTF-8 text, or base64 of their bytes when `base64` is set (at every
 * depth); integers as Redis sent them; nil as null; an error nested in an array (a script can
 * return one) as its message, as text.
 */
async function writeReply(out: ByteWriter, reply: Reply, base64: boolean, slicer: Slicer): Promise<void> {
  const open: { items: Reply[]; next: number }[] = [];
  let value: Reply = reply;
  for (;;) {
    if (slicer.due()) await slicer.yield();
    if (Array.isArray(value) && value.length > 0) {
      out.byte(0x5b); // '['
      open.push({ items: value, next: 1 });
      value = value[0];
      continue;
    }
    if (Array.isArray(value)) out.latin1("[]");
    else writeScalar(out, value, base64);
    // Close every array this value finished; then go on with the next sibling, if any.
    for (;;) {
      const top = open.at(-1);
      if (top === undefined) return;
      if (top.next < top.items.length) {
        out.byte(0x2c); // ','
        value = top.items[top.next++];
        break;
      }
      out.byte(0x5d); // ']'
      open.pop();
    }
  }
}

async function writeOutcome(out: ByteWriter, outcome: Outcome, base64: boolean, slicer: Slicer): Promise<void> {
  if ("error" in outcome) {
    // Errors are never base64-encoded: the client reads them as text.
    out.utf8(`{"error":${JSON.stringify(outcome.error)}}`);
    return;
  }
  out.latin1('{"result":');
  await writeReply(out, outcome.result, base64, slicer);
  out.byte(0x7d); // '}'
}

/** The body for one outcome, `{"result": …}` or `{"error": …}`, or for a list of them (pipeline, multi-exec). */
export async function outcomeBody(outcomes: Outcome | Outcome[], base64: boolean): Promise<Buffer> {
  const out = new ByteWriter();
  const slicer = new Slicer();
  if (!Array.isArray(outcomes)) {
    await writeOutcome(out, outcomes, base64, slicer);
    return out.result();
  }
  out.byte(0x5b);
  for (const [index, outcome] of outcomes.entries()) {
    if (index > 0) out.byte(0x2c);
    await writeOutcome(out, outcome, base64, slicer);
  }
  out.byte(0x5d);
  return out.result();
}
