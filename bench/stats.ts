/** Summary of repeated measurements: the median and how far the rounds spread around it. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median, in percent: the machine's noise across rounds. */
  spreadPct: number;
  rounds: number[];
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function spread(rounds: readonly number[]): Spread {
  const mid = median(rounds);
  const min = Math.min(...rounds);
  const max = Math.max(...rounds);
  return { median: mid, min, max, spreadPct: mid === 0 ? 0 : ((max - min) / mid) * 100, rounds: [...rounds] };
}

/** Rounds a figure for the table and the JSON: 3 significant digits, integers kept whole. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  if (Math.abs(value) >= 10 ** digits) return Math.round(value);
  return Number(value.toPrecision(digits));
}
