import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { byteListing } from '../helpers/byte-listing.js';
import { openObserver, sandbox } from './helpers.js';

const b = (...parts: (string | number[])[]): Buffer => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

describe('names that are not valid UTF-8, through the observer', () => {
  it('a shell call that deletes, edits, renames and adds such files is restored byte for byte', async () => {
    const { project, storeDir } = await sandbox();
    const root = Buffer.from(project);
    fs.writeFileSync(b(project, '/f', [0xff], '.txt'), 'ff original\n');
    fs.writeFileSync(b(project, '/lone', [0xc3], '.md'), 'c3 original\n', { mode: 0o600 });
    fs.mkdirSync(b(project, '/dir', [0xfe]));
    fs.writeFileSync(b(project, '/dir', [0xfe], '/in', [0x80, 0x81]), 'inside\n');
    fs.symlinkSync(b('f', [0xff], '.txt'), b(project, '/link', [0xe9]));
    fs.writeFileSync(b(project, '/plain.txt'), 'plain\n');
    const before = byteListing(root);

    const observer = await openObserver(project, storeDir);
    const boundary = await observer.beginTurn();
    await observer.callBegin('c1', { command: 'mess' });
    // The shell globs reach names the test cannot type.
    execFileSync('sh', ['-c', 'rm -rf dir? && for f in f*.txt; do echo edited > "$f"; done && mv lone*.md renamed.md && chmod 644 renamed.md && rm link*'], { cwd: project });
    fs.writeFileSync(b(project, '/new', [0xf8]), 'created\n');
    const end = await observer.callEnd('c1', { sideEffect: 'filesystem' });
    expect(end.changes.map((c) => [c.path, c.kind]).sort()).toEqual(
      [
        ['dir\udcfe/in\udc80\udc81', 'deleted'],
        ['f\udcff.txt', 'changed'],
        ['link\udce9', 'deleted'],
        ['lone\udcc3.md', 'deleted'],
        ['new\udcf8', 'created'],
        ['renamed.md', 'created'],
      ].sort(),
    );
    const report = await observer.restore(boundary);
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    expect(byteListing(root)).toEqual(before);
    await observer.close();
  });
});
