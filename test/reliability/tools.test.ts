import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { editFile, writeFile } from '../../src/tools/reference-tools.js';
import { canMountSmallDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

describe('the reference tools refuse what is not a regular file, and never block on one', () => {
  it('writeFile on a FIFO is a typed refusal at once (no reader, no hang), and nothing is captured or written', async () => {
    const { project, storeDir } = await sandbox();
    execFileSync('mkfifo', [path.join(project, 'pipe')]);
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    const error = await writeFile({ projectRoot: project, observer }, 'pipe', 'data').catch((e: unknown) => e);
    expect(isCheckpointError(error, 'INVALID_PATH')).toBe(true);
    expect((error as Error).message).toMatch(/a FIFO/);
    expect((await fs.lstat(path.join(project, 'pipe'))).isFIFO()).toBe(true);
    expect((await observer.plan(turn)).entries).toEqual([]);
    await observer.close();
  });

  it('editFile on a device node is a typed refusal without reading it', async () => {
    const { project } = await sandbox();
    // A character device like /dev/zero (an endless source): reading it whole would never end well.
    execFileSync('mknod', [path.join(project, 'zero'), 'c', '1', '5']);
    const before = process.memoryUsage().rss;
    const error = await editFile({ projectRoot: project }, 'zero', 'a', 'b').catch((e: unknown) => e);
    expect(isCheckpointError(error, 'INVALID_PATH')).toBe(true);
    expect((error as Error).message).toMatch(/a device/);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
  });

  it.skipIf(!canMountSmallDisk)('a write that fails in the tool itself (a read-only disk; needs root) is a CheckpointError with the cause, not a raw errno', async () => {
    const { base } = await sandbox();
    const disk = mountSmallDisk(path.join(base, 'disk'), 256);
    if (disk === undefined) throw new Error('cannot mount a tmpfs here');
    try {
      await writeTree(disk.dir, { 'file.txt': 'x' });
      execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
      const error = await writeFile({ projectRoot: disk.dir }, 'file.txt', 'y').catch((e: unknown) => e);
      expect(isCheckpointError(error, 'IO')).toBe(true);
      expect((error as { cause?: { code?: string } }).cause?.code).toBe('EROFS');
    } finally {
      disk.unmount();
    }
  });
});
