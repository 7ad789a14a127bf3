import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { changedPathsBetween, diffPictures, ignoredGone, type DiffRecord, type PictureLike } from '../../src/capture/diff.js';
import { takePicture, type Picture } from '../../src/capture/picture.js';
import type { PathState } from '../../src/core/model.js';
import { backdate, FakeStore, makeTree, tempDir } from './helpers.js';

function file(hash: string, mode = 0o644): PathState {
  return { type: 'file', object: `${hash}-1`, hash, size: 1, mode };
}

function pic(entries: Record<string, PathState | DiffRecord>, unchecked: string[] = []): PictureLike {
  const records = new Map<string, DiffRecord>();
  for (const [p, value] of Object.entries(entries)) records.set(p, 'state' in value ? value : { state: value });
  return { records, unchecked: unchecked.map((path) => ({ path })) };
}

describe('diffPictures', () => {
  it('over the paths that may differ (`only`), gives what the full comparison gives, unchecked and vouched paths included', () => {
    const before = { ...pic({ 'a.txt': file('1'), 'b.txt': file('2'), 'c.txt': file('3'), 'deep/gone.txt': file('5'), 'deep/untracked.txt': file('6') }, ['deep']), vouched: new Set(['deep/gone.txt']) };
    const after = { ...pic({ 'a.txt': file('1'), 'b.txt': file('9'), 'd.txt': file('4') }, ['deep']), vouched: new Set(['deep/gone.txt']) };
    // The same record object where neither changed, as consecutive pictures leave it.
    (after.records as Map<string, DiffRecord>).set('a.txt', before.records.get('a.txt') as DiffRecord);
    const full = diffPictures(before, after);
    expect(full.map((c) => [c.path, c.kind])).toEqual([['b.txt', 'changed'], ['c.txt', 'deleted'], ['d.txt', 'created'], ['deep/gone.txt', 'deleted']]);
    expect(diffPictures(before, after, ['d.txt', 'deep/untracked.txt', 'b.txt', 'c.txt', 'deep/gone.txt', 'b.txt'])).toEqual(full);
  });

  it('consecutive pictures name what may differ: the diff over those paths is the full one, across several pictures', async () => {
    const root = await tempDir();
    try {
      const store = new FakeStore();
      const files: Record<string, string> = {};
      for (let i = 0; i < 40; i++) files[`f${i}.txt`] = `${i}\n`;
      await makeTree(root, { ...files, 'sub/x.txt': 'x\n' });
      for (const name of Object.keys(files)) await backdate(root, name);
      const coverage = resolveCoverage();
      const take = (from?: Picture): Promise<Picture> => takePicture({ store, projectRoot: root, coverage, ...(from !== undefined ? { cache: { records: from.records } } : {}) });
      const first = await take();
      await fs.writeFile(path.join(root, 'f3.txt'), 'changed\n');
      await fs.rm(path.join(root, 'f4.txt'));
      const second = await take(first);
      await fs.writeFile(path.join(root, 'sub', 'new.txt'), 'new\n');
      const third = await take(second);
      const only = changedPathsBetween(first.records, third.records);
      expect(only).toBeDefined();
      expect(only?.size).toBeLessThan(first.records.size);
      const full = diffPictures(first, third);
      expect(full.map((c) => [c.path, c.kind])).toEqual([['f3.txt', 'changed'], ['f4.txt', 'deleted'], ['sub/new.txt', 'created']]);
      expect(diffPictures(first, third, only)).toEqual(full);
      // A map that does not lead back to the earlier one says nothing.
      expect(changedPathsBetween(third.records, first.records)).toBeUndefined();
      expect(changedPathsBetween(first.records, first.records)?.size).toBe(0);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  it('reports created, deleted and changed paths, sorted', () => {
    const before = pic({ 'a.txt': file('1'), 'b.txt': file('2'), 'c.txt': file('3') });
    const after = pic({ 'a.txt': file('1'), 'b.txt': file('9'), 'd.txt': file('4') });
    expect(diffPictures(before, after)).toEqual([
      { path: 'b.txt', kind: 'changed', before: file('2'), after: file('9') },
      { path: 'c.txt', kind: 'deleted', before: file('3') },
      { path: 'd.txt', kind: 'created', after: file('4') },
    ]);
  });

  it('under an unchecked folder, a path the picture vouches for (a tracked file statted from the index) is deleted or created; others stay unknown', () => {
    const before = { ...pic({ 'deep/kept.txt': file('1'), 'deep/gone.txt': file('2'), 'deep/untracked.txt': file('3') }, ['deep']), vouched: new Set(['deep/kept.txt', 'deep/gone.txt']) };
    const after = { ...pic({ 'deep/kept.txt': file('1'), 'deep/new.txt': file('4') }, ['deep']), vouched: new Set(['deep/kept.txt', 'deep/gone.txt', 'deep/new.txt']) };
    expect(diffPictures(before, after).map((c) => [c.path, c.kind])).toEqual([['deep/gone.txt', 'deleted']]);
    const restored = { ...pic({ 'deep/new.txt': file('4') }, ['deep']), vouched: new Set(['deep/new.txt']) };
    expect(diffPictures(after, restored).map((c) => [c.path, c.kind])).toEqual([]);
    expect(diffPictures({ ...pic({}, ['deep']), vouched: new Set(['deep/new.txt']) }, restored).map((c) => [c.path, c.kind])).toEqual([['deep/new.txt', 'created']]);
  });

  it('a changed mode counts as changed', () => {
    expect(diffPictures(pic({ x: file('1', 0o644) }), pic({ x: file('1', 0o755) }))).toEqual([
      { path: 'x', kind: 'changed', before: file('1', 0o644), after: file('1', 0o755) },
    ]);
  });

  it('a type change and a retargeted symlink count as changed', () => {
    const before = pic({ a: file('1'), l: { type: 'symlink', target: 'x' } });
    const after = pic({ a: { type: 'symlink', target: 'a' }, l: { type: 'symlink', target: 'y' } });
    expect(diffPictures(before, after).map((c) => [c.path, c.kind])).toEqual([
      ['a', 'changed'],
      ['l', 'changed'],
    ]);
  });

  it('never reports deleted under a folder the later picture left unchecked', () => {
    const before = pic({ 'out/a': file('1'), 'out/deep/b': file('2'), 'outside': file('3'), 'src/c': file('4') });
    const after = pic({ 'src/c': file('4') }, ['out']);
    expect(diffPictures(before, after)).toEqual([{ path: 'outside', kind: 'deleted', before: file('3') }]);
  });

  it('an unchecked project ("." ) hides every deletion', () => {
    expect(diffPictures(pic({ a: file('1') }), pic({}, ['.']))).toEqual([]);
  });

  it('never reports created under a folder the earlier picture left unchecked', () => {
    expect(diffPictures(pic({}, ['gen']), pic({ 'gen/x': file('1'), y: file('2') }))).toEqual([{ path: 'y', kind: 'created', after: file('2') }]);
  });

  it('same stat means unchanged, even when the earlier picture had no copy', () => {
    const stat = { size: 1, mode: 0o644, mtimeMs: 100, ino: 7 };
    const before = pic({ a: { ...stat, state: { type: 'uncopied', reason: 'picture-budget', size: 1, mode: 0o644 } } });
    const after = pic({ a: { ...stat, state: file('1') } });
    expect(diffPictures(before, after)).toEqual([]);
  });

  it('unknown content with a moved stat is reported changed', () => {
    const uncopied: PathState = { type: 'uncopied', reason: 'credential', size: 3, mode: 0o600 };
    const before = pic({ '.env': { size: 3, mode: 0o600, mtimeMs: 1, ino: 1, state: uncopied } });
    const after = pic({ '.env': { size: 3, mode: 0o600, mtimeMs: 2, ino: 1, state: uncopied } });
    expect(diffPictures(before, after).map((c) => c.kind)).toEqual(['changed']);
  });

  it('the very same record object is unchanged without looking further', () => {
    const record = { size: 1, mode: 0o644, mtimeMs: 1, ino: 1, state: file('1') };
    const before = pic({ a: record });
    const after = pic({ a: record });
    expect(diffPictures(before, after)).toEqual([]);
  });

  it('same content after a touch is unchanged', () => {
    const before = pic({ a: { size: 1, mode: 0o644, mtimeMs: 1, ino: 1, state: file('1') } });
    const after = pic({ a: { size: 1, mode: 0o644, mtimeMs: 2, ino: 1, state: file('1') } });
    expect(diffPictures(before, after)).toEqual([]);
  });
});

describe('ignoredGone (issue #27: a deleted ignored file is named)', () => {
  it('names the entries the walk passed over that are gone, and none whose presence is unknown or pictured', () => {
    const before = { ...pic({ 'tracked.log': file('1'), 'kept.txt': file('2') }), ignoredPaths: ['debug.log', 'tracked.log', 'deep/x.log', 'build/', 'out/a.o', 'kept/', 'src/'] };
    const after = {
      // deep/ unchecked: unknown; out/ now ignored whole: still there; src/ now walked: its files are records.
      ...pic({ 'kept.txt': file('2'), 'src/a.ts': file('3') }, ['deep']),
      ignoredPaths: ['kept/', 'out/'],
    };
    expect(ignoredGone(before, after)).toEqual(['build/', 'debug.log']);
  });

  it('says nothing when either picture kept no names', () => {
    expect(ignoredGone({ ...pic({}), ignoredPaths: ['debug.log'] }, pic({}))).toEqual([]);
    expect(ignoredGone(pic({}), { ...pic({}), ignoredPaths: [] })).toEqual([]);
  });
});
