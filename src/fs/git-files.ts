import * as path from 'node:path';
import { readRegularTextSync } from './regular-file.js';

// The two small files of a repository turnback reads (read-only, never written): where a `.git`
// file points, and which object format the repository uses.

/** Where a `.git` file (a worktree, a submodule) points: `gitdir: <path>`, relative to its folder. */
export function gitDirFromFile(workTree: string, dotGitFile: string): string | undefined {
  try {
    const match = /^gitdir: (.+)$/m.exec(readRegularTextSync(dotGitFile).slice(0, 4096));
    return match?.[1] === undefined ? undefined : path.resolve(workTree, match[1].trim());
  } catch {
    return undefined;
  }
}

/** 32 for a SHA-256 repository (its config, or its common folder's, says `objectformat = sha256`), else 20. */
export function objectIdBytes(gitDir: string): number {
  let common = gitDir;
  try {
    common = path.resolve(gitDir, readRegularTextSync(path.join(gitDir, 'commondir')).trim());
  } catch {
    // No common folder: the git folder is the main one.
  }
  for (const dir of new Set([gitDir, common])) {
    try {
      if (/^\s*objectformat\s*=\s*sha256\s*$/im.test(readRegularTextSync(path.join(dir, 'config')))) return 32;
    } catch {
      // No config here.
    }
  }
  return 20;
}
