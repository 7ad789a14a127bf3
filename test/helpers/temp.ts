// Temp folders and declarative trees for every test layer: one place that makes, fills and removes
// them (the store, capture, restore, session and fs tests used to carry a copy each).
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, afterEach, beforeEach } from 'vitest';

/** Folders made during the running test (removed after it), and outside any test (after the file). */
const madeInTest: string[] = [];
const madeForFile: string[] = [];
let testRunning = false;

// Registered once per test file that imports this module (vitest loads modules per file), before
// the file's own hooks, so a folder made in the file's beforeEach counts as the test's.
beforeEach(() => {
  testRunning = true;
});
afterEach(async () => {
  testRunning = false;
  while (madeInTest.length > 0) await removeFolder(madeInTest.pop() as string);
});
afterAll(async () => {
  while (madeForFile.length > 0) await removeFolder(madeForFile.pop() as string);
});

/**
 * A fresh temp folder with its canonical (realpath'd) name, removed after the current test (or,
 * when made in `beforeAll`, after the file's tests) even if a test made it unreadable.
 */
export async function tempFolder(prefix = 'turnback-test-'): Promise<string> {
  const dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), prefix)));
  (testRunning ? madeInTest : madeForFile).push(dir);
  return dir;
}

/** Removes `dir` and everything under it, first making it writable again. Absent is fine. */
export async function removeFolder(dir: string): Promise<void> {
  await fs.chmod(dir, 0o700).catch(() => undefined);
  // A test's command server outlives its last command (its idle time) and may still write into
  // the test's store (the idle copy-in of git blobs) while the folder goes: a folder that filled
  // again during the removal (ENOTEMPTY) is taken again.
  await fs.rm(dir, { recursive: true, force: true, maxRetries: 5 });
}

/** A fresh temp folder for each test of the calling file; read `dir` inside tests only. */
export function tempFolderPerTest(prefix?: string): { readonly dir: string } {
  let dir: string | undefined;
  beforeEach(async () => {
    dir = await tempFolder(prefix);
  });
  return {
    get dir(): string {
      if (dir === undefined) throw new Error('tempFolderPerTest: no test is running');
      return dir;
    },
  };
}

/**
 * One entry of a declarative tree: file content (mode left to the umask), a file with a mode
 * (`0o644` unless given), a symlink, or an empty folder.
 */
export type TreeEntry = string | Buffer | { file: string | Buffer; mode?: number } | { link: string } | { dir: true };

/** Writes `spec` (project path with `/` → entry) under `root`, creating parent folders. */
export async function writeTree(root: string, spec: Record<string, TreeEntry>): Promise<void> {
  for (const [rel, entry] of Object.entries(spec)) {
    const abs = path.join(root, ...rel.split('/'));
    if (typeof entry === 'object' && !Buffer.isBuffer(entry) && 'dir' in entry) {
      await fs.mkdir(abs, { recursive: true });
      continue;
    }
    await fs.mkdir(path.dirname(abs), { recursive: true });
    if (typeof entry === 'string' || Buffer.isBuffer(entry)) {
      await fs.writeFile(abs, entry);
    } else if ('link' in entry) {
      await fs.symlink(entry.link, abs);
    } else {
      await fs.writeFile(abs, entry.file);
      await fs.chmod(abs, entry.mode ?? 0o644);
    }
  }
}
