import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempDir } from './helpers.js';

// A real 250,000-file tree (250 folders of 1,000 empty files, made with synchronous calls: about
// 10 s here, plus the removal). Each picture must stop at its budget in time, say what it left,
// and leave the call usable.
const FOLDERS = 250;
const PER_FOLDER = 1000;
let base: string;
let project: string;

beforeAll(async () => {
  base = await tempDir('turnback-huge-');
  project = path.join(base, 'project');
  for (let d = 0; d < FOLDERS; d++) {
    const dir = path.join(project, 'out', `d${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < PER_FOLDER; f++) fs.closeSync(fs.openSync(path.join(dir, `f${f}.js`), 'w'));
  }
  fs.writeFileSync(path.join(project, 'main.ts'), 'export {};\n');
}, 300_000);

afterAll(() => {
  // Removing 250,000 files takes as long as making them; a detached rm does it after the suite.
  spawn('rm', ['-rf', '--', base], { detached: true, stdio: 'ignore' }).unref();
});

async function observer(storeName: string, coverage: ConstructorParameters<typeof CheckpointObserver>[0]['coverage']): Promise<CheckpointObserver> {
  const store = await CheckpointStore.open(path.join(base, storeName), { projectRoot: project });
  return new CheckpointObserver({ store, sessionId: storeName, ...(coverage !== undefined ? { coverage } : {}) });
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const start = performance.now();
  const value = await fn();
  return { value, seconds: (performance.now() - start) / 1000 };
}

describe('a 250,000-file tree', () => {
  it('with the default limits: the picture stops at its budgets within max_picture_seconds, says what it left, and the call goes on', async () => {
    const obs = await observer('defaults', undefined);
    const begin = await timed(() => obs.callBegin('huge', { command: 'build' }));
    // max_picture_seconds is 10 by default; the margin covers writing the baseline afterwards.
    expect(begin.seconds).toBeLessThan(10 + 5);
    expect(begin.value.partial).toBe(true);
    // 100,000 walk entries and 10,000 copies: the rest of out/ is named, never silently dropped.
    expect(begin.value.summary).toMatch(/^checkpoint partial: [\d,]+ new files in out\/, 10,000 copied; not checked: [\d,]+ folders \(walk limit\) such as out\/d\d+\//);
    expect(begin.value.gaps.map((g) => g.reason)).toEqual(expect.arrayContaining(['walk-entries', 'picture-budget']));

    fs.writeFileSync(path.join(project, 'main.ts'), 'export const changed = 1;\n');
    const end = await timed(() => obs.callEnd('huge'));
    expect(end.seconds).toBeLessThan(10 + 5);
    expect(end.value.partial).toBe(true);
    // Files the first picture left uncopied are not "changed" because a later picture copied them,
    // and nothing under the unchecked folders is called created or deleted.
    expect(end.value.changes.map((c) => [c.path, c.kind])).toEqual([['main.ts', 'changed']]);
    await obs.close();
  }, 120_000);

  it('with a 1 s time budget and no walk limit: the picture returns in about a second, partial, naming what it left', async () => {
    const obs = await observer('one-second', { maxPictureSeconds: 1, maxWalkEntries: 10_000_000, maxPictureFiles: 10_000_000 });
    const begin = await timed(() => obs.callBegin('huge'));
    expect(begin.seconds).toBeLessThan(1 + 4);
    expect(begin.value.partial).toBe(true);
    // Either the walk or the copies ran out of time; both say so and name the folder left.
    expect(begin.value.summary).toMatch(/new files in out\/|\(time limit\)/);
    expect(begin.value.gaps.some((g) => g.reason === 'time-limit' || (g.reason === 'picture-budget' && g.detail.includes('1 s')))).toBe(true);
    const end = await timed(() => obs.callEnd('huge'));
    expect(end.seconds).toBeLessThan(1 + 4);
    expect(end.value.changes).toEqual([]);
    await obs.close();
  }, 120_000);
});
