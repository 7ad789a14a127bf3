import { readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Names that are not valid UTF-8: on Linux a name is bytes, and Node decodes them lossily.
const FF_NAME = Buffer.from([0x66, 0xff, 0x2e, 0x74, 0x78, 0x74]); // f\xff.txt
const LONE_C3 = Buffer.from([0x6c, 0x6f, 0x6e, 0x65, 0xc3, 0x2e, 0x6d, 0x64]); // lone\xc3.md
const FOLDER = Buffer.from([0x64, 0x69, 0x72, 0xfe]); // dir\xfe

function join(...parts: (string | Buffer)[]): Buffer {
  const pieces: Buffer[] = [];
  parts.forEach((part, i) => {
    if (i > 0) pieces.push(Buffer.from('/'));
    pieces.push(Buffer.isBuffer(part) ? part : Buffer.from(part));
  });
  return Buffer.concat(pieces);
}

/** The names of a folder as the kernel has them, in bytes, hex for comparison. */
function bytesOf(dir: Buffer): string[] {
  return readdirSync(dir, { encoding: 'buffer' })
    .map((name) => name.toString('hex'))
    .sort();
}

describe('files whose names are not valid UTF-8', () => {
  it('are pictured by their raw bytes and an undo brings them back byte for byte', async () => {
    const repo = await cliRepo({ 'keep.txt': 'keep\n' });
    const root = Buffer.from(repo.proj);
    writeFileSync(join(root, FF_NAME), 'first original\n');
    writeFileSync(join(root, LONE_C3), 'second original\n');
    mkdirSync(join(root, FOLDER));
    writeFileSync(join(root, FOLDER, FF_NAME), 'inside the odd folder\n');
    const before = { top: bytesOf(root), inner: bytesOf(join(root, FOLDER)) };

    const run = repo.tb(['run', '--', 'sh', '-c', "rm -f f*.txt lone*.md && rm -rf dir?"]);
    expect(run.code, run.stderr).toBe(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain('not checked');
    expect(bytesOf(root)).not.toContain(FF_NAME.toString('hex'));

    const list = repo.tb(['list']);
    expect(list.code).toBe(0);
    const show = repo.tb(['show', repo.newestId()]);
    expect(show.code, show.stderr).toBe(0);
    // Shown escaped, one \xNN for each raw byte; never the replacement character.
    expect(show.stdout).toContain('f\\xff.txt');
    expect(show.stdout).toContain('lone\\xc3.md');
    expect(show.stdout).toContain('dir\\xfe/f\\xff.txt');
    expect(`${show.stdout}${list.stdout}`).not.toContain('\uFFFD');

    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, `${undo.stdout}${undo.stderr}`).toBe(0);
    expect(bytesOf(root)).toEqual(before.top);
    expect(bytesOf(join(root, FOLDER))).toEqual(before.inner);
    expect(readFileSync(join(root, FF_NAME), 'utf8')).toBe('first original\n');
    expect(readFileSync(join(root, LONE_C3), 'utf8')).toBe('second original\n');
    expect(readFileSync(join(root, FOLDER, FF_NAME), 'utf8')).toBe('inside the odd folder\n');

    const verify = repo.tb(['verify']);
    expect(verify.code, `${verify.stdout}${verify.stderr}`).toBe(0);
  });

  it('a tracked file with such a name, deleted by a command, comes back through undo', async () => {
    const repo = await cliRepo({ 'keep.txt': 'keep\n' });
    const root = Buffer.from(repo.proj);
    writeFileSync(join(root, FF_NAME), 'tracked original\n');
    repo.git('add', '-A');
    repo.git('commit', '-qm', 'odd name');
    const before = bytesOf(root);
    const run = repo.tb(['run', '--', 'sh', '-c', 'rm -f f*.txt']);
    expect(run.code, run.stderr).toBe(0);
    expect(`${run.stdout}${run.stderr}`).not.toContain('not checked');
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code, `${undo.stdout}${undo.stderr}`).toBe(0);
    expect(bytesOf(root)).toEqual(before);
    expect(readFileSync(join(root, FF_NAME), 'utf8')).toBe('tracked original\n');
    expect(repo.git('status', '--porcelain')).toBe('');
  });
});
