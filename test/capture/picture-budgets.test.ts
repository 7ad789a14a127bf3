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
  it('with lowered walk and copy limits: the walk stops at its limit and says what it left, what it saw is copied whole, and the call goes on', async () => {
    const obs = await observer('walk-and-copy', { maxWalkEntries: 2_000, maxPictureFiles: 500 });
    const begin = await obs.callBegin('huge', { command: 'build' });
    expect(begin.partial).toBe(true);
    // 2,000 walk entries: the rest of out/ is named, never silently dropped. No repository here:
    // every file walked has no other copy, so the copy budget of 500 leaves none of them.
    expect(begin.summary).toMatch(/^checkpoint partial: [\d,]+ copied; not checked: [\d,]+ folders \(walk limit\) such as out\/d\d+\//);
    expect(begin.gaps.map((g) => g.reason)).toContain('walk-entries');
    expect(begin.gaps.map((g) => g.reason)).not.toContain('picture-budget');
    expect(begin.pastBudget).toMatch(/^[\d,]+ files git does not hold copied past the copy budget \(500 files\)/);

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
    // The walk ran out of time and names the folder it left; the copies of what it saw go on.
    expect(begin.summary).toMatch(/\(time limit\)/);
    expect(begin.gaps.some((g) => g.reason === 'time-limit')).toBe(true);
    const end = await obs.callEnd('huge');
    expect(end.partial).toBe(true);
    expect(end.changes).toEqual([]);
    await obs.close();
  });
});
