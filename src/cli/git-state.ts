import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import * as path from 'node:path';
import type { GitRepo } from './git.js';
import { keptIndexOf } from '../capture/tracked-files.js';
import { parseGitIndex, parseGitIndexTable, tableObject, type GitIndexTable } from '../core/git-index.js';
import { readRegularFile, readRegularText } from '../fs/regular-file.js';

// Git's own state around a run: where HEAD points and what the index holds. turnback restores
// files, never `.git`, so a turn that moved HEAD or staged files is told in words, and the undo
// preview says what it does not undo. Everything here only reads `.git`'s files: no git process,
// nothing written.

/** The largest index read (a 250,000-file repository's is about 30 MiB). */
const INDEX_MAX_BYTES = 128 * 1024 * 1024;

/** What HEAD and the index were at one moment. */
export interface GitStateReading {
  /** `main`, or `undefined` when HEAD is detached. */
  branch: string | undefined;
  /** The commit HEAD names, or `undefined` on a branch with no commit yet. */
  commit: string | undefined;
  /**
   * The index's entries (none when there is no index yet), `undefined` when unreadable: the table
   * the capture layer keeps for the work tree while the index file stays the same
   * (tracked-files.ts `keptIndexOf`), so a command holds no copy of the file's bytes (~33 MB at
   * 250,000 files, read again for every command before). Two readings of the same index file
   * share the table; entries are compared only when they differ.
   */
  index: GitIndexTable | undefined;
  /** Bytes in an object id: 20 (SHA-1) or 32 (SHA-256). */
  hashBytes: number;
}

/** The files a reading consulted, each with its identity just before it was read (`-` when absent). */
type Sources = Map<string, string>;

/** A file's identity: git replaces HEAD, refs and the index by rename, so a rewrite changes it. */
function identityOf(file: string): string {
  try {
    const stats = statSync(file);
    return `${stats.ino}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
  } catch {
    return '-';
  }
}

/** Reads `file`, noting its identity first: a file changed in between then reads as changed later. */
async function readText(file: string, sources: Sources): Promise<string | undefined> {
  sources.set(file, identityOf(file));
  try {
    return await readRegularText(file);
  } catch {
    return undefined;
  }
}

/** The commit a ref names: its loose file, else its line in packed-refs (a worktree's refs live in the common folder). */
async function resolveRef(gitDir: string, ref: string, sources: Sources): Promise<string | undefined> {
  const common = (await readText(path.join(gitDir, 'commondir'), sources))?.trim();
  const dirs = common === undefined || common.length === 0 ? [gitDir] : [gitDir, path.resolve(gitDir, common)];
  for (const dir of dirs) {
    const loose = (await readText(path.join(dir, ...ref.split('/')), sources))?.trim();
    if (loose !== undefined && /^[0-9a-f]{40,64}$/.test(loose)) return loose;
  }
  for (const dir of dirs) {
    const packed = await readText(path.join(dir, 'packed-refs'), sources);
    const line = packed?.split('\n').find((l) => l.endsWith(` ${ref}`));
    if (line !== undefined) return line.slice(0, line.indexOf(' '));
  }
  return undefined;
}

/**
 * HEAD and the index of `repo`, or `undefined` without a repository (or an unreadable HEAD). Given
 * the `previous` reading, answers with it when none of the files it consulted changed since (a
 * `stat` each, instead of reading the index again: the common case after a command).
 */
export async function readGitState(repo: Pick<GitRepo, 'toplevel' | 'gitDir' | 'hashBytes'> | undefined, previous?: GitStateReading): Promise<GitStateReading | undefined> {
  if (repo === undefined) return undefined;
  const consulted = previous === undefined ? undefined : readingSources.get(previous);
  if (consulted !== undefined && previous?.hashBytes === repo.hashBytes && [...consulted].every(([file, identity]) => identityOf(file) === identity)) return previous;
  const sources: Sources = new Map();
  const head = (await readText(path.join(repo.gitDir, 'HEAD'), sources))?.trim();
  if (head === undefined) return undefined;
  let branch: string | undefined;
  let commit: string | undefined;
  if (head.startsWith('ref: ')) {
    const ref = head.slice('ref: '.length);
    branch = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : undefined;
    commit = await resolveRef(repo.gitDir, ref, sources);
  } else if (/^[0-9a-f]{40,64}$/.test(head)) {
    commit = head;
  }
  const indexFile = path.join(repo.gitDir, 'index');
  const indexIdentity = identityOf(indexFile);
  const index = await readIndex(repo, indexFile);
  // An index too big to compare is never taken as unchanged by identity either.
  if (index !== undefined) sources.set(indexFile, indexIdentity);
  const reading: GitStateReading = { branch, commit, index, hashBytes: repo.hashBytes };
  if (index !== undefined) readingSources.set(reading, sources);
  return reading;
}

/** No entries: the index of a repository that has none yet. */
function emptyTable(hashBytes: number): GitIndexTable {
  return { count: 0, paths: [], modes: new Uint32Array(0), stages: new Uint8Array(0), objects: Buffer.alloc(0), hashBytes, mtimes: new Float64Array(0), inos: new Uint32Array(0), sizes: new Uint32Array(0) };
}

/** The index's entries: the work tree's kept table when it is of this index file, else parsed here (the bytes dropped); empty when absent. */
async function readIndex(repo: Pick<GitRepo, 'toplevel' | 'gitDir' | 'hashBytes'>, indexFile: string): Promise<GitIndexTable | undefined> {
  const kept = keptIndexOf(repo.toplevel);
  if (kept !== undefined && kept.indexFile === indexFile && kept.entries?.hashBytes === repo.hashBytes) return kept.entries;
  try {
    if ((await stat(indexFile)).size > INDEX_MAX_BYTES) return undefined;
    return parseGitIndexTable(await readRegularFile(indexFile), repo.hashBytes);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? emptyTable(repo.hashBytes) : undefined;
  }
}

/** What each reading consulted, for {@link readGitState}'s re-check. */
const readingSources = new WeakMap<GitStateReading, Sources>();

/** The index entries of a reading as {@link parseIndex} gives them, or `undefined` when unreadable; an absent index is empty. */
function entriesOf(reading: GitStateReading): Map<string, string> | undefined {
  const table = reading.index;
  if (table === undefined) return undefined;
  const entries = new Map<string, string>();
  for (let i = 0; i < table.count; i++) entries.set(`${table.paths[i]}\u0000${table.stages[i]}`, `${(table.modes[i] as number).toString(8)} ${tableObject(table, i)} ${table.stages[i]}`);
  return entries;
}

/**
 * The index as `path NUL stage → "mode object stage"`, or `undefined` when unreadable. Pure.
 */
export function parseIndex(bytes: Buffer, hashBytes = 20): Map<string, string> | undefined {
  const entries = parseGitIndex(bytes, hashBytes, { objects: true });
  if (entries === undefined) return undefined;
  return new Map(entries.map((e) => [`${e.path}\u0000${e.stage}`, `${e.mode.toString(8)} ${e.object ?? ''} ${e.stage}`]));
}

/** How many index entries differ between two readings (added, removed or changed). Pure. */
export function indexChanges(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): number {
  let changed = 0;
  for (const [key, value] of after) if (before.get(key) !== value) changed += 1;
  for (const key of before.keys()) if (!after.has(key)) changed += 1;
  return changed;
}

function headText(state: Pick<GitStateReading, 'branch' | 'commit'>): string {
  const at = state.commit === undefined ? '(no commit yet)' : state.commit.slice(0, 7);
  return state.branch === undefined ? `detached ${at}` : `${state.branch} ${at}`;
}

/**
 * The lines that tell what a turn did to git's own state, or none: `HEAD moved: main 1a2b3c4 →
 * detached 5d6e7f8 (turnback restores files, not HEAD: git switch main)` and `index: 120 files
 * staged during this turn`; when HEAD moved, what is staged against the new HEAD
 * (`stagedAfterMove`, when known), not what the checkout rewrote. Pure.
 */
export function gitStateNotes(before: GitStateReading | undefined, after: GitStateReading | undefined, stagedAfterMove?: number): string[] {
  if (before === undefined || after === undefined) return [];
  const notes: string[] = [];
  if (before.branch !== after.branch || before.commit !== after.commit) {
    const way = before.branch !== undefined && before.branch !== after.branch
      ? `git switch ${before.branch}`
      : before.commit !== undefined
        ? before.branch === undefined ? `git switch --detach ${before.commit.slice(0, 7)}` : `git reset --soft ${before.commit.slice(0, 7)}`
        : 'git has no commit to go back to';
    notes.push(`HEAD moved: ${headText(before)} → ${headText(after)} (turnback restores files, not HEAD: ${way})`);
  }
  // HEAD moved: a checkout rewrote the index to match its new HEAD, so the old index says nothing
  // of what is staged; what differs from HEAD now does (`stagedAfterMove`, asked of git).
  const moved = before.branch !== after.branch || before.commit !== after.commit;
  if (moved && stagedAfterMove !== undefined) {
    if (stagedAfterMove > 0) notes.push(`index: ${stagedAfterMove} ${stagedAfterMove === 1 ? 'file' : 'files'} staged against the new HEAD (turnback restores files, not the index)`);
    return notes;
  }
  // The same table is the same index file: the common case costs no comparison at all.
  if (before.index !== undefined && before.index === after.index) return notes;
  const was = entriesOf(before);
  const now = entriesOf(after);
  if (was === undefined || now === undefined) {
    notes.push('index: changed during this turn (turnback could not read it; it restores files, not the index)');
  } else {
    const staged = indexChanges(was, now);
    if (staged > 0) notes.push(`index: ${staged} ${staged === 1 ? 'file' : 'files'} staged during this turn (turnback restores files, not the index)`);
  }
  return notes;
}
