import { describe, expect, it } from 'vitest';
import { mountRefusal } from '../../src/fs/tree-watcher.js';
import { startWatchman } from '../../src/fs/watchman.js';
import { tempFolder } from '../helpers/temp.js';
import * as path from 'node:path';

// Where no watcher can vouch (issue #28): a project on a network or user-space file system, or
// with another file system mounted inside it; and a watchman that does not answer.

const MOUNTS = [
  '22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '40 22 0:50 / /srv/nfs rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2',
  '41 22 0:51 / /home/me/proj/mnt\\040dir rw,relatime - tmpfs tmpfs rw',
  '42 22 0:52 / /media/sshfs rw - fuse.sshfs me@host:/ rw',
].join('\n');

describe('mountRefusal', () => {
  it('refuses a project on a network or user-space file system', () => {
    expect(mountRefusal('/srv/nfs/team/proj', MOUNTS)).toMatch(/^the project is on a nfs4 file system \(\/srv\/nfs\)/);
    expect(mountRefusal('/media/sshfs/code', MOUNTS)).toMatch(/^the project is on a fuse file system/);
  });

  it('refuses a project with another file system mounted inside it (names unescaped)', () => {
    expect(mountRefusal('/home/me/proj', MOUNTS)).toBe('/home/me/proj/mnt dir is another file system mounted inside the project');
  });

  it('lets a project on a local file system with nothing mounted inside be watched', () => {
    expect(mountRefusal('/home/me/other', MOUNTS)).toBeUndefined();
    expect(mountRefusal('/srv/nfsx', MOUNTS)).toBeUndefined();
  });
});

describe('startWatchman', () => {
  it('is refused, never rejected, when no watchman answers at the socket', async () => {
    const dir = await tempFolder('turnback-nowatchman-');
    const refused = await startWatchman(dir, { sockname: path.join(dir, 'no-such.sock') });
    expect(refused).toMatchObject({ refused: true, reason: 'stopped' });
    expect('detail' in refused ? refused.detail : '').toMatch(/^watchman does not answer on /);
  });
});
