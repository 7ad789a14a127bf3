import * as fs from 'node:fs';
import { describe, it } from 'vitest';
import { byteListing } from '../helpers/byte-listing.js';
import type { Seeded } from '../helpers/seed.js';
import { sandbox } from '../session/helpers.js';
import { observerPerEvent, Tally, trials } from './campaign.js';

// Names that are not valid UTF-8 (issues #30, #31): random byte names, some inside folders with
// such names, changed, deleted, renamed and added between a call's two pictures, each event in an
// observer of its own (so the names pass through the store's documents), then the turn undone.
// Held: the tree comes back byte for byte, names included, and nothing is refused or left.

/** A random name of 1–12 bytes: mostly printable, with bytes 0x80–0xFF mixed in (never NUL or `/`). */
function randomName(random: Seeded): Buffer {
  const bytes: number[] = [];
  const length = random.int(1, 12);
  for (let i = 0; i < length; i++) {
    const byte = random.int(0, 2) === 0 ? random.int(0x80, 0xff) : random.int(0x61, 0x7a);
    bytes.push(byte);
  }
  if (bytes.every((b) => b < 0x80)) bytes[random.int(0, bytes.length - 1)] = random.int(0x80, 0xff);
  return Buffer.from(bytes);
}

const under = (...parts: Buffer[]): Buffer => Buffer.concat(parts.flatMap((p, i) => (i === 0 ? [p] : [Buffer.from('/'), p])));

describe('fault campaign: names that are not UTF-8', () => {
  it('random byte names pictured and restored through the store: byte for byte', async () => {
    const tally = new Tally('names not valid UTF-8', 3032);
    for (let t = 0; t < trials(60, 5); t++) {
      await tally.trial(`trial ${t}`, async () => {
        const { project, storeDir } = await sandbox();
        const root = Buffer.from(project);
        const folder = randomName(tally.random);
        fs.mkdirSync(under(root, folder));
        const files: Buffer[] = [];
        const seen = new Set<string>();
        for (let i = 0; i < tally.random.int(2, 6); i++) {
          const inFolder = tally.random.int(0, 1) === 1;
          const name = randomName(tally.random);
          const file = inFolder ? under(root, folder, name) : under(root, name);
          if (seen.has(file.toString('hex'))) continue;
          seen.add(file.toString('hex'));
          fs.writeFileSync(file, `original ${i} ${tally.random.int(0, 1e6)}\n`);
          files.push(file);
        }
        const start = byteListing(root);
        const event = observerPerEvent(storeDir, project);
        const boundary = await event((o) => o.beginTurn({ label: 'raw names' }));
        await event((o) => o.callBegin('call', { detached: true }));
        for (const file of files) {
          const choice = tally.random.int(0, 3);
          if (choice === 1) fs.writeFileSync(file, `changed ${tally.random.int(0, 1e6)}\n`);
          else if (choice === 2) fs.rmSync(file);
          else if (choice === 3) fs.renameSync(file, under(root, randomName(tally.random)));
        }
        if (tally.random.int(0, 1) === 1) fs.writeFileSync(under(root, randomName(tally.random)), 'created\n');
        if (tally.random.int(0, 2) === 0) fs.rmSync(under(root, folder), { recursive: true });
        await event((o) => o.callEnd('call'));
        const report = await event((o) => o.restore(boundary));
        if (report.refused.length > 0 || report.failed.length > 0) throw new Error(`refused ${JSON.stringify(report.refused)} failed ${JSON.stringify(report.failed)}`);
        const now = byteListing(root);
        const sorted = (tree: Record<string, string>): string => JSON.stringify(Object.entries(tree).sort());
        if (sorted(now) !== sorted(start)) throw new Error(`tree differs: ${JSON.stringify({ start, now })}`);
      });
    }
    tally.finish();
  });
});
