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

/** What the CLI knows about a span of changes. */
export interface ChangeSet {
  changes: readonly ReportChange[];
  gaps: readonly Gap[];
  partial: boolean;
}

const WALK_CAP = 5000;

/** Counts files (and links) under `folder` on disk, stopping past `cap`. A missing folder holds 0. */
async function countFiles(absolute: string, cap: number): Promise<number> {
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
      if (entry.isDirectory()) {
        if (entry.name !== '.git') stack.push(path.join(dir, entry.name));
      } else {
        count += 1;
      }
      if (count > cap) return count;
    }
  }
  return count;
}

/**
 * Folders whose files all went the same way, checked on disk: a deleted folder holds no files
 * now; a new or changed folder holds exactly the files the list names.
 */
export async function wholeFolders(projectRoot: string, changes: readonly ReportChange[]): Promise<Set<string>> {
  const whole = new Set<string>();
  for (const candidate of collapseCandidates(changes)) {
    if ([...whole].some((outer) => candidate.folder.startsWith(outer))) continue;
    const absolute = path.join(projectRoot, ...candidate.folder.slice(0, -1).split('/'));
    const expected = candidate.kind === 'deleted' ? 0 : candidate.files;
    if (expected > WALK_CAP) continue;
    if ((await countFiles(absolute, expected)) === expected) whole.add(candidate.folder);
  }
  return whole;
}

/** Gathers git's answer and the whole folders, then builds the turn-end list. */
export async function turnEndListFor(context: CliContext, set: ChangeSet): Promise<TurnEndList> {
  const git = await askGit(context.projectRoot, gitQuestionPaths(set.changes));
  const whole = await wholeFolders(context.projectRoot, set.changes);
  return buildTurnEndList({
    changes: set.changes,
    gaps: set.gaps,
    partial: set.partial,
    git,
    protected: context.config.resolved.protected,
    wholeFolders: whole,
    maxFileMib: context.config.resolved.maxFileMib,
    maxRows: context.maxRows,
  });
}
