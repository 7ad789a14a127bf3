import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as nodeFs from 'node:fs';
import { IgnoreStack, resolveCoverage, type CoverageOptions } from '../../src/capture/coverage.js';
import { takePicture, type Picture, type PictureCache, type PictureRecord, type TakePictureOptions } from '../../src/capture/picture.js';
import { loadPictureCache, prunePictureBases, readPictureBase, savePictureCache, writePictureBase } from '../../src/capture/picture-persist.js';
import { ScanMemo } from '../../src/capture/scan.js';
import { CheckpointError } from '../../src/core/errors.js';
import { backdate, FakeStore, makeTree, plainRecord, tempDir } from './helpers.js';

let root: string;
let store: FakeStore;
beforeEach(async () => {
  root = await tempDir();
  store = new FakeStore();
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function picture(
  options: CoverageOptions = {},
  extra: { cache?: PictureCache; deadline?: number; signal?: AbortSignal; readDir?: (abs: string) => nodeFs.Dirent[]; onProgress?: TakePictureOptions['onProgress'] } = {},
): Promise<Picture> {
  return takePicture({ store, projectRoot: root, coverage: resolveCoverage(options), ...extra });
}

async function manyFiles(count: number, folder = 'out'): Promise<void> {
  await fs.mkdir(path.join(root, folder), { recursive: true });
  await Promise.all(Array.from({ length: count }, (_, i) => fs.writeFile(path.join(root, folder, `f${i}.txt`), `file ${i}`)));
}

describe('takePicture', () => {
  it('copies every covered file and records symlinks by target', async () => {
    await makeTree(root, { 'a.txt': 'alpha', 'src/b.ts': 'beta', link: { link: 'a.txt' } });
    const p = await picture();
    expect(p.partial).toBe(false);
    expect(p.copied).toBe(2);
    expect(p.copiedBytes).toBe(9);
    expect(p.summary).toBe('checkpoint: 3 files, 2 copied');
    const a = p.records.get('a.txt');
    expect(a?.state).toMatchObject({ type: 'file', size: 5 });
    if (a?.state.type !== 'file') throw new Error('expected a file');
    expect(store.objects.get(a.state.object)?.toString()).toBe('alpha');
    expect(p.records.get('link')?.state).toEqual({ type: 'symlink', target: 'a.txt' });
  });

  it('reports the files the walk found, not the folders beside them, as its progress', async () => {
    await makeTree(root, { 'a/b/c/one.txt': '1', 'a/two.txt': '2' });
    const seen: { phase: string; walked: number; files: number }[] = [];
    await picture({}, { onProgress: (p) => seen.push(p) });
    expect(seen[0]).toMatchObject({ phase: 'scan', files: 2 });
    expect(seen[0]?.walked).toBeGreaterThan(2);
  });

  it('records credential files and too-large files without reading them', async () => {
    await makeTree(root, { '.env': 'SECRET=1', 'certs/tls.pem': 'pem', '.env.example': 'SECRET=', 'big.bin': Buffer.alloc(2000), 'small.txt': 's' });
    const p = await picture({ maxFileMib: 0.001 });
    expect(p.records.get('.env')?.state).toEqual({ type: 'uncopied', reason: 'credential', size: 8, mode: expect.any(Number) });
    expect(p.records.get('certs/tls.pem')?.state).toMatchObject({ type: 'uncopied', reason: 'credential' });
    expect(p.records.get('big.bin')?.state).toMatchObject({ type: 'uncopied', reason: 'too-large', size: 2000 });
    expect(p.records.get('.env.example')?.state.type).toBe('file');
    expect(store.putFileCalls.map((f) => path.basename(f)).sort()).toEqual(['.env.example', 'small.txt']);
    expect(p.partial).toBe(false);
  });

  it('never copies the hook secret\'s file (.claude/settings.local.json), even with copyCredentials', async () => {
    await makeTree(root, { '.claude/settings.local.json': '{"hooks":{"PreToolUse":[{"hooks":[{"type":"http","headers":{"X-Turnback-Secret":"00ff"}}]}]}}', '.claude/settings.json': '{}', '.env': 'SECRET=1' });
    const p = await picture({ copyCredentials: true });
    expect(p.records.get('.claude/settings.local.json')?.state).toMatchObject({ type: 'uncopied', reason: 'credential' });
    expect(p.records.get('.env')?.state.type).toBe('file');
    expect(store.putFileCalls.map((f) => path.relative(root, f)).sort()).toEqual(['.claude/settings.json', '.env']);
  });

  // Issue #27: outside git (as here) every file's bytes exist nowhere else, so no budget leaves one.
  it('maxPictureFiles: files git does not hold are copied past it, and the picture says how many', async () => {
    await manyFiles(12, 'out');
    await makeTree(root, { 'src/a.ts': 'a' });
    const first = await picture({ maxPictureFiles: 5 });
    expect(first.partial).toBe(false);
    expect(first.copied).toBe(13);
    expect(first.copiedPastBudget).toBe(8);
    expect(first.records.size).toBe(13);
    expect([...first.records.values()].every((r) => r.state.type === 'file')).toBe(true);
    expect(first.gaps).toEqual([]);
    expect(first.pastBudget).toBe('8 files git does not hold copied past the copy budget (5 files): they have no other copy');

    const second = await picture({ maxPictureFiles: 0 }, { cache: first });
    expect(second.copied).toBe(0);
    expect(second.copiedPastBudget).toBe(0);
    expect(second.pastBudget).toBeUndefined();
  });

  it('maxPictureMib: bytes past the budget are copied all the same when git does not hold them', async () => {
    await makeTree(root, { 'a.bin': Buffer.alloc(600), 'b.bin': Buffer.alloc(600) });
    const p = await picture({ maxPictureMib: 1000 / (1024 * 1024) });
    expect(p.copied).toBe(2);
    expect(p.copiedPastBudget).toBe(1);
    expect(p.partial).toBe(false);
    expect(p.pastBudget).toContain('MiB)');
  });

  it('maxPictureSeconds: a passed deadline yields a partial picture that never reads as complete', async () => {
    await makeTree(root, { 'a.txt': 'a' });
    const p = await picture({}, { deadline: Date.now() - 1 });
    expect(p.partial).toBe(true);
    expect(p.records.size).toBe(0);
    expect(p.unchecked).toEqual([{ path: '.', reason: 'time-limit' }]);
    expect(p.summary).toBe('checkpoint partial: 0 copied; not checked: the project (time limit) — 1 folder not walked: the files in it are not pictured');
  });

  it('maxWalkEntries and maxDepth make the picture partial and name the folders', async () => {
    await makeTree(root, { 'a/b/c.txt': 'c', 'top.txt': 't' });
    const p = await picture({ maxDepth: 1 });
    expect(p.partial).toBe(true);
    expect(p.summary).toBe('checkpoint partial: 1 copied; not checked: a/b/ (too deep)');
    await makeTree(root, { 'd1/x': 'x', 'd2/x': 'x', 'd3/x': 'x' });
    const q = await picture({ maxWalkEntries: 5 });
    expect(q.partial).toBe(true);
    expect(q.summary).toMatch(/; not checked: \d+ folders \(walk limit\) such as \S+\/ — \d+ folders not walked: the files in them are not pictured$/);
    expect(q.unchecked.every((u) => u.reason === 'walk-entries')).toBe(true);
  });

  it('a file that changes while read is recorded changed-during-capture', async () => {
    await makeTree(root, { 'a.txt': 'a', 'b.txt': 'b' });
    store.failures.set(path.join(root, 'a.txt'), new CheckpointError('CONFLICT', 'changed'));
    const eacces = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    store.failures.set(path.join(root, 'b.txt'), new CheckpointError('IO', 'cannot open', { cause: eacces }));
    const p = await picture();
    expect(p.records.get('a.txt')?.state).toMatchObject({ type: 'uncopied', reason: 'changed-during-capture' });
    expect(p.records.get('b.txt')?.state).toMatchObject({ type: 'uncopied', reason: 'unreadable' });
    expect(p.gaps.map((g) => g.path).sort()).toEqual(['a.txt', 'b.txt']);
    expect(p.copied).toBe(0);
  });

  it('rejects with the signal reason when aborted', async () => {
    await makeTree(root, { 'a.txt': 'a' });
    const controller = new AbortController();
    controller.abort(new Error('interrupted'));
    await expect(picture({}, { signal: controller.signal })).rejects.toThrow('interrupted');
  });

  it('reports progress', async () => {
    await makeTree(root, { 'a.txt': 'a' });
    const seen: string[] = [];
    await takePicture({ store, projectRoot: root, coverage: resolveCoverage(), onProgress: (p) => seen.push(p.phase) });
    expect(seen).toEqual(['scan', 'copy']);
  });
});

describe('stat cache', () => {
  it('a second picture of an unchanged tree reads no file; a changed one is re-read', async () => {
    await makeTree(root, { 'a.txt': 'a', 'b.txt': 'b', 'sub/c.txt': 'c' });
    for (const f of ['a.txt', 'b.txt', 'sub/c.txt']) await backdate(root, f);
    const first = await picture();
    expect(store.putFileCalls).toHaveLength(3);
    store.putFileCalls = [];
    const second = await picture({}, { cache: first });
    expect(store.putFileCalls).toEqual([]);
    expect(second.copied).toBe(0);
    expect(second.records.get('a.txt')?.state).toEqual(first.records.get('a.txt')?.state);

    await fs.writeFile(path.join(root, 'b.txt'), 'b2');
    await fs.chmod(path.join(root, 'sub/c.txt'), 0o600);
    const third = await picture({}, { cache: second });
    expect(store.putFileCalls.map((f) => path.relative(root, f)).sort()).toEqual(['b.txt', path.join('sub', 'c.txt')]);
    expect(third.records.get('sub/c.txt')?.state).toMatchObject({ type: 'file', mode: 0o600 });
  });

  it('persists through the store: a new process does not re-hash an unchanged tree', async () => {
    await makeTree(root, { 'a.txt': 'a', 'b.txt': 'bb', '.env': 'S=1', link: { link: 'a.txt' } });
    for (const f of ['a.txt', 'b.txt']) await backdate(root, f);
    const first = await picture();
    await savePictureCache(store, 'stat-cache', first);
    const saved = JSON.parse(store.state.get('stat-cache') ?? '{}') as { records: unknown[] };
    expect(saved.records).toHaveLength(2);

    // A fresh store object sharing only the persisted state stands in for a new process.
    const reopened = new FakeStore();
    reopened.state.set('stat-cache', store.state.get('stat-cache') as string);
    const cache = await loadPictureCache(reopened, 'stat-cache');
    expect(cache.records.size).toBe(2);
    const second = await takePicture({ store: reopened, projectRoot: root, coverage: resolveCoverage(), cache });
    expect(reopened.putFileCalls).toEqual([]);
    expect(second.records.get('b.txt')?.state).toEqual(first.records.get('b.txt')?.state);
  });

  it('a missing or malformed cache is empty, not an error', async () => {
    expect((await loadPictureCache(store, 'nothing')).records.size).toBe(0);
    await store.writeState('bad', { format: 'turnback-stat-cache', version: 1, records: [['x', 'not a number']] });
    expect((await loadPictureCache(store, 'bad')).records.size).toBe(0);
    await store.writeState('other', [1, 2, 3]);
    expect((await loadPictureCache(store, 'other')).records.size).toBe(0);
  });

  it('files a busy store left uncopied have no cached object, so the next picture copies them', async () => {
    await manyFiles(3);
    for (const name of ['f1.txt', 'f2.txt']) store.failures.set(path.join(root, 'out', name), new CheckpointError('STORE_BUSY', 'busy'));
    const first = await picture();
    store.failures.clear();
    await savePictureCache(store, 'c', first);
    const cache = await loadPictureCache(store, 'c');
    expect(cache.records.size).toBe(1);
    store.putFileCalls = [];
    const second = await picture({}, { cache });
    expect(store.putFileCalls).toHaveLength(2);
    expect(second.partial).toBe(false);
  });
});

describe('repeat pictures reuse what did not change', () => {
  const coverage = resolveCoverage();
  /** What an observer keeps between pictures. */
  function keeper(): { ignores: IgnoreStack; memo: ScanMemo; next: (p?: Picture) => PictureCache | undefined } {
    const ignores = new IgnoreStack();
    const memo = new ScanMemo();
    return {
      ignores,
      memo,
      next: (p) => (p === undefined ? undefined : { records: p.records, ignores, memo, ...(p.ignoreEpoch !== undefined ? { ignoreEpoch: p.ignoreEpoch } : {}) }),
    };
  }
  async function take(cache: PictureCache | undefined, keep: ReturnType<typeof keeper>, readDir?: (abs: string) => nodeFs.Dirent[]): Promise<Picture> {
    return takePicture({ store, projectRoot: root, coverage, cache: cache ?? { records: new Map(), ignores: keep.ignores, memo: keep.memo }, ...(readDir !== undefined ? { readDir } : {}) });
  }

  it('an unchanged tree gives back the cache map itself; a change replaces only its own record', async () => {
    await makeTree(root, { 'a.txt': 'a', 'sub/b.txt': 'b', 'sub/c.txt': 'c', link: { link: 'a.txt' } });
    const keep = keeper();
    const first = await take(undefined, keep);
    const second = await take(keep.next(first), keep);
    expect(second.records).toBe(first.records);
    expect(store.putFileCalls).toHaveLength(3);
    await fs.writeFile(path.join(root, 'sub/b.txt'), 'bb');
    const third = await take(keep.next(second), keep);
    expect(third.records).not.toBe(second.records);
    expect(third.records.get('a.txt')).toBe(first.records.get('a.txt'));
    expect(third.records.get('sub/c.txt')).toBe(first.records.get('sub/c.txt'));
    expect(third.records.get('link')).toBe(first.records.get('link'));
    expect(third.records.get('sub/b.txt')).not.toBe(first.records.get('sub/b.txt'));
    expect(store.putFileCalls.map((f) => path.relative(root, f)).sort()).toEqual(['a.txt', path.join('sub', 'b.txt'), path.join('sub', 'b.txt'), path.join('sub', 'c.txt')]);
  });

  it('finds earlier records when a folder lists in another order', async () => {
    await makeTree(root, { 'x/1.txt': '1', 'x/2.txt': '2', 'x/3.txt': '3' });
    const keep = keeper();
    const first = await take(undefined, keep);
    const reversed = (abs: string): nodeFs.Dirent[] => nodeFs.readdirSync(abs, { withFileTypes: true }).reverse();
    const second = await take(keep.next(first), keep, reversed);
    expect(second.records).toBe(first.records);
    await fs.rm(path.join(root, 'x/2.txt'));
    const third = await take(keep.next(second), keep);
    expect([...third.records.keys()].sort()).toEqual(['x/1.txt', 'x/3.txt']);
    expect(third.records.get('x/3.txt')).toBe(first.records.get('x/3.txt'));
  });

  it('a .gitignore edited between pictures applies to files recorded earlier', async () => {
    await makeTree(root, { 'keep.ts': 'k', 'sub/run.log': 'l', 'sub/x.ts': 'x' });
    const keep = keeper();
    const first = await take(undefined, keep);
    expect([...first.records.keys()].sort()).toEqual(['keep.ts', 'sub/run.log', 'sub/x.ts']);
    await fs.writeFile(path.join(root, '.gitignore'), '*.log\n');
    const second = await take(keep.next(first), keep);
    expect([...second.records.keys()].sort()).toEqual(['.gitignore', 'keep.ts', 'sub/x.ts']);
    await fs.writeFile(path.join(root, 'sub/.gitignore'), '!run.log\nx.ts\n');
    const third = await take(keep.next(second), keep);
    expect([...third.records.keys()].sort()).toEqual(['.gitignore', 'keep.ts', 'sub/.gitignore', 'sub/run.log']);
  });

  it('a file a busy store left uncopied is copied by the next picture even with an unchanged stat', async () => {
    await manyFiles(3);
    const keep = keeper();
    for (const name of ['f1.txt', 'f2.txt']) store.failures.set(path.join(root, 'out', name), new CheckpointError('STORE_BUSY', 'busy'));
    const first = await takePicture({ store, projectRoot: root, coverage, cache: { records: new Map(), ignores: keep.ignores, memo: keep.memo } });
    store.failures.clear();
    expect(first.gaps.map((g) => g.reason)).toEqual(['store-busy', 'store-busy']);
    store.putFileCalls = [];
    const second = await take(keep.next(first), keep);
    expect(store.putFileCalls).toHaveLength(2);
    expect(second.partial).toBe(false);
    expect([...second.records.values()].every((r) => r.state.type === 'file')).toBe(true);
  });
});

describe('picture bases and deltas', () => {
  function fileRecord(i: number): PictureRecord {
    return { path: `d${i % 7}/f${i}.ts`, type: 'file', size: i, mode: 0o644, mtimeMs: 1_700_000_000_000.125 + i, ino: 1000 + i, state: { type: 'file', object: `o${i}`, hash: `h${i}`, size: i, mode: i % 2 === 0 ? 0o644 : 0o755, ino: 1000 + i } };
  }

  it('a base is written in chunks and read back whole; a missing chunk reads as no base', async () => {
    const records = new Map<string, PictureRecord>();
    for (let i = 0; i < 20_000; i++) records.set(fileRecord(i).path, fileRecord(i));
    records.set('link', { path: 'link', type: 'symlink', size: 3, mode: 0o777, mtimeMs: 1, ino: 1, target: 'x', state: { type: 'symlink', target: 'x' } });
    const base = await writePictureBase(store, records);
    expect(base.ref.chunks).toBe(10); // 2,048 records a chunk
    expect(base.ref.count).toBe(20_000);
    const read = await readPictureBase(new FakeStoreWith(store), base.ref);
    expect(read?.records.size).toBe(20_000);
    expect(plainRecord(read?.records.get('d3/f10.ts'))).toEqual(fileRecord(10));
    expect(read?.records.has('link')).toBe(false);
    store.state.delete(`pic-${base.ref.generation}-1`);
    expect(await readPictureBase(store, base.ref)).toBeUndefined();
  });

  it('a base whose chunks are written several at once: a failed chunk write fails the base, and nothing rejects unhandled meanwhile', async () => {
    const records = new Map<string, PictureRecord>();
    for (let i = 0; i < 12_000; i++) records.set(fileRecord(i).path, fileRecord(i));
    const unhandled: unknown[] = [];
    const note = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', note);
    try {
      // The second chunk fails at once; the first is written only a turn of the event loop after
      // the third is begun, so the failure waits unawaited meanwhile.
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const failing = new (class extends FakeStore {
        override async writeState(name: string, value: unknown): Promise<void> {
          if (name.endsWith('-1')) throw new CheckpointError('IO', 'disk full');
          if (name.endsWith('-2')) setImmediate(release);
          if (name.endsWith('-0')) await gate;
          return super.writeState(name, value);
        }
      })();
      await expect(writePictureBase(failing, records)).rejects.toThrow('disk full');
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      // Written whole, chunk by chunk in order, it reads back the same.
      const base = await writePictureBase(store, records);
      expect(base.ref.chunks).toBe(6);
      expect(plainRecord((await readPictureBase(new FakeStoreWith(store), base.ref))?.records.get('d3/f10.ts'))).toEqual(fileRecord(10));
    } finally {
      process.off('unhandledRejection', note);
    }
  });

  it('the stat cache saves only what differs from its base, and loads back to the same records', async () => {
    await makeTree(root, { 'a.txt': 'a', 'b.txt': 'b', 'c.txt': 'c', '.env': 'S=1' });
    const first = await picture();
    const base = await writePictureBase(store, first.records);
    await fs.writeFile(path.join(root, 'b.txt'), 'changed');
    await fs.rm(path.join(root, 'c.txt'));
    const second = await picture({}, { cache: first });
    await savePictureCache(store, 'stat-cache', second, base);
    const doc = JSON.parse(store.state.get('stat-cache') ?? '{}') as { records: PictureRecord[]; removed: string[]; base: { generation: string } };
    expect(doc.base.generation).toBe(base.ref.generation);
    expect(doc.records.map((r) => r.path)).toEqual(['b.txt']);
    expect(doc.removed).toEqual(['c.txt']);
    const loaded = await loadPictureCache(store, 'stat-cache');
    expect([...loaded.records.keys()].sort()).toEqual(['a.txt', 'b.txt']);
    expect(loaded.records.get('b.txt')?.state).toEqual(second.records.get('b.txt')?.state);
    // A base that is gone leaves the inline records: slower, never wrong.
    for (const name of [...store.state.keys()]) if (name.startsWith('pic-')) store.state.delete(name);
    expect([...(await loadPictureCache(store, 'stat-cache')).records.keys()]).toEqual(['b.txt']);
  });

  it('prunes bases nothing names once they are past the grace period', async () => {
    const records = new Map([[fileRecord(1).path, fileRecord(1)]]);
    const kept = await writePictureBase(store, records);
    const dropped = await writePictureBase(store, records);
    await prunePictureBases(store, new Set([kept.ref.generation]), 60_000);
    expect(await readPictureBase(store, dropped.ref)).toBeDefined();
    await prunePictureBases(store, new Set([kept.ref.generation]), 0);
    expect(await readPictureBase(store, dropped.ref)).toBeUndefined();
    expect(await readPictureBase(store, kept.ref)).toBeDefined();
  });
});

/** A second store object sharing only the persisted state: stands in for a new process. */
class FakeStoreWith extends FakeStore {
  constructor(from: FakeStore) {
    super();
    for (const [k, v] of from.state) this.state.set(k, v);
  }
}
