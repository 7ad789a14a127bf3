import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canMountSmallDisk, fillDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { cliRepo } from './harness.js';

// Issue #12: when the store cannot be written (read-only, full), `run` refuses to start the
// command (exit 5) unless --unprotected; the read-only commands still work on a read-only store.
// Real tmpfs mounts (root only; CI runs as root).

const unmounts: (() => void)[] = [];
afterEach(() => {
  for (const unmount of unmounts.splice(0)) unmount();
});

async function repoWithDisk() {
  const repo = await cliRepo({ 'a.txt': 'a\n' });
  const disk = mountSmallDisk(path.join(path.dirname(repo.proj), 'disk'), 2048);
  if (disk === undefined) throw new Error('cannot mount a tmpfs');
  unmounts.push(disk.unmount);
  const store = path.join(disk.dir, 'store');
  return { repo, disk, store, tb: (args: string[]) => repo.tb([args[0] as string, '--store', store, ...args.slice(1)]) };
}

describe.skipIf(!canMountSmallDisk)('a store that cannot be written (tmpfs; needs root)', () => {
  it('read-only: run refuses to start the command (exit 5) unless --unprotected; status, list, show, diff, verify and undo --dry-run still work', async () => {
    const { repo, disk, tb } = await repoWithDisk();
    expect(tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const id = (JSON.parse(tb(['list', '--json']).stdout) as { checkpoints: { id: string }[] }).checkpoints[0]?.id as string;
    execFileSync('mount', ['-o', 'remount,ro', disk.dir]);
    const refused = tb(['run', '--', 'sh', '-c', 'echo c > a.txt; touch ran']);
    expect(refused.code).toBe(5);
    expect(refused.stderr).toContain('turnback: cannot take a picture');
    expect(refused.stderr).toContain('--unprotected');
    expect(existsSync(path.join(repo.proj, 'ran'))).toBe(false);
    const anyway = tb(['run', '--unprotected', '--', 'sh', '-c', 'touch ran']);
    expect(anyway.code).toBe(0);
    expect(anyway.stderr).toContain('no checkpoint');
    expect(existsSync(path.join(repo.proj, 'ran'))).toBe(true);
    for (const args of [['status'], ['list'], ['show', id], ['diff', id], ['verify'], ['undo', '--dry-run']]) {
      const result = tb(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    }
  });

  it('full: run refuses to start the command (exit 5), and runs it with --unprotected', async () => {
    const { repo, disk, tb } = await repoWithDisk();
    expect(tb(['run', '--', 'true']).code).toBe(0);
    fillDisk(disk.dir);
    const refused = tb(['run', '--', 'sh', '-c', 'touch ran']);
    expect(refused.code).toBe(5);
    expect(existsSync(path.join(repo.proj, 'ran'))).toBe(false);
    expect(tb(['run', '--unprotected', '--', 'sh', '-c', 'touch ran']).code).toBe(0);
    expect(existsSync(path.join(repo.proj, 'ran'))).toBe(true);
  });
});
