import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFile } from '../../src/tools/reference-tools.js';
import { canMountSmallDisk, fillDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

// The store on a real full disk: a small tmpfs (root only; CI runs as root).
const unmounts: (() => void)[] = [];
afterEach(() => {
  for (const unmount of unmounts.splice(0)) unmount();
});

async function fullStore(): Promise<{ project: string; storeDir: string; filler: string }> {
  const { base, project } = await sandbox();
  const disk = mountSmallDisk(path.join(base, 'disk'), 2048);
  if (disk === undefined) throw new Error('cannot mount a tmpfs here');
  unmounts.push(disk.unmount);
  return { project, storeDir: path.join(disk.dir, 'store'), filler: path.join(disk.dir, 'filler') };
}

describe.skipIf(!canMountSmallDisk)('a store on a full disk (tmpfs; needs root)', () => {
  it('a pre-image that does not fit is a store-full gap, never a stump filed as a whole object, and the write goes ahead', async () => {
    const { project, storeDir } = await fullStore();
    const big = randomBytes(4 * 1024 * 1024);
    await writeTree(project, { 'small.txt': 'small before' });
    await fs.writeFile(path.join(project, 'big.bin'), big);
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    const ctx = { projectRoot: project, observer };
    await writeFile(ctx, 'big.bin', 'replaced');
    expect(await fs.readFile(path.join(project, 'big.bin'), 'utf8')).toBe('replaced');
    expect(observer.gaps).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'big.bin', reason: 'store-full' })]));
    const plan = await observer.plan(turn);
    expect(plan.entries).toEqual([expect.objectContaining({ path: 'big.bin', action: 'leave', reason: 'no-copy:store-full' })]);
    expect((await observer.store.verify()).problems).toEqual([]);
    await observer.close();
  });

  it('with the disk full, every write tool call goes ahead and reports a gap; once space is freed the next write is captured again', async () => {
    const { project, storeDir, filler } = await fullStore();
    await writeTree(project, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`f${i}.txt`, `before ${i} ${'x'.repeat(2000)}`])));
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    expect(fillDisk(path.dirname(filler))).toBe(filler);
    const ctx = { projectRoot: project, observer };
    for (let i = 0; i < 20; i++) await writeFile(ctx, `f${i}.txt`, `after ${i}`);
    for (let i = 0; i < 20; i++) expect(await fs.readFile(path.join(project, `f${i}.txt`), 'utf8')).toBe(`after ${i}`);
    expect(observer.gaps.filter((gap) => gap.reason === 'store-full').length).toBeGreaterThan(0);
    await fs.rm(filler);
    await writeFile(ctx, 'f25.txt', 'after 25');
    const plan = await observer.plan(turn);
    expect(plan.entries.find((entry) => entry.path === 'f25.txt')).toMatchObject({ action: 'restore' });
    const report = await observer.restore(turn, { paths: ['f25.txt'] });
    expect(report.restored.map((entry) => entry.path)).toEqual(['f25.txt']);
    expect(await fs.readFile(path.join(project, 'f25.txt'), 'utf8')).toBe(`before 25 ${'x'.repeat(2000)}`);
    await observer.close();
  });
});
