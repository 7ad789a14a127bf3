import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { observerForConfig, openCheckpoints } from '../../src/session/open.js';
import { CheckpointStore } from '../../src/store/store.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { canMountSmallDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { sandbox, writeTree } from '../session/helpers.js';

const unmounts: (() => void)[] = [];
afterEach(() => {
  for (const unmount of unmounts.splice(0)) unmount();
});

const modeOf = async (p: string): Promise<number> => (await fs.stat(p)).mode & 0o7777;
const config = (dir: string): string => `[capabilities.checkpoint]\nenabled = true\ndir = ${JSON.stringify(dir)}\n`;

describe('opening a store never changes a folder it did not create', () => {
  it('refuses a shared folder (1777) as the store root: its mode stays, nothing is created in it', async () => {
    const { base, project } = await sandbox();
    const shared = path.join(base, 'shared');
    await fs.mkdir(shared);
    await fs.chmod(shared, 0o1777);
    await fs.writeFile(path.join(shared, 'someone-elses.txt'), 'x');
    await expect(CheckpointStore.open(shared, { projectRoot: project })).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    expect(await modeOf(shared)).toBe(0o1777);
    expect(await fs.readdir(shared)).toEqual(['someone-elses.txt']);
  });

  it('refuses a store inside the project (dir = "." or a subfolder) with a clear error, and leaves the project root as it was', async () => {
    const { project } = await sandbox();
    await fs.chmod(project, 0o755);
    await writeTree(project, { 'a.txt': 'a' });
    for (const dir of [project, path.join(project, '.turnback')]) {
      const error = await CheckpointStore.open(dir, { projectRoot: project }).catch((e: unknown) => e);
      expect(isCheckpointError(error, 'STORE_UNAVAILABLE')).toBe(true);
      expect((error as Error).message).toMatch(/must not live inside the project/);
    }
    expect(await modeOf(project)).toBe(0o755);
    expect((await fs.readdir(project)).sort()).toEqual(['a.txt']);
    const warnings: string[] = [];
    const previous = process.cwd();
    process.chdir(project);
    try {
      expect(await observerForConfig(config('.'), { projectRoot: project, onWarning: (w) => warnings.push(w) })).toBeUndefined();
    } finally {
      process.chdir(previous);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/must not live inside the project/);
    expect(await modeOf(project)).toBe(0o755);
  });

  it('refuses an existing folder that is neither empty nor a store, and uses an empty one without changing its mode', async () => {
    const { base, project } = await sandbox();
    const documents = path.join(base, 'documents');
    await writeTree(documents, { 'letter.txt': 'dear' });
    await expect(CheckpointStore.open(documents, { projectRoot: project })).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    expect(await fs.readdir(documents)).toEqual(['letter.txt']);
    const empty = path.join(base, 'empty');
    await fs.mkdir(empty);
    await fs.chmod(empty, 0o750);
    const store = await CheckpointStore.open(empty, { projectRoot: project });
    await store.close();
    expect(await modeOf(empty)).toBe(0o750);
    // Opened again: it is a store now.
    await (await CheckpointStore.open(empty, { projectRoot: project })).close();
  });

  it('two openers creating one new store at once both succeed (a half-made store is not taken for a foreign folder)', async () => {
    const { base, project } = await sandbox();
    const storeDir = path.join(base, 'new-store');
    const stores = await Promise.all(Array.from({ length: 4 }, () => CheckpointStore.open(storeDir, { projectRoot: project })));
    for (const store of stores) await store.close();
    expect(await modeOf(storeDir)).toBe(0o700);
  });

  it('refuses a store whose subfolder is a symlink', async () => {
    const { base, project } = await sandbox();
    const storeDir = path.join(base, 'store');
    await (await CheckpointStore.open(storeDir, { projectRoot: project })).close();
    const elsewhere = path.join(base, 'elsewhere');
    await fs.mkdir(elsewhere);
    await fs.rm(path.join(storeDir, 'state'), { recursive: true });
    await fs.symlink(elsewhere, path.join(storeDir, 'state'));
    const error = await CheckpointStore.open(storeDir, { projectRoot: project }).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'STORE_UNAVAILABLE')).toBe(true);
    expect((error as Error).message).toMatch(/state is a symlink/);
    expect(await fs.readdir(elsewhere)).toEqual([]);
  });
});

describe.skipIf(!canMountSmallDisk)('a read-only store (a tmpfs remounted read-only; needs root)', () => {
  it('observerForConfig warns once and returns undefined; openCheckpoints answers unavailable; writes go ahead', async () => {
    const { base, project } = await sandbox();
    const disk = mountSmallDisk(path.join(base, 'disk'), 1024);
    if (disk === undefined) throw new Error('cannot mount a tmpfs here');
    unmounts.push(disk.unmount);
    const storeDir = path.join(disk.dir, 'store');
    await (await CheckpointStore.open(storeDir, { projectRoot: project })).close();
    execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
    await writeTree(project, { 'a.txt': 'before' });
    const warnings: string[] = [];
    expect(await observerForConfig(config(storeDir), { projectRoot: project, onWarning: (w) => warnings.push(w) })).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/cannot be written \(EROFS\)/);
    const checkpoints = await openCheckpoints(config(storeDir), { projectRoot: project });
    expect(await checkpoints.beginTurn()).toMatchObject({ available: false, reason: 'store-unavailable' });
    await writeFile({ projectRoot: project, observer: checkpoints }, 'a.txt', 'after');
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('after');
  });
});
