// An incremental RESP2 reply parser. Bytes arrive in socket chunks of ~64 KB; a large reply (a
// 300k-element LRANGE, a 40 MB GET) spans hundreds of them. The parser keeps its place between
// chunks: the arrays still being filled (an explicit stack, so nesting depth costs heap rather
// than call stack), the length of a bulk string whose header it has read, and how far it has
// already searched for the end of a line. Every byte is examined once and copied a bounded number
// of times, so a reply costs time linear in its size however it is split.

/** An integer reply, kept as the decimal digits Redis sent so 64-bit values stay exact. */
export class RespInteger {
  constructor(readonly digits: string) {}
}

/** An error reply (top level, or an element of an EXEC or script reply). */
export class RespError {
  constructor(readonly message: string) {}
}

/**
 * A simple or bulk string's bytes as a "byte string": a JS string with one char per byte (latin1,
 * codes 0-255), so binary values stay exact. A string per element rather than a Buffer: V8 makes
 * one several times faster, which matters for a reply of 300k elements.
 */
export type Bytes = string;

/** A decoded reply: byte strings for simple and bulk strings, null for nil. */
export type Reply = Bytes | RespInteger | RespError | null | Reply[];

/** An array whose elements are still arriving. */
interface OpenArray {
  items: Reply[];
  expected: number;
}

const CR = 0x0d;
const LF = 0x0a;
const INITIAL_CAPACITY = 64 * 1024;
/** A buffer grown past this for one big reply is given back once it is drained. */
const KEEP_CAPACITY = 1024 * 1024;

/** Thrown for bytes that are not RESP2; the connection cannot be trusted after it. */
export class RespProtocolError extends Error {}

/** Feeds chunks in, calls `onReply` for each complete top-level reply, in order. */
export class RespParser {
  /** Unparsed bytes live in data[start, end); data[end, data.length) is free space. */
  private data = Buffer.allocUnsafe(INITIAL_CAPACITY);
  private start = 0;
  private end = 0;
  /** Where the search for the current line's LF resumes (bytes before it hold none). */
  private scanFrom = 0;
  /** Set once a bulk header is read: the string's length, still to arrive with its CRLF. */
  private bulkLength: number | undefined;
  private readonly open: OpenArray[] = [];

  constructor(private readonly onReply: (reply: Reply) => void) {}

  /** Parses what `chunk` completes; throws RespProtocolError on malformed input. */
  push(chunk: Buffer): void {
    this.append(chunk);
    for (;;) {
      const value = this.next();
      if (value === INCOMPLETE) break;
      if (value === OPENED) continue;
      this.deliver(value);
    }
    if (this.start === this.end) {
      // Drained: reuse the buffer from its start, and let a huge one go.
      if (this.data.length > KEEP_CAPACITY) this.data = Buffer.allocUnsafe(INITIAL_CAPACITY);
      this.start = this.end = this.scanFrom = 0;
    }
  }

  private append(chunk: Buffer): void {
    this.reserve(this.end - this.start + chunk.length);
    chunk.copy(this.data, this.end);
    this.end += chunk.length;
  }

  /** Makes room for `unparsed` bytes from `start` (which moves to 0 when the buffer is rearranged). */
  private reserve(unparsed: number): void {
    if (this.start + unparsed <= this.data.length) return;
    // Moving the unparsed tail to the front only when the total fits in half the buffer, else
    // doubling, keeps copying amortised linear: each move frees at least half the buffer.
    const target =
      unparsed <= this.data.length / 2 ? this.data : Buffer.allocUnsafe(Math.max(unparsed, this.data.length * 2));
    this.data.copy(target, 0, this.start, this.end);
    this.data = target;
    this.scanFrom -= this.start;
    this.end -= this.start;
    this.start = 0;
  }

  /** The next complete value, OPENED when an array header was read, or INCOMPLETE. */
  private next(): Reply | typeof INCOMPLETE | typeof OPENED {
    if (this.bulkLength !== undefined) {
      const length = this.bulkLength;
      if (this.end - this.start < length + 2) return INCOMPLETE;
      // A copy, as the parser's buffer is reused for later bytes.
      const bytes = this.data.toString("latin1", this.start, this.start + length);
      this.consume(this.start + length + 2);
      this.bulkLength = undefined;
      return bytes;
    }
    const lineEnd = this.findLineEnd();
    if (lineEnd < 0) return INCOMPLETE;
    const type = this.data[this.start];
    const lineStart = this.start + 1;
    this.consume(lineEnd + 2);
    switch (type) {
      case 0x2b: // '+'
        return this.data.toString("latin1", lineStart, lineEnd);
      case 0x2d: // '-'
        return new RespError(this.data.toString("utf8", lineStart, lineEnd));
      case 0x3a: // ':'
        return new RespInteger(this.data.toString("latin1", lineStart, lineEnd));
      case 0x24: {
        // '$'
        const length = this.count(lineStart, lineEnd);
        if (length < 0) return null;
        this.bulkLength = length;
        // A large string gets its room at once, rather than by doubling as its chunks arrive.
        this.reserve(Math.max(length + 2, this.end - this.start));
        return OPENED;
      }
      case 0x2a: {
        // '*'
        const expected = this.count(lineStart, lineEnd);
        if (expected < 0) return null;
        if (expected === 0) return [];
        this.open.push({ items: [], expected });
        return OPENED;
      }
      default:
        throw new RespProtocolError(`unexpected RESP type byte 0x${type?.toString(16)} from Redis`);
    }
  }

  /** The index of the CR ending the line at `start`, or -1 (the search resumes there next time). */
  private findLineEnd(): number {
    // A plain loop: header lines are a few bytes, and Buffer#indexOf would need a fresh
    // subarray per line to stay out of the free space past `end`.
    const data = this.data;
    let lf = Math.max(this.scanFrom, this.start);
    while (lf < this.end && data[lf] !== LF) lf++;
    if (lf === this.end) {
      this.scanFrom = this.end;
      return -1;
    }
    if (lf === this.start || data[lf - 1] !== CR) {
      throw new RespProtocolError("a RESP line from Redis did not end with CRLF");
    }
    return lf - 1;
  }

  /** The decimal integer in data[from, to): a bulk or array length, -1 for nil. */
  private count(from: number, to: number): number {
    const data = this.data;
    const negative = data[from] === 0x2d; // '-'
    let value = 0;
    for (let i = negative ? from + 1 : from; i < to; i++) {
      const digit = data[i] - 0x30;
      if (digit < 0 || digit > 9) value = Number.NaN;
      value = value * 10 + digit;
    }
    if (!Number.isSafeInteger(value) || to === from || (negative && to === from + 1)) {
      throw new RespProtocolError(`bad RESP length "${data.toString("latin1", from, to)}" from Redis`);
    }
    return negative ? -value : value;
  }

  private consume(upTo: number): void {
    this.start = upTo;
    this.scanFrom = upTo;
  }

  /** Adds a finished value to the innermost open array, closing every array it completes. */
  private deliver(value: Reply): void {
    let finished = value;
    for (;;) {
      const top = this.open.at(-1);
      if (top === undefined) {
        this.onReply(finished);
        return;
      }
      top.items.push(finished);
      if (top.items.length < top.expected) return;
      this.open.pop();
      finished = top.items;
    }
  }
}

const INCOMPLETE = Symbol("incomplete");
const OPENED = Symbol("opened");
