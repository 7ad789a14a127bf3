import * as nodeFs from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.js';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { baseObjectKey } from '../../src/store/object-codec.js';
import { CheckpointStore } from '../../src/store/store.js';
import { storedObject } from '../store/helpers.js';
import { cliRepo, type CliRepo } from './harness.js';

// Issue #27, through the built command: a damaged stored copy is never reused by a later picture
// (the file comes back byte for byte), and an undo that could not bring a file back exits non-zero
// and says so on its last line.

const SMALL = 'the dirty, uncommitted bytes of notes.txt\n'.repeat(8);
/** Over the 4 MiB a picture's block takes: a loose object. */
const LARGE = Array.from({ length: 100_000 }, (_, i) => `row ${i}: large uncommitted file, stored loose\n`).join('');

/** The store folder of `repo` (the default store under XDG_DATA_HOME). */
function storeDir(repo: CliRepo): string {
  const data = path.join(repo.home, 'data', 'turnback');
  const stores = nodeFs.readdirSync(data);
  expect(stores).toHaveLength(1);
  return path.join(data, stores[0] as string);
}

function filesUnder(dir: string): string[] {
  if (!nodeFs.existsSync(dir)) return [];
  return nodeFs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Flips one byte of the stored bytes of `text`'s object, in place: of its pack record, or of the
 * block that holds it (a picture's copies are written as blocks: every file in it is damaged).
 */
async function damagePacked(repo: CliRepo, text: string): Promise<void> {
  await loadHasher();
  const bytes = Buffer.from(text);
  const store = await CheckpointStore.open(storeDir(repo), { projectRoot: repo.proj });
  try {
    const where = await storedObject(store, baseObjectKey(contentHash(bytes), bytes.length));
    expect(where.file.endsWith('.pack')).toBe(true);
    const at = where.storedOffset + Math.min(10, where.stored.length >> 1);
    const fd = nodeFs.openSync(where.file, 'r+');
    nodeFs.writeSync(fd, Buffer.from([(where.stored[at - where.storedOffset] as number) ^ 0x01]), 0, 1, at);
    nodeFs.closeSync(fd);
  } finally {
    await store.close();
  }
}

/** Flips one byte in the middle of the only loose object, in place. */
async function damageLoose(repo: CliRepo): Promise<void> {
  const loose = filesUnder(path.join(storeDir(repo), 'objects', 'v1'));
  expect(loose).toHaveLength(1);
  const file = loose[0] as string;
  const size = nodeFs.statSync(file).size;
  const fd = nodeFs.openSync(file, 'r+');
  const byte = Buffer.alloc(1);
  nodeFs.readSync(fd, byte, 0, 1, Math.floor(size / 2));
  nodeFs.writeSync(fd, Buffer.from([(byte[0] as number) ^ 0x01]), 0, 1, Math.floor(size / 2));
  nodeFs.closeSync(fd);
}

function lastLine(text: string): string {
  return text.trimEnd().split('\n').at(-1) ?? '';
}

describe('a damaged stored copy, then a new picture, then undo', () => {
  for (const [kind, file, text, damage] of [
    ['a block in a pack', 'notes.txt', SMALL, (repo: CliRepo) => damagePacked(repo, SMALL)],
    ['a loose object', 'big.txt', LARGE, damageLoose],
  ] as const) {
    it(`brings the file back byte for byte (${kind} damaged)`, async () => {
      const repo = await cliRepo({ 'notes.txt': 'committed\n', 'big.txt': 'committed\n' });
      await writeFile(path.join(repo.proj, file), text);
      expect(repo.tb(['run', '--', 'true']).code).toBe(0);
      await damage(repo);
      // The next picture sees the intact file with its stat unchanged: it must not point at the damaged copy.
      expect(repo.tb(['run', '--', 'sh', '-c', `echo agent > ${file}`]).code).toBe(0);
      const undo = repo.tb(['undo', '--yes']);
      expect(undo.stdout).not.toContain('skipped');
      expect(undo.code).toBe(EXIT.ok);
      expect(await readFile(path.join(repo.proj, file), 'utf8')).toBe(text);
    });
  }
});

describe('an undo that skipped files', () => {
  it('exits with EXIT.skipped and its last line says how many and why', async () => {
    const repo = await cliRepo({ 'notes.txt': 'committed\n', 'other.txt': 'other\n' });
    await writeFile(path.join(repo.proj, 'notes.txt'), SMALL);
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    // other.txt changes before the next run: its pre-image is copied by that run, in a block of its own.
    await writeFile(path.join(repo.proj, 'other.txt'), 'other, changed\n');
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo agent > notes.txt; echo agent > other.txt']).code).toBe(0);
    // The copy the undo needs is damaged after its picture: nothing can bring notes.txt back.
    await damagePacked(repo, SMALL);
    const undo = repo.tb(['undo', '--yes']);
    expect(undo.code).toBe(EXIT.skipped);
    expect(undo.stdout).toMatch(/skipped\s+notes\.txt\s+its stored copy is missing or damaged/);
    expect(lastLine(undo.stdout)).toBe('not brought back: 1 file (1 its stored copy is missing or damaged (turnback verify))');
    // What could come back did.
    expect(await readFile(path.join(repo.proj, 'other.txt'), 'utf8')).toBe('other, changed\n');
    expect(await readFile(path.join(repo.proj, 'notes.txt'), 'utf8')).toBe('agent\n');
  });
});
