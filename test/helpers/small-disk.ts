import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * A small tmpfs mounted at `dir` (created), for tests of a full disk. Only root can mount one:
 * elsewhere this returns `undefined` and the caller skips with the reason (CI runs as root).
 */
export function mountSmallDisk(dir: string, sizeKib: number): { dir: string; unmount(): void } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  fs.mkdirSync(dir, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeKib}k,mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return {
    dir,
    unmount: () => {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
      } catch {
        // already gone
      }
    },
  };
}

/** Whether this process can mount a tmpfs (root with the capability), checked once. */
export const canMountSmallDisk: boolean = (() => {
  const probe = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'turnback-mount-probe-'));
  const disk = mountSmallDisk(path.join(probe, 'disk'), 64);
  disk?.unmount();
  fs.rmSync(probe, { recursive: true, force: true });
  return disk !== undefined;
})();

/** Fills the disk at `dir` with a filler file until a write fails; returns the filler's path. */
export function fillDisk(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  const chunk = Buffer.alloc(4096, 1);
  try {
    for (;;) fs.writeSync(fd, chunk);
  } catch {
    // ENOSPC: full
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}
