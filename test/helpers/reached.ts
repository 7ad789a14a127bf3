import { readlinkSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Where a path that names a file through a held folder's descriptor (`/proc/self/fd/N/name`, see
 * src/fs/anchors.ts) points now, asked of the kernel; any other path as it is. Fault hooks match
 * on the real place a call acts on.
 */
export function reachedPath(anyPath: unknown): string {
  const shown = String(anyPath);
  const match = /^\/proc\/self\/fd\/(\d+)(?:\/(.*))?$/.exec(shown);
  if (match === null) return shown;
  const folder = readlinkSync(`/proc/self/fd/${match[1]}`);
  return match[2] === undefined ? folder : path.join(folder, match[2]);
}
