import { readdir } from 'node:fs/promises';
import * as path from 'node:path';
import type { Gap } from '../index.js';
import {
  buildTurnEndList,
  collapseCandidates,
  gitQuestionPaths,
  type ReportChange,
  type TurnEndList,
} from '../report/turn-end-list.js';
import type { CliContext } from './context.js';
import { askGit } from './git.js';
import { gitBlobIdOf } from '../core/git-blob.js';

/** What the CLI knows about a span of changes. */
export interface ChangeSet {
  changes: readonly ReportChange[];
  gaps: readonly Gap[];
  partial: boolean;
  /** Commits git still holds the turn's files in besides HEAD now (HEAD before a turn that moved it). */
  commits?: readonly string[];
  /** Entries the pictures left out (ignored, `skip`) that the turn deleted. */
  ignoredDeleted?: readonly string[];
  /** Of those, how many more were deleted than `ignoredDeleted` names. */
  ignoredDeletedMore?: number;
}

const WALK_CAP = 5000;

/**
 * Counts files (and links) under `absolute` that are not in `known` (project paths), stopping past
 * `cap`. A missing folder holds none.
 */
async function countOtherFiles(projectRoot: string, absolute: string, known: ReadonlySet<string>, cap: number): Promise<number> {
  let count = 0;
  const stack = [absolute];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.git') stack.push(full);
      } else if (!known.has(path.relative(projectRoot, full).split(path.sep).join('/'))) {
        count += 1;
      }
      if (count > cap) return count;
    }
  }
  return count;
}

/**
 * Folders whose files all went the same way, checked on disk: the folder holds no file now that
 * the list does not name. Right after the turn that is "a deleted folder is gone, a new one holds
 * only its new files"; later (`show` after an undo brought the files back) the same folders still
 * fold, and a folder someone has since added other files to is listed row by row.
 */
export async function wholeFolders(projectRoot: string, changes: readonly ReportChange[]): Promise<Set<string>> {
  const whole = new Set<string>();
  const named = new Set(changes.map((c) => c.path));
  for (const candidate of collapseCandidates(changes)) {
    if ([...whole].some((outer) => candidate.folder.startsWith(outer))) continue;
    if (candidate.files > WALK_CAP) continue;
    const absolute = path.join(projectRoot, ...candidate.folder.slice(0, -1).split('/'));
    if ((await countOtherFiles(projectRoot, absolute, named, 0)) === 0) whole.add(candidate.folder);
  }
  return whole;
}

/** Gathers git's answer and the whole folders, then builds the turn-end list. */
export async function turnEndListFor(context: CliContext, set: ChangeSet): Promise<TurnEndList> {
  const asked = gitQuestionPaths(set.changes);
  // A file pictured by its blob id is held by git as long as git has that blob.
  const blobs = new Map<string, string>();
  for (const change of set.changes) {
    const blob = change.before?.type === 'file' ? gitBlobIdOf(change.before.object) : undefined;
    if (blob !== undefined) blobs.set(change.path, blob);
  }
  const git = await askGit(context.projectRoot, asked, { blobs, ...(set.commits !== undefined ? { commits: set.commits } : {}) });
  // `--all` lists every row: no folder stands for its files.
  const whole = Number.isFinite(context.maxRows) ? await wholeFolders(context.projectRoot, set.changes) : new Set<string>();
  return buildTurnEndList({
    changes: set.changes,
    gaps: set.gaps,
    partial: set.partial,
    git,
    protected: context.config.resolved.protected,
    wholeFolders: whole,
    maxFileMib: context.config.resolved.maxFileMib,
    maxRows: context.maxRows,
    ...(set.ignoredDeleted !== undefined ? { ignoredDeleted: set.ignoredDeleted } : {}),
    ...(set.ignoredDeletedMore !== undefined ? { ignoredDeletedMore: set.ignoredDeletedMore } : {}),
  });
}
