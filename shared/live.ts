import { createLogUpdate } from "log-update";

/** One redraw: the multi-line view for a terminal, and the single line printed otherwise. */
export interface Frame {
  block: string;
  line: string;
}

/** Where a live view goes: redrawn in place on a terminal, appended as plain lines elsewhere. */
export interface LiveOutput {
  readonly interactive: boolean;
  update(frame: Frame): void;
  /** Prints a message above the view (a terminal) or as its own line. */
  note(text: string): void;
  /** Leaves the last frame on screen and restores the cursor. */
  done(): void;
}

/**
 * A live output on `stream`. Piped or redirected output gets plain lines, because cursor
 * movement would litter a log file or a CI transcript with escape codes.
 */
export function liveOutput(stream: NodeJS.WriteStream, interactive = isTerminal(stream)): LiveOutput {
  if (!interactive) {
    return {
      interactive,
      update: (frame) => stream.write(`${frame.line}\n`),
      note: (text) => stream.write(`${text}\n`),
      done: () => {},
    };
  }
  const draw = createLogUpdate(stream);
  return {
    interactive,
    update: (frame) => draw(frame.block),
    note: (text) => draw.persist(text),
    done: () => draw.done(),
  };
}

/**
 * A terminal a view can be redrawn on. A pseudo-terminal that reports 0 rows (e.g. `script`
 * without a controlling terminal) would get no output at all from log-update: plain lines there.
 */
export function isTerminal(stream: NodeJS.WriteStream): boolean {
  return stream.isTTY === true && (stream.rows ?? 24) > 0 && (stream.columns ?? 80) > 0;
}

/**
 * Tasks per second finished over a sliding window of samples of a running total. Workers settle
 * whole batches at once, so a rate between two adjacent redraws would jump between 0 and bursts.
 */
export class Throughput {
  private readonly samples: Array<{ count: number; atMs: number }> = [];

  constructor(private readonly windowMs = 5_000) {}

  /** The rate over the window ending at this sample; 0 on the first one, never negative (trims lower counts). */
  sample(count: number, atMs: number): number {
    this.samples.push({ count, atMs });
    while (this.samples.length > 2 && atMs - this.samples[1].atMs >= this.windowMs) this.samples.shift();
    const oldest = this.samples[0];
    if (atMs <= oldest.atMs) return 0;
    return (Math.max(0, count - oldest.count) * 1000) / (atMs - oldest.atMs);
  }
}
