import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, it } from 'vitest';
import { openObserver, openStore } from '../../src/admin.js';
import { CheckpointStore } from '../../src/store/store.js';
import { sandbox, writeTree } from '../session/helpers.js';
import { Tally, trials } from './campaign.js';

// Issue #27: one seeded byte of one stored copy (a pack record, header to checksum — for a copy
// in a block, the whole block, so every file in it — or a loose object) is damaged in place; then a new picture is taken in a new store instance, as the next
// command would, with every file on disk intact and its stat unchanged; then the file whose copy
// was damaged is changed, and the call undone. Held: the file comes back byte for byte, and the
// restore skips and fails nothing. Broke: the picture pointed at the damaged copy.

interface Target {
  /** Project path of the file whose copy this is. */
  file: string;
  /** The pack or the loose object file (absolute). */
  storeFile: string;
  /** The damage lands in [start, end) of `storeFile`: the whole record (or block), or the whole loose file. */
  start: number;
  end: number;
}

describe('fault campaign: a damaged copy, then a new picture, then undo', () => {
  it('a seeded byte of a seeded record is damaged; the undo after the next picture brings the file back whole', async () => {
    const tally = new Tally('damaged copy then new picture', 2707);
    const originals: Record<string, string> = {};
    for (let i = 0; i < 12; i++) originals[`src/f${i}.txt`] = `file ${i} `.repeat(1 + i * 60);
    // Over the 4 MiB a picture's block takes: loose objects.
    for (let i = 0; i < 2; i++) originals[`big/b${i}.txt`] = `large file ${i}, stored loose\n`.repeat(160_000 + i);
    let loose = 0;
    for (let t = 0; t < trials(200, 12); t++) {
      const pick = tally.random.next();
      const spot = tally.random.next();
      const bit = 1 << tally.random.int(0, 7);
      await tally.trial(`trial ${t}: record ${pick.toFixed(3)}, byte ${spot.toFixed(3)}, bit ${bit}`, async () => {
        // A fresh project and store each trial: the next picture must find every file's inode and
        // mtime as the first picture recorded them, so it reuses the records without reading.
        const { project, storeDir } = await sandbox();
        await writeTree(project, originals);
        const old = new Date(Date.now() - 3600_000);
        for (const file of Object.keys(originals)) await fs.utimes(path.join(project, file), old, old);
        const store = await openStore(storeDir, { projectRoot: project });
        const first = openObserver(store, { sessionId: 'first' });
        await first.callBegin('first');
        await first.callEnd('first');
        await first.close();
        await store.close();

        const objects = await CheckpointStore.open(storeDir, { projectRoot: project });
        const targets: Target[] = [];
        for (const info of await objects.listObjects()) {
          const bytes = (await objects.readObject(info.key)).toString();
          const file = Object.keys(originals).find((name) => originals[name] === bytes);
          if (file === undefined) continue;
          const start = info.offset ?? 0;
          targets.push({ file, storeFile: info.path, start, end: start + (info.recordLength ?? info.diskSize) });
        }
        await objects.close();
        targets.sort((a, b) => (a.file < b.file ? -1 : 1));
        if (targets.length !== Object.keys(originals).length) throw new Error(`${targets.length} of ${Object.keys(originals).length} files have a copy to damage`);
        const target = targets[Math.floor(pick * targets.length)] as Target;
        if (target.start === 0) loose += 1;
        const at = target.start + Math.floor(spot * (target.end - target.start));
        const handle = await fs.open(target.storeFile, 'r+');
        try {
          const byte = Buffer.alloc(1);
          await handle.read(byte, 0, 1, at);
          byte[0] = (byte[0] as number) ^ bit;
          await handle.write(byte, 0, 1, at);
        } finally {
          await handle.close();
        }

        const next = await openStore(storeDir, { projectRoot: project });
        const agent = openObserver(next, { sessionId: 'agent' });
        try {
          const begun = await agent.callBegin('call');
          await fs.writeFile(path.join(project, target.file), 'the agent rewrote this\n');
          await agent.callEnd('call');
          const report = await agent.restore(begun.checkpointId);
          const back = await fs.readFile(path.join(project, target.file), 'utf8');
          if (back !== originals[target.file]) throw new Error(`${target.file} did not come back (skipped: ${report.skipped.map((entry) => `${entry.path} ${entry.reason ?? ''}`).join(', ') || 'none'})`);
          if (report.failed.length > 0) throw new Error(`the restore failed ${report.failed.map((failure) => failure.path).join(', ')}`);
          const lost = report.skipped.filter((entry) => entry.reason === 'object-missing');
          if (lost.length > 0) throw new Error(`the restore skipped ${lost.map((entry) => entry.path).join(', ')}: its copy is missing or damaged`);
        } finally {
          await agent.close();
          await next.close();
        }
      });
    }
    tally.note = `${loose} in loose objects`;
    tally.finish();
  });
});
