import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { openObserver, openStore } from '../../src/admin.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { canMountSmallDisk, mountSmallDisk } from '../helpers/small-disk.js';
import { listing, sandbox, writeTree } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';

// The store on a real small disk (a 2 MiB tmpfs; only root can mount one) filled to a seeded
// level, then write-tool calls of seeded sizes. Held: every call returns and its write lands
// (never a blocked agent); a pre-image that did not fit is a store-full gap, never a stump; once
// space is back the store verifies and every captured path restores byte for byte.
describe('fault campaign: a full disk under the store', () => {
  it('write tools on a store with a seeded amount of space left', async () => {
    const tally = new Tally('disk full under the store', 1301);
    if (tally.skipUnless(canMountSmallDisk, 'cannot mount a tmpfs here (needs root)')) return;
    let gapsSeen = 0;
    for (let t = 0; t < trials(40, 3); t++) {
      const { base, project } = await sandbox();
      const disk = mountSmallDisk(path.join(base, 'disk'), 2048);
      if (disk === undefined) throw new Error('cannot mount a tmpfs');
      try {
        const sizes = Array.from({ length: 12 }, () => tally.random.int(10, 600_000));
        await writeTree(project, Object.fromEntries(sizes.map((size, i) => [`f${i}.bin`, Buffer.alloc(size, 65 + (i % 26))])));
        const before = await listing(project);
        const storeDir = path.join(disk.dir, 'store');
        const store = await openStore(storeDir, { projectRoot: project });
        const observer = openObserver(store, { sessionId: `disk-${t}` });
        const turn = await observer.beginTurn({ label: 'on a full disk' });
        // Leave a seeded amount of space: none, a little, or more than some pre-images need.
        const free = (await fs.statfs(disk.dir)).bavail * (await fs.statfs(disk.dir)).bsize;
        const leave = tally.random.int(0, 3) === 0 ? 0 : tally.random.int(0, 1_200_000);
        const filler = path.join(disk.dir, 'filler');
        await fs.writeFile(filler, Buffer.alloc(Math.max(0, free - leave))).catch(() => undefined);
        const written = new Map<string, string>();
        for (let w = 0; w < 10; w++) {
          const file = `f${tally.random.int(0, sizes.length - 1)}.bin`;
          const text = `written ${w} `.repeat(tally.random.int(1, 5000));
          await tally.trial(`trial ${t} write ${w} of ${file} with ${leave} bytes left`, async () => {
            await writeFile({ projectRoot: project, observer }, file, text);
            if ((await fs.readFile(path.join(project, file), 'utf8')) !== text) throw new Error(`${file}: the agent's write did not land`);
            written.set(file, text);
          });
        }
        await tally.trial(`trial ${t}: space back, the store verifies and restores every captured path`, async () => {
          await fs.rm(filler, { force: true });
          const verified = await store.verify();
          if (!verified.ok) throw new Error(`verify: ${JSON.stringify(verified.problems.slice(0, 3))}`);
          const gaps = new Set(observer.gaps.filter((gap) => gap.reason === 'store-full').map((gap) => gap.path));
          gapsSeen += gaps.size;
          const report = await observer.restore(turn);
          if (report.failed.length > 0) throw new Error(`restore failed: ${JSON.stringify(report.failed.slice(0, 3))}`);
          const now = await listing(project);
          for (const file of written.keys()) {
            if (gaps.has(file)) {
              // Not captured: said so, left as the agent wrote it.
              if (!report.skipped.some((entry) => entry.path === file && entry.reason === 'no-copy:store-full')) throw new Error(`${file}: a store-full gap the restore does not name`);
            } else if (now[file] !== before[file]) {
              throw new Error(`${file}: captured, yet not restored byte for byte`);
            }
          }
        });
        await observer.close();
        await store.close();
      } finally {
        disk.unmount();
      }
    }
    tally.note = `${gapsSeen} store-full gaps reported`;
    tally.finish();
  });
});
