import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import type { FileSystem } from '../fs/file-system.js';
import { PRESENCE_PREFIX } from './presence.js';

/**
 * Total bytes of every file under the store root `root` (logical sizes), less the processes'
 * presence files: what prune's `maxStoreBytes` is measured against.
 * @throws CheckpointError `IO`.
 */
export async function storeSizeBytes(fs: FileSystem, root: string): Promise<number> {
  const walk = async (dir: string): Promise<number> => {
    let entries;
    try {
      entries = await fs.readdir(dir, { withFileTypes: true });
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return 0;
      throw asCheckpointError(error, 'cannot measure the store', dir);
    }
    let total = 0;
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) total += await walk(full);
      else if (entry.isFile() && !entry.name.startsWith(PRESENCE_PREFIX)) {
        try {
          total += (await fs.lstat(full)).size;
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot measure the store', full);
        }
      }
    }
    return total;
  };
  return walk(root);
}
