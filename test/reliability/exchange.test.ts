import type * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { PathState } from '../../src/core/model.js';
import { nodeFileSystem, type FileSystem } from '../../src/fs/file-system.js';
import { applyRestore, type ApplyResult } from '../../src/restore/apply.js';
import { planRestore, type PlanEntry } from '../../src/restore/plan.js';
import { writeFile } from '../../src/tools/reference-tools.js';
import { canExchange, exchange, startExchanger } from '../helpers/exchange.js';
import { reachedPath } from '../helpers/reached.js';
import { withSeed } from '../helpers/seed.js';
import { inputsFor, makeRoot, MemoryObjects, removeRoot, snapshotTree, tempLeftovers, writeTree, type Seen } from '../restore/fixtures.js';

// Issue #11, items 4 and 5: a folder swapped for a link in one atomic step (renameat2
// RENAME_EXCHANGE) while a restore or a write tool works in it. Every write is made through the
// folder's held descriptor, so nothing is ever written through the link; a moved folder stops
// the pass, which rolls back and reports.
const describeExchange = canExchange ? describe : describe.skip;
if (!canExchange) console.warn('exchange tests skipped: this machine cannot swap two names atomically (needs Linux and python3)');

let root: string;
let outside: string;
let objects: MemoryObjects;
beforeEach(async () => {
  root = await fs.realpath(await makeRoot());
  outside = await fs.realpath(await makeRoot());
  objects = new MemoryObjects();
});
afterEach(async () => {
  await removeRoot(root);
  await removeRoot(outside);
});

async function planFiles(folder: string, count: number): Promise<PlanEntry[]> {
  const targets: Record<string, { target: PathState }> = {};
  for (let i = 0; i < count; i++) targets[`${folder}/f${i}`] = { target: await objects.file(`orig ${i}`) };
  return planRestore(await inputsFor(root, targets), { created: 'delete', modePolicy: 'exact' });
}

function apply(entries: PlanEntry[], fsImpl: FileSystem = nodeFileSystem): Promise<ApplyResult> {
  return applyRestore({ fs: fsImpl, projectRoot: root, readObject: objects.readObject }, entries);
}

/** A sync file system that calls `after` once a rename has landed on the real path `to`. */
function afterRenameTo(target: (to: string) => boolean, after: () => void): FileSystem {
  const base = nodeFileSystem.sync as NonNullable<FileSystem['sync']>;
  let fired = false;
  const sync = {
    ...base,
    renameSync: (from: nodeFs.PathLike, to: nodeFs.PathLike) => {
      base.renameSync(from, to);
      if (!fired && target(reachedPath(to))) {
        fired = true;
        after();
      }
    },
  } as NonNullable<FileSystem['sync']>;
  return { ...nodeFileSystem, sync };
}

const hex = (text: string) => Buffer.from(text).toString('hex');
const textOf = (seen: Seen | undefined) => (seen?.type === 'file' ? Buffer.from(seen.bytes, 'hex').toString() : undefined);
const files = (prefix: string, count: number, content: (i: number) => string) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}f${i}`, { file: content(i) }]));

describeExchange('a folder swapped for a link mid-restore (RENAME_EXCHANGE)', () => {
  it('with a link inside the root: nothing is written through it, and the rollback puts the folder back whole where the swap took it', async () => {
    await writeTree(root, files('d/', 8, (i) => `agent ${i}`));
    await fs.symlink(outside, path.join(root, 'l'));
    await writeTree(outside, files('', 8, (i) => `outside ${i}`));
    const outsideBefore = await snapshotTree(outside);
    const entries = await planFiles('d', 8);
    const result = await apply(entries, afterRenameTo((to) => to === path.join(root, 'd', 'f0'), () => exchange(path.join(root, 'd'), path.join(root, 'l'))));
    expect(await snapshotTree(outside)).toEqual(outsideBefore);
    expect(result.rolledBack).toBe(true);
    expect(result.restored).toEqual([]);
    expect(result.failed.find((f) => f.path === 'd/f1')).toMatchObject({ code: 'INVALID_PATH' });
    // The real folder is at `l` now: every file is back as it was, no temp file left, nothing pending.
    expect((await fs.lstat(path.join(root, 'd'))).isSymbolicLink()).toBe(true);
    const moved = await snapshotTree(path.join(root, 'l'));
    expect(moved).toEqual(Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`f${i}`, expect.objectContaining({ bytes: hex(`agent ${i}`) })])));
    expect(tempLeftovers(moved)).toEqual([]);
    expect(result.cleanupPending).toEqual([]);
  });

  it('with a link outside the root: the folder moved out is never written again, and what the rollback cannot reach there is reported', async () => {
    await writeTree(root, files('d/', 8, (i) => `agent ${i}`));
        await writeTree(path.join(outside, 'target'), files('', 8, (i) => `outside ${i}`));
    await fs.symlink(path.join(outside, 'target'), path.join(outside, 'link'));
    const targetBefore = await snapshotTree(path.join(outside, 'target'));
    const entries = await planFiles('d', 8);
    const result = await apply(entries, afterRenameTo((to) => to === path.join(root, 'd', 'f0'), () => exchange(path.join(root, 'd'), path.join(outside, 'link'))));
    expect(await snapshotTree(path.join(outside, 'target'))).toEqual(targetBefore);
    expect(result.rolledBack).toBe(true);
    expect(result.restored).toEqual([]);
    // Only the file published before the swap is restored in the folder now outside; the later ones were never written.
    for (let i = 1; i < 8; i++) expect(await fs.readFile(path.join(outside, 'link', `f${i}`), 'utf8')).toBe(`agent ${i}`);
    expect(await fs.readFile(path.join(outside, 'link', 'f0'), 'utf8')).toBe('orig 0');
    expect(result.cleanupPending.length).toBeGreaterThan(0);
  });

  it('after the last publish: the final check before the commit sees the swap, and nothing is reported restored', async () => {
    await writeTree(root, files('d/', 3, (i) => `agent ${i}`));
    await fs.symlink(outside, path.join(root, 'l'));
    const entries = await planFiles('d', 3);
    const result = await apply(entries, afterRenameTo((to) => to === path.join(root, 'd', 'f2'), () => exchange(path.join(root, 'd'), path.join(root, 'l'))));
    expect(result.rolledBack).toBe(true);
    expect(result.restored).toEqual([]);
    expect(result.failed.at(-1)).toMatchObject({ code: 'INVALID_PATH' });
    const moved = await snapshotTree(path.join(root, 'l'));
    expect(moved).toEqual(Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`f${i}`, expect.objectContaining({ bytes: hex(`agent ${i}`) })])));
    expect(await fs.readdir(outside)).toEqual([]);
  });

  it('raced by a process swapping the folder and a link to outside over and over: no byte outside changes, no file is lost, no report lies', async () => {
    await withSeed(1104, async (random) => {
      const rounds = 4;
      let swaps = 0;
      for (let round = 0; round < rounds; round++) {
        const count = random.int(100, 200);
        await fs.rm(path.join(root, 'd'), { recursive: true, force: true });
        await fs.rm(path.join(root, 'l'), { recursive: true, force: true });
        await writeTree(root, files('d/', count, (i) => `agent ${i}`));
        await fs.symlink(outside, path.join(root, 'l'));
        await writeTree(outside, files('', count, (i) => `outside ${i}`));
        const outsideBefore = await snapshotTree(outside);
        const entries = await planFiles('d', count);
        const exchanger = await startExchanger(path.join(root, 'd'), path.join(root, 'l'));
        const result = await apply(entries);
        swaps += await exchanger.stop();
        expect(await snapshotTree(outside)).toEqual(outsideBefore);
        // The swaps were even: d is the real folder again. Every file is there, orig or agent.
        const tree = await snapshotTree(path.join(root, 'd'));
        for (let i = 0; i < count; i++) {
          const seen = tree[`f${i}`];
          expect(textOf(seen)).toMatch(new RegExp(`^(orig|agent) ${i}$`));
        }
        // Restored means restored: each file named restored holds its checkpoint bytes.
        for (const entry of result.restored) expect(textOf(tree[path.basename(entry.path)])).toBe(`orig ${entry.path.slice('d/f'.length)}`);
        if (result.rolledBack) {
          expect(result.restored).toEqual([]);
          // A rollback that could not finish says where: every leftover is reported.
          for (const name of tempLeftovers(tree)) expect(result.cleanupPending).toContain(`d/${name}`);
        } else {
          expect(tempLeftovers(tree)).toEqual([]);
        }
      }
      expect(swaps).toBeGreaterThan(0);
    });
  });
});

describeExchange('a folder swapped for a link while the write tool writes (RENAME_EXCHANGE)', () => {
  it('raced over and over: no write lands outside the root; a write the swap disturbed fails typed', async () => {
    await writeTree(root, { 'd/keep': { file: 'keep' } });
    await fs.symlink(outside, path.join(root, 'l'));
    await writeTree(outside, files('', 50, (i) => `outside ${i}`));
    const outsideBefore = await snapshotTree(outside);
    const exchanger = await startExchanger(path.join(root, 'd'), path.join(root, 'l'));
    let failures = 0;
    for (let i = 0; i < 50; i++) {
      try {
        await writeFile({ projectRoot: root }, `d/f${i}`, `tool ${i}`);
      } catch (error) {
        expect(isCheckpointError(error)).toBe(true);
        failures += 1;
      }
    }
    const swaps = await exchanger.stop();
    expect(swaps).toBeGreaterThan(0);
    expect(await snapshotTree(outside)).toEqual(outsideBefore);
    // Every write that did not fail is in the project's folder.
    const tree = await snapshotTree(path.join(root, 'd'));
    expect(Object.keys(tree).filter((name) => name.startsWith('f')).length).toBeGreaterThanOrEqual(50 - failures);
  });
});
