import { lstat, readlink } from 'node:fs/promises';
import * as path from 'node:path';
import { createTwoFilesPatch } from 'diff';
import type { CheckpointId, CheckpointMeta, PathState, PlanEntry, StoreView } from '../index.js';
import { shownPath } from '../report/escape.js';
import { noCopyText } from '../report/reasons.js';
import { sizeText } from '../report/size-text.js';
import { observerFor, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { metaJson, openExisting } from './info.js';
import type { Io } from './io.js';
import { pathMatcher } from './path-patterns.js';
import { displayLabel, resolveId } from './pictures.js';
import { changesHolder } from './agent-turns.js';
import { projectPathOf } from './undo.js';
import { readRegularFile } from '../fs/regular-file.js';

/** Options of `turnback diff`. */
export interface DiffOptions extends GlobalOptions {
  /** Compare the picture with the tree now, not with what its own turn left. */
  toNow?: boolean;
}

const BINARY_SNIFF = 8000;

/** Checkpoint kinds on the timeline: each records the state a path had before it changed it. */
const TIMELINE = new Set<CheckpointMeta['kind']>(['turn', 'call', 'pre-restore']);

function isBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, BINARY_SNIFF).includes(0);
}

/** One side of a diff; `mode` (permission bits) for a regular file. */
type Side = { kind: 'text'; text: string; mode?: number } | { kind: 'absent' } | { kind: 'summary'; text: string; bytes?: Buffer; mode?: number };

async function recordedSide(store: StoreView, state: PathState, maxFileMib: number): Promise<Side> {
  switch (state.type) {
    case 'absent':
      return { kind: 'absent' };
    case 'file': {
      const bytes = await store.readObject(state.object);
      const mode = state.mode & 0o777;
      return isBinary(bytes) ? { kind: 'summary', text: `binary, ${sizeText(bytes.length)}`, bytes, mode } : { kind: 'text', text: bytes.toString('utf8'), mode };
    }
    case 'symlink':
      return { kind: 'summary', text: `symlink to ${state.target}` };
    case 'uncopied':
      return { kind: 'summary', text: `${sizeText(state.size)}, ${noCopyText(state.reason, maxFileMib)}` };
    case 'other':
      return { kind: 'summary', text: `a ${state.kind}` };
  }
}

async function diskSide(projectRoot: string, projectPath: string): Promise<Side> {
  const absolute = path.join(projectRoot, ...projectPath.split('/'));
  let stats;
  try {
    stats = await lstat(absolute);
  } catch {
    return { kind: 'absent' };
  }
  if (stats.isSymbolicLink()) return { kind: 'summary', text: `symlink to ${await readlink(absolute)}` };
  if (!stats.isFile()) return { kind: 'summary', text: stats.isDirectory() ? 'a folder' : 'a special file' };
  const mode = stats.mode & 0o777;
  if (stats.size > 16 * 1024 * 1024) return { kind: 'summary', text: `${sizeText(stats.size)}, too large to diff`, mode };
  const bytes = await readRegularFile(absolute);
  return isBinary(bytes) ? { kind: 'summary', text: `binary, ${sizeText(bytes.length)}`, bytes, mode } : { kind: 'text', text: bytes.toString('utf8'), mode };
}

/** One path's diff from `before` to `now`: a unified diff for text, one line otherwise. */
export function diffOne(projectPath: string, before: Side, now: Side): string {
  const modes = modeLine(projectPath, before, now);
  if (modes !== '' && sameContent(before, now)) return modes;
  return modes + contentDiff(projectPath, before, now);
}

/** `path: mode 755 → 644` when both sides are files whose permission bits differ, else nothing. */
function modeLine(projectPath: string, before: Side, now: Side): string {
  if (before.kind === 'absent' || now.kind === 'absent' || before.mode === undefined || now.mode === undefined || before.mode === now.mode) return '';
  return `${shownPath(projectPath)}: mode ${before.mode.toString(8)} → ${now.mode.toString(8)}\n`;
}

function sameContent(before: Side, now: Side): boolean {
  if (before.kind === 'absent' && now.kind === 'absent') return true;
  if (before.kind === 'text' && now.kind === 'text') return before.text === now.text;
  return before.kind === 'summary' && now.kind === 'summary' && (before.bytes !== undefined && now.bytes !== undefined ? before.bytes.equals(now.bytes) : before.bytes === undefined && now.bytes === undefined && before.text === now.text);
}

function contentDiff(projectPath: string, before: Side, now: Side): string {
  if (before.kind !== 'summary' && now.kind !== 'summary') {
    const oldName = before.kind === 'absent' ? '/dev/null' : `a/${shownPath(projectPath)}`;
    const newName = now.kind === 'absent' ? '/dev/null' : `b/${shownPath(projectPath)}`;
    // The header is written here: the diff library would quote an odd name its own way.
    const patch = createTwoFilesPatch('old', 'new', before.kind === 'text' ? before.text : '', now.kind === 'text' ? now.text : '', undefined, undefined, { context: 3 }).replace(/^=+\n/, '');
    return patch.replace(/^--- old\t?\n\+\+\+ new\t?\n/, `--- ${oldName}\n+++ ${newName}\n`);
  }
  const describe = (side: Side): string => (side.kind === 'absent' ? 'absent' : side.kind === 'text' ? `text, ${sizeText(Buffer.byteLength(side.text))}` : side.text);
  return `${shownPath(projectPath)}: ${describe(before)} → ${describe(now)}\n`;
}

/** What a recorded state holds, to tell two records of one path apart (content, link target, kind). */
function stateKey(state: PathState): string {
  switch (state.type) {
    case 'file':
      return `file:${state.hash}`;
    case 'uncopied':
      return state.hash === undefined ? `uncopied:${state.size}` : `file:${state.hash}`;
    case 'symlink':
      return `symlink:${state.target}`;
    case 'absent':
      return 'absent';
    case 'other':
      return `other:${state.kind}`;
  }
}

/**
 * What each of `paths` held right after `meta`'s turn: the state the next timeline checkpoint that
 * touched it recorded before its own change (an undo's save counts: it saw the turn's result).
 * Paths no later checkpoint touched are absent from the map: their result is the tree now.
 */
async function statesAfterTurn(store: StoreView, meta: CheckpointMeta, entries: readonly { path: string; before: PathState }[]): Promise<Map<string, PathState>> {
  const wanted = new Set(entries.map((e) => e.path));
  const ownBefore = new Map(entries.map((e) => [e.path, stateKey(e.before)]));
  const after = new Map<string, PathState>();
  const later = (await store.list()).filter((m) => TIMELINE.has(m.kind) && m.id > meta.id && m.entryCount > 0).sort((a, b) => (a.id < b.id ? -1 : 1));
  for (const next of later) {
    if (wanted.size === 0) break;
    for (const entry of (await store.manifest(next.id as CheckpointId)).entries) {
      // A later picture whose window began before this one's change (an agent turn's whole-turn
      // picture, another session's) starts where this one did: it says nothing of the result.
      if (!wanted.has(entry.path) || stateKey(entry.before) === ownBefore.get(entry.path)) continue;
      wanted.delete(entry.path);
      after.set(entry.path, entry.before);
    }
  }
  return after;
}

/** Plan reasons that mean the path is already as the picture had it: no diff to the tree now. */
function unchangedSince(entry: PlanEntry): boolean {
  return entry.action === 'skip' && entry.reason === 'already-matches';
}

/**
 * `turnback diff ID [PATH…] [--to-now]`: what that picture's turn did — each path it changed,
 * from the picture to what the turn left (the next picture's record of it, or the tree now when
 * nothing later touched it) — or, with `--to-now`, everything that changed since the picture.
 */
export async function diffCommand(id: string, paths: string[], options: DiffOptions, io: Io): Promise<number> {
  const { context, store } = await openExisting(options, io);
  const asked = await resolveId(store, id);
  // An agent turn's boundary stands for the turn (its whole-turn picture holds what it changed);
  // --to-now compares from the boundary itself.
  const meta = options.toNow === true ? asked : await changesHolder(store, asked);
  const maxFileMib = context.config.resolved.maxFileMib;
  // Files, folders and globs: each stands for the changed paths it matches.
  const only = paths.map((p) => projectPathOf(context.projectRoot, p, context.invocation.cwd, 'diff'));
  const matches = only.length > 0 ? pathMatcher(only) : () => true;
  const observer = observerFor(context, store);
  const plan = await observer.plan(meta.id as CheckpointId, { created: 'keep', modePolicy: 'exact' });
  await observer.close();
  const diffs: { path: string; diff: string; changedSince?: boolean }[] = [];
  if (options.toNow === true) {
    for (const entry of plan.entries.filter((e) => matches(e.path) && !unchangedSince(e))) {
      diffs.push({ path: entry.path, diff: diffOne(entry.path, await recordedSide(store, entry.target, maxFileMib), await diskSide(context.projectRoot, entry.path)) });
    }
  } else {
    const entries = (await store.manifest(meta.id as CheckpointId)).entries.filter((e) => matches(e.path));
    const after = await statesAfterTurn(store, meta, entries);
    const planned = new Map(plan.entries.map((e) => [e.path, e]));
    for (const entry of entries) {
      const later = after.get(entry.path);
      const before = await recordedSide(store, entry.before, maxFileMib);
      const result = later !== undefined ? await recordedSide(store, later, maxFileMib) : await diskSide(context.projectRoot, entry.path);
      const text = diffOne(entry.path, before, result);
      if (text === '' || (sameContent(before, result) && modeLine(entry.path, before, result) === '')) continue;
      // Nothing later recorded this path, yet it is not what the turn left: the tree now is shown, and said.
      const reason = planned.get(entry.path)?.reason;
      const changedSince = later === undefined && (reason === 'changed-outside' || reason === 'no-post-record');
      diffs.push({ path: entry.path, diff: changedSince ? `${shownPath(entry.path)}: changed since, outside any picture: the tree now is shown\n${text}` : text, ...(changedSince ? { changedSince } : {}) });
    }
  }
  io.emit({ checkpoint: metaJson(meta), toNow: options.toNow === true, diffs });
  if (diffs.length === 0) io.out(options.toNow === true ? `no changes since ${displayLabel(meta)}` : `${displayLabel(meta)}: its turn changed nothing${only.length > 0 ? ' there' : ''}`);
  for (const d of diffs) io.raw(colourDiff(d.diff, io));
  return EXIT.ok;
}

function colourDiff(text: string, io: Io): string {
  if (io.style.dim('x') === 'x') return text;
  return text
    .split('\n')
    .map((line) => (line.startsWith('+') && !line.startsWith('+++') ? `\u001b[32m${line}\u001b[39m` : line.startsWith('-') && !line.startsWith('---') ? `\u001b[31m${line}\u001b[39m` : line.startsWith('@@') ? io.style.dim(line) : line))
    .join('\n');
}
