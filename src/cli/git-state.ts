import { execFile } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';

// Git's own state around a run: where HEAD points and what the index holds. turnback restores
// files, never `.git`, so a turn that moved HEAD or staged files is told in words, and the undo
// preview says what it does not undo. Everything here only reads `.git`.

/** Where HEAD was and what the index held at one moment. */
export interface GitState {
  /** `main`, or `undefined` when HEAD is detached. */
  branch: string | undefined;
  /** The commit HEAD names, or `undefined` on a branch with no commit yet. */
  commit: string | undefined;
  /** Each index entry's `mode object stage`, by path; `undefined` when the index could not be read. */
  index: Map<string, string> | undefined;
}

/** The largest index read (a 250,000-file repository's is about 30 MiB). */
const INDEX_MAX_BYTES = 128 * 1024 * 1024;

function gitLines(args: string[], cwd: string): Promise<string[] | undefined> {
  return new Promise((resolve) => {
    execFile('git', args, { cwd, timeout: 10_000, encoding: 'utf8', env: { ...process.env, GIT_OPTIONAL_LOCKS: '0' } }, (error, stdout) => {
      resolve(error === null ? stdout.split('\n').filter((line) => line.length > 0) : undefined);
    });
  });
}

/** HEAD and the index of the repository at `projectRoot`, or `undefined` outside one (or without git). */
export async function readGitState(projectRoot: string): Promise<GitState | undefined> {
  let lines = await gitLines(['rev-parse', '--show-object-format', '--absolute-git-dir', 'HEAD', '--symbolic-full-name', 'HEAD'], projectRoot);
  let commit: string | undefined;
  let ref: string | undefined;
  let format: string | undefined;
  let gitDir: string | undefined;
  if (lines !== undefined && lines.length === 4) {
    [format, gitDir, commit, ref] = lines;
  } else {
    // A branch with no commit yet: HEAD names no commit, only its branch.
    lines = await gitLines(['rev-parse', '--show-object-format', '--absolute-git-dir'], projectRoot);
    if (lines === undefined || lines.length !== 2) return undefined;
    [format, gitDir] = lines;
    ref = (await gitLines(['symbolic-ref', '-q', 'HEAD'], projectRoot))?.[0];
  }
  const branch = ref !== undefined && ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : undefined;
  const index = gitDir === undefined ? undefined : await readIndex(path.join(gitDir, 'index'), format === 'sha256' ? 32 : 20);
  return { branch, commit, index };
}

async function readIndex(file: string, hashBytes: number): Promise<Map<string, string> | undefined> {
  try {
    if ((await stat(file)).size > INDEX_MAX_BYTES) return undefined;
    return parseIndex(await readFile(file), hashBytes);
  } catch (error) {
    // No index yet is an empty one.
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? new Map() : undefined;
  }
}

/**
 * Git's index file (versions 2, 3 and 4) as `path → "mode object stage"`; `undefined` for anything
 * it does not recognise, so a format it cannot read is said, never misread. Pure.
 */
export function parseIndex(bytes: Buffer, hashBytes = 20): Map<string, string> | undefined {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'DIRC') return undefined;
  const version = bytes.readUInt32BE(4);
  if (version < 2 || version > 4) return undefined;
  const count = bytes.readUInt32BE(8);
  const entries = new Map<string, string>();
  let at = 12;
  let previous: Buffer = Buffer.alloc(0);
  for (let i = 0; i < count; i++) {
    const start = at;
    // ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each), the object id, 16 bits of flags.
    if (at + 40 + hashBytes + 2 > bytes.length) return undefined;
    const mode = bytes.readUInt32BE(at + 24);
    const object = bytes.toString('hex', at + 40, at + 40 + hashBytes);
    const flags = bytes.readUInt16BE(at + 40 + hashBytes);
    at += 40 + hashBytes + 2;
    if ((flags & 0x4000) !== 0) {
      if (version < 3) return undefined;
      at += 2;
    }
    const stage = (flags >> 12) & 0x3;
    let name: Buffer;
    if (version === 4) {
      // The name is the previous one cut by a varint count of bytes, then a NUL-terminated suffix.
      let cut = 0;
      let byte: number;
      let first = true;
      do {
        if (at >= bytes.length) return undefined;
        byte = bytes[at++] as number;
        cut = first ? byte & 0x7f : ((cut + 1) << 7) | (byte & 0x7f);
        first = false;
      } while ((byte & 0x80) !== 0);
      const end = bytes.indexOf(0, at);
      if (end < 0 || cut > previous.length) return undefined;
      name = Buffer.concat([previous.subarray(0, previous.length - cut), bytes.subarray(at, end)]);
      at = end + 1;
    } else {
      const end = bytes.indexOf(0, at);
      if (end < 0) return undefined;
      name = bytes.subarray(at, end);
      // Entries are padded with NULs to a multiple of 8 bytes (1 to 8 of them).
      at = start + Math.ceil((end - start + 1) / 8) * 8;
    }
    previous = name;
    entries.set(`${name.toString('utf8')}\u0000${stage}`, `${mode.toString(8)} ${object} ${stage}`);
  }
  return entries;
}

/** How many index entries differ between two readings (added, removed or changed). Pure. */
export function indexChanges(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): number {
  let changed = 0;
  for (const [key, value] of after) if (before.get(key) !== value) changed += 1;
  for (const key of before.keys()) if (!after.has(key)) changed += 1;
  return changed;
}

function headText(state: GitState): string {
  const at = state.commit === undefined ? '(no commit yet)' : state.commit.slice(0, 7);
  return state.branch === undefined ? `detached ${at}` : `${state.branch} ${at}`;
}

/**
 * The lines that tell what a turn did to git's own state, or none: `HEAD moved: main 1a2b3c4 →
 * detached 5d6e7f8 (turnback restores files, not HEAD: git switch main)` and `index: 120 files
 * staged during this turn`. Pure.
 */
export function gitStateNotes(before: GitState | undefined, after: GitState | undefined): string[] {
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
  if (before.index === undefined || after.index === undefined) {
    if (before.index !== after.index) notes.push('index: could not be read before and after the turn; turnback restores files, not the index');
  } else {
    const staged = indexChanges(before.index, after.index);
    if (staged > 0) notes.push(`index: ${staged} ${staged === 1 ? 'file' : 'files'} staged during this turn (turnback restores files, not the index)`);
  }
  return notes;
}
