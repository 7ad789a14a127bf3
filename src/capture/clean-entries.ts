import type { GitIndexTable } from '../core/git-index.js';

// Look-ups in git's kept index table (core/git-index.ts) that a picture makes per record: a
// stage-0 regular file's entry by path, an entry's object id against a hex id. Pure.

/** The entry number of a stage-0 regular file's path in an index table. */
export interface CleanEntries {
  /** The entry number of `path`'s stage-0 regular file, if the index has one. */
  entryOf(path: string): number | undefined;
}

/**
 * The stage-0 regular files of `table`, by path (a conflicted path has no one blob). git sorts
 * its entries by the bytes of their paths; where that is also the order of the paths as strings
 * (always for ASCII and most other names), the entries' numbers in one typed array are searched
 * by halves: 1 MB at 250,000 entries instead of a map's ~8 MiB table, kept for as long as the
 * index, and the ~15 MiB of tables a growing map leaves behind as it is built during a first
 * picture, whose peak that is (issue #28). Paths whose string order differs (a name past U+E000
 * beside one past U+FFFF, a raw byte git keeps) fall back to the map.
 */
export function cleanEntries(table: GitIndexTable): CleanEntries {
  const numbers = new Int32Array(table.count);
  let count = 0;
  let sorted = true;
  for (let i = 0; i < table.count; i++) {
    if (table.stages[i] !== 0 || ((table.modes[i] as number) & 0o170000) !== 0o100000) continue;
    if (count > 0 && !((table.paths[numbers[count - 1] as number] as string) < (table.paths[i] as string))) sorted = false;
    numbers[count++] = i;
  }
  if (!sorted) {
    const clean = new Map<string, number>();
    for (let k = 0; k < count; k++) clean.set(table.paths[numbers[k] as number] as string, numbers[k] as number);
    return { entryOf: (path) => clean.get(path) };
  }
  const paths = table.paths;
  const entries = numbers.slice(0, count);
  return {
    entryOf(path) {
      let low = 0;
      let high = entries.length - 1;
      while (low <= high) {
        const middle = (low + high) >>> 1;
        const i = entries[middle] as number;
        const at = paths[i] as string;
        if (at === path) return i;
        if (at < path) low = middle + 1;
        else high = middle - 1;
      }
      return undefined;
    },
  };
}

const HEX = '0123456789abcdef';

/**
 * True when entry `i`'s object id, in lower-case hex, is `hex` past its first `from` characters
 * (a git object key's id past `git:`), compared as bytes: no string made.
 */
export function sameObject(table: GitIndexTable, i: number, hex: string, from = 0): boolean {
  const width = table.hashBytes;
  if (hex.length - from !== width * 2) return false;
  const at = i * width;
  for (let j = 0; j < width; j++) {
    const byte = table.objects[at + j] as number;
    if (hex.charCodeAt(from + 2 * j) !== HEX.charCodeAt(byte >> 4) || hex.charCodeAt(from + 2 * j + 1) !== HEX.charCodeAt(byte & 15)) return false;
  }
  return true;
}
