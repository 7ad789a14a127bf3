import { describe, expect, it } from 'vitest';
import type { PathState } from '../../src/core/model.js';
import type { DiskState } from '../../src/fs/disk-state.js';
import { planRestore, type PlanInput, type PlanOptions } from '../../src/restore/plan.js';

const A = 'a'.repeat(16);
const B = 'b'.repeat(16);
const C = 'c'.repeat(16);
const fileT = (hash: string, mode = 0o644): PathState => ({ type: 'file', object: hash, hash, size: 1, mode });
const fileD = (hash: string, mode = 0o644, nlink = 1): DiskState => ({ type: 'file', hash, size: 1, mode, nlink });
const exact: PlanOptions = { created: 'delete', modePolicy: 'exact' };
const widen: PlanOptions = { created: 'delete', modePolicy: 'never-widen' };

function one(input: Omit<PlanInput, 'path'>, options: PlanOptions = exact) {
  const entries = planRestore([{ path: 'p', ...input }], options);
  expect(entries).toHaveLength(1);
  return entries[0]!;
}

describe('planRestore case table', () => {
  it('incomplete attribution -> refuse', () => {
    const e = one({ target: fileT(A), lastAfter: `file:${B}`, disk: fileD(B), incomplete: true });
    expect(e).toMatchObject({ action: 'refuse', reason: 'incomplete-attribution' });
  });

  it('incomplete wins even when the disk already matches', () => {
    expect(one({ target: fileT(A), disk: fileD(A), incomplete: true }).action).toBe('refuse');
  });

  it('disk equals target -> skip already-matches', () => {
    expect(one({ target: fileT(A), lastAfter: `file:${B}`, disk: fileD(A) })).toMatchObject({ action: 'skip', reason: 'already-matches' });
  });

  it('disk equals target without any post record -> skip', () => {
    expect(one({ target: { type: 'absent' }, disk: { type: 'absent' } })).toMatchObject({ action: 'skip', reason: 'already-matches' });
  });

  it('symlink equal -> skip', () => {
    expect(one({ target: { type: 'symlink', target: 'x' }, disk: { type: 'symlink', target: 'x' } }).action).toBe('skip');
  });

  it('content equal, mode differs, exact -> restore mode-only', () => {
    const e = one({ target: fileT(A, 0o755), disk: fileD(A, 0o644) });
    expect(e).toMatchObject({ action: 'restore', reason: 'mode-only', mode: 0o755, expectedHash: `file:${A}` });
  });

  it('content equal, mode differs, never-widen -> skip', () => {
    expect(one({ target: fileT(A, 0o755), disk: fileD(A, 0o644) }, widen).action).toBe('skip');
  });

  it('content and permission bits equal under exact (setuid on both) -> skip', () => {
    expect(one({ target: fileT(A, 0o4755), disk: fileD(A, 0o4755) }).action).toBe('skip');
  });

  it('uncopied with a matching hash -> skip', () => {
    const target: PathState = { type: 'uncopied', reason: 'too-large', size: 1, mode: 0o644, hash: A };
    expect(one({ target, disk: fileD(A) }).action).toBe('skip');
  });

  it('no post record -> refuse no-post-record', () => {
    expect(one({ target: fileT(A), disk: fileD(B) })).toMatchObject({ action: 'refuse', reason: 'no-post-record', foundHash: `file:${B}` });
  });

  it('disk differs from last record -> refuse changed-outside with evidence', () => {
    const e = one({ target: fileT(A), lastAfter: `file:${B}`, disk: fileD(C) });
    expect(e).toMatchObject({ action: 'refuse', reason: 'changed-outside', expectedHash: `file:${B}`, foundHash: `file:${C}` });
  });

  it('file deleted outside the session -> refuse changed-outside', () => {
    const e = one({ target: fileT(A), lastAfter: `file:${B}`, disk: { type: 'absent' } });
    expect(e).toMatchObject({ action: 'refuse', reason: 'changed-outside', foundHash: 'absent' });
  });

  it('target file, disk file == last -> restore with guard fingerprint and mode', () => {
    const e = one({ target: fileT(A, 0o600), lastAfter: `file:${B}`, disk: fileD(B, 0o644) });
    expect(e).toMatchObject({ action: 'restore', expectedHash: `file:${B}`, mode: 0o600 });
    expect(e.reason).toBeUndefined();
  });

  it('target file, disk absent == last -> recreate', () => {
    const e = one({ target: fileT(A, 0o755), lastAfter: 'absent', disk: { type: 'absent' } });
    expect(e).toMatchObject({ action: 'recreate', expectedHash: 'absent', mode: 0o755 });
  });

  it('target file, disk is a symlink == last -> restore (link replaced)', () => {
    const e = one({ target: fileT(A), lastAfter: 'symlink:t', disk: { type: 'symlink', target: 't' } });
    expect(e).toMatchObject({ action: 'restore', expectedHash: 'symlink:t' });
  });

  it('never-widen mode is computed against the destination mode', () => {
    const e = one({ target: fileT(A, 0o777), lastAfter: `file:${B}`, disk: fileD(B, 0o644) }, widen);
    expect(e.mode).toBe(0o644);
    const recreate = one({ target: fileT(A, 0o777), lastAfter: 'absent', disk: { type: 'absent' } }, widen);
    expect(recreate.mode).toBe(0o644);
  });

  it('target symlink, disk file == last -> restore', () => {
    const e = one({ target: { type: 'symlink', target: 'x' }, lastAfter: `file:${B}`, disk: fileD(B) });
    expect(e).toMatchObject({ action: 'restore', expectedHash: `file:${B}` });
    expect(e.mode).toBeUndefined();
  });

  it('target symlink, disk absent == last -> recreate', () => {
    expect(one({ target: { type: 'symlink', target: 'x' }, lastAfter: 'absent', disk: { type: 'absent' } }).action).toBe('recreate');
  });

  it('target absent, created delete -> delete', () => {
    const e = one({ target: { type: 'absent' }, lastAfter: `file:${B}`, disk: fileD(B) });
    expect(e).toMatchObject({ action: 'delete', expectedHash: `file:${B}` });
  });

  it('target absent, created keep -> leave created-since', () => {
    const e = one({ target: { type: 'absent' }, lastAfter: `file:${B}`, disk: fileD(B) }, { created: 'keep', modePolicy: 'exact' });
    expect(e).toMatchObject({ action: 'leave', reason: 'created-since' });
  });

  it('target absent, disk symlink created since -> delete', () => {
    expect(one({ target: { type: 'absent' }, lastAfter: 'symlink:q', disk: { type: 'symlink', target: 'q' } }).action).toBe('delete');
  });

  it('target uncopied -> leave no-copy:<reason>', () => {
    const target: PathState = { type: 'uncopied', reason: 'credential', size: 3, mode: 0o600 };
    expect(one({ target, lastAfter: `file:${B}`, disk: fileD(B) })).toMatchObject({ action: 'leave', reason: 'no-copy:credential' });
  });

  it('target other -> leave not-a-file', () => {
    const e = one({ target: { type: 'other', kind: 'fifo' }, lastAfter: `file:${B}`, disk: fileD(B) });
    expect(e).toMatchObject({ action: 'leave', reason: 'not-a-file' });
  });

  it('disk is a folder == last -> refuse directory-in-the-way', () => {
    const e = one({ target: fileT(A), lastAfter: 'other:directory', disk: { type: 'other', kind: 'directory' } });
    expect(e).toMatchObject({ action: 'refuse', reason: 'directory-in-the-way', foundHash: 'other:directory' });
  });

  it('disk is a FIFO == last -> refuse special-file-in-the-way', () => {
    const e = one({ target: { type: 'absent' }, lastAfter: 'other:fifo', disk: { type: 'other', kind: 'fifo' } });
    expect(e).toMatchObject({ action: 'refuse', reason: 'special-file-in-the-way' });
  });

  it('sorts entries by path', () => {
    const entries = planRestore(
      ['b/c', 'a', 'b', 'a/z'].map((path) => ({ path, target: { type: 'absent' as const }, disk: { type: 'absent' as const } })),
      exact,
    );
    expect(entries.map((e) => e.path)).toEqual(['a', 'a/z', 'b', 'b/c']);
  });
});
