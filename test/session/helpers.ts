import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import type { CheckpointObserverOptions } from '../../src/session/options.js';
import { tempFolder } from '../helpers/temp.js';

export { writeTree } from '../helpers/temp.js';

/** A fresh temp folder (removed after the test) holding `project/` and a store path beside it. */
export async function sandbox(): Promise<{ base: string; project: string; storeDir: string }> {
  const base = await tempFolder('turnback-session-');
  const project = path.join(base, 'project');
  await fs.mkdir(project);
  return { base, project, storeDir: path.join(base, 'store') };
}

/** A full listing of a tree: type, mode, content (base64) or link target; `.git` excluded. */
export async function listing(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(dir: string, rel: string): Promise<void> {
    for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const abs = path.join(dir, entry.name);
      const r = rel === '' ? entry.name : `${rel}/${entry.name}`;
      const st = await fs.lstat(abs);
      if (st.isSymbolicLink()) out[r] = `link:${await fs.readlink(abs)}`;
      else if (st.isDirectory()) await walk(abs, r);
      else out[r] = `file:${(st.mode & 0o7777).toString(8)}:${(await fs.readFile(abs)).toString('base64')}`;
    }
  }
  await walk(root, '');
  return out;
}

/** Opens a store and an observer on `project`. */
export async function openObserver(
  project: string,
  storeDir: string,
  options: Partial<CheckpointObserverOptions> = {},
): Promise<CheckpointObserver> {
  const store = await CheckpointStore.open(storeDir, { projectRoot: project });
  return new CheckpointObserver({ store, sessionId: 'test', ...options });
}
