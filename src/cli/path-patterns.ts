import ignore from 'ignore';

/**
 * What a person may give as a path to `undo --path`, `diff` and `show`: a file, a folder (every
 * path under it), or a glob (`src/**\/*.ts`), read with git's pattern rules through the `ignore`
 * package and anchored at the project root (`a.txt` is the top-level file, not any `a.txt`).
 * Pure.
 */
export function pathMatcher(projectPaths: readonly string[]): (candidate: string) => boolean {
  const patterns = ignore().add(projectPaths.map((p) => (p.startsWith('/') ? p : `/${p}`)));
  return (candidate) => patterns.ignores(candidate);
}
