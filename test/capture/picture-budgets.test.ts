import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempDir } from './helpers.js';

// A tree larger than the lowered budgets (20 folders of 250 empty files): each picture stops at
// its budget, says what it left, and leaves the call usable. The behaviour is what is checked,
// never the time: the limits are lowered so that a small tree meets them on any machine.
const FOLDERS = 20;
const PER_FOLDER = 250;
let base: string;
let project: string;

beforeAll(async () => {
  base = await tempDir('turnback-budgets-');
  project = path.join(base, 'project');
  for (let d = 0; d < FOLDERS; d++) {
    const dir = path.join(project, 'out', `d${d}`);
    fs.mkdirSync(dir, { recursive: true });
    for (let f = 0; f < PER_FOLDER; f++) fs.closeSync(fs.openSync(path.join(dir, `f${f}.js`), 'w'));
  }
  fs.writeFileSync(path.join(project, 'main.ts'), 'export {};\n');
});

async function observer(storeName: string, coverage: ConstructorParameters<typeof CheckpointObserver>[0]['coverage']): Promise<CheckpointObserver> {
  const store = await CheckpointStore.open(path.join(base, storeName), { projectRoot: project });
  return new CheckpointObserver({ store, sessionId: storeName, ...(coverage !== undefined ? { coverage } : {}) });
}

describe('a tree past the picture budgets', () => {
  it('with lowered walk and copy limits: the picture stops at its budgets, says what it left, and the call goes on', async () => {
    const obs = await observer('walk-and-copy', { maxWalkEntries: 2_000, maxPictureFiles: 500 });
    const begin = await obs.callBegin('huge', { command: 'build' });
    expect(begin.partial).toBe(true);
    // 2,000 walk entries and 500 copies: the rest of out/ is named, never silently dropped.
    expect(begin.summary).toMatch(/^checkpoint partial: [\d,]+ new files in out\/, 500 copied; not checked: [\d,]+ folders \(walk limit\) such as out\/d\d+\//);
    expect(begin.gaps.map((g) => g.reason)).toEqual(expect.arrayContaining(['walk-entries', 'picture-budget']));

    fs.writeFileSync(path.join(project, 'main.ts'), 'export const changed = 1;\n');
    const end = await obs.callEnd('huge');
    expect(end.partial).toBe(true);
    // Files the first picture left uncopied are not "changed" because a later picture copied them,
    // and nothing under the unchecked folders is called created or deleted.
    expect(end.changes.map((c) => [c.path, c.kind])).toEqual([['main.ts', 'changed']]);
    fs.writeFileSync(path.join(project, 'main.ts'), 'export {};\n');
    await obs.close();
  });

  it('with a time budget already spent and no walk limit: the picture is partial and names what it left', async () => {
    const obs = await observer('no-time', { maxPictureSeconds: 0.000_001, maxWalkEntries: 10_000_000, maxPictureFiles: 10_000_000 });
    const begin = await obs.callBegin('huge');
    expect(begin.partial).toBe(true);
    // Either the walk or the copies ran out of time; both say so and name the folder left.
    expect(begin.summary).toMatch(/new files in out\/|\(time limit\)/);
    expect(begin.gaps.some((g) => g.reason === 'time-limit' || (g.reason === 'picture-budget' && g.detail.includes(' s)')))).toBe(true);
    const end = await obs.callEnd('huge');
    expect(end.partial).toBe(true);
    expect(end.changes).toEqual([]);
    await obs.close();
  });
});
