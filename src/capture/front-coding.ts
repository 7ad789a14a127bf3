// Paths written one after another as the characters each shares with the one before it and the
// rest ("front coding"): what a sorted list of paths repeats is not written again. Pure.

/** Appends `path` to `columns` as the length it shares with `previous` and its tail. */
export function pushFrontCoded(columns: { shared: number[]; tails: string[] }, previous: string, path: string): void {
  let shared = 0;
  const most = Math.min(path.length, previous.length);
  while (shared < most && path.charCodeAt(shared) === previous.charCodeAt(shared)) shared++;
  columns.shared.push(shared);
  columns.tails.push(path.slice(shared));
}

/** The path after `previous` whose shared length is `keep` and tail `tail`; `undefined` when they cannot be one. */
export function frontDecoded(previous: string, keep: unknown, tail: unknown): string | undefined {
  if (typeof keep !== 'number' || typeof tail !== 'string' || !Number.isSafeInteger(keep) || keep < 0 || keep > previous.length) return undefined;
  return keep === 0 ? tail : previous.slice(0, keep) + tail;
}
