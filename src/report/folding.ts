/**
 * How long lists fold: past a row limit the rest become one line that names what the hidden rows
 * do (`… and 12 more: 8 changed, 4 deleted`), and a fold never hides a single row (that row is
 * printed instead: `… and 1 more` would take the same room and say less).
 */

/** How many of `total` rows to print under a limit of `maxRows` (all of them when only one would fold). */
export function rowsShown(total: number, maxRows: number): number {
  return total <= maxRows + 1 ? total : Math.max(0, maxRows);
}

/** `… and 12 more: 8 changed, 4 deleted (--all lists every one)`; zero counts are left out. */
export function moreLine(counts: ReadonlyArray<readonly [word: string, count: number]>): string {
  const total = counts.reduce((sum, [, count]) => sum + count, 0);
  const parts = counts.filter(([, count]) => count > 0).map(([word, count]) => `${count} ${word}`);
  return `… and ${total} more: ${parts.join(', ')} (--all lists every one)`;
}
