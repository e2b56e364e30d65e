/**
 * The names of `names` nearest to `name` by edit distance (Levenshtein), nearest first and at most
 * `count`, leaving out any too far to be a slip of the keyboard: more than a quarter of `name`'s
 * length, or 2 for a short one.
 */
export function nearestNames(name: string, names: readonly string[], count = 3): string[] {
  const farthest = Math.max(2, Math.floor(name.length / 4));
  return names
    .map((candidate) => ({ candidate, distance: editDistance(name, candidate) }))
    .filter(({ distance }) => distance <= farthest)
    .sort((a, b) => a.distance - b.distance || a.candidate.localeCompare(b.candidate))
    .slice(0, count)
    .map(({ candidate }) => candidate);
}

/**
 * What to say after "no such <noun> `name`": the nearest of `names`, else how many there are and
 * which command lists them (`listedBy`), else `none` when there are none.
 */
export function nearestHint(
  name: string,
  names: readonly string[],
  { noun, listedBy, none }: { noun: string; listedBy: string; none: string },
): string {
  const nearest = nearestNames(name, names);
  if (nearest.length > 0) return `nearest ${noun} names: ${nearest.join(", ")}`;
  if (names.length > 0) return `no ${noun} name there is near it (${listedBy} lists all ${names.length})`;
  return none;
}

/** The fewest insertions, deletions and substitutions that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
}
