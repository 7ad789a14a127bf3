import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fingerprint, PathState } from '../../src/core/model.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { applyRestore } from '../../src/restore/apply.js';
import { planRestore } from '../../src/restore/plan.js';
import { faultFs, type FaultOp } from '../helpers/fault-fs.js';
import { inputsFor, makeRoot, MemoryObjects, removeRoot, snapshotTree, tempLeftovers, writeTree, type Node } from './fixtures.js';

/** Folders d, g, g/h only ever hold files, so every combination of states is reachable. */
const PATHS = ['a', 'b', 'c', 'd/e', 'd/f', 'g/h/i'] as const;

type State =
  | { type: 'absent' }
  | { type: 'file'; bytes: Uint8Array; mode: number }
  | { type: 'symlink'; target: string };

const stateArb: fc.Arbitrary<State> = fc.oneof(
  fc.constant({ type: 'absent' as const }),
  fc.record({
    type: fc.constant('file' as const),
    bytes: fc.uint8Array({ maxLength: 48 }),
    mode: fc.constantFrom(0o644, 0o600, 0o755, 0o640, 0o700, 0o444, 0o664),
  }),
  fc.record({ type: fc.constant('symlink' as const), target: fc.constantFrom('a', '../x', 'nowhere', 'd/e', '/abs/elsewhere') }),
);

const pathArb = fc.record({
  disk: stateArb,
  target: stateArb,
  /** The path was edited outside the session: the guard must refuse it and leave it alone. */
  changedOutside: fc.boolean(),
  /** The disk file has a second hard link outside the project. */
  hardLinked: fc.boolean(),
});

const scenarioArb = fc.record({
  paths: fc.tuple(...PATHS.map(() => pathArb)),
  fault: fc.option(
    fc.record({
      op: fc.constantFrom<FaultOp>('rename', 'open', 'link', 'symlink', 'mkdir', 'lstat', 'copyFile', 'handle.write', 'handle.sync'),
      nth: fc.integer({ min: 1, max: 6 }),
    }),
    { nil: undefined },
  ),
});

let base: string;
beforeAll(async () => {
  base = await makeRoot();
});
afterAll(async () => {
  await removeRoot(base);
});

let run = 0;
let rolledBackRuns = 0;
let restoringRuns = 0;

describe('plan + apply round trip (property)', () => {
  it('leaves every non-refused path equal to its target, or rolls back to the exact original tree', async () => {
    await fc.assert(
      fc.asyncProperty(scenarioArb, async ({ paths, fault }) => {
        run++;
        const root = path.join(base, `r${run}`);
        const twins = path.join(base, `t${run}`);
        await fs.mkdir(root);
        await fs.mkdir(twins);
        const objects = new MemoryObjects();
        const tree: Record<string, Node> = {};
        PATHS.forEach((rel, i) => {
          const disk = paths[i]!.disk;
          if (disk.type === 'file') tree[rel] = { file: Buffer.from(disk.bytes), mode: disk.mode };
          if (disk.type === 'symlink') tree[rel] = { link: disk.target };
        });
        await writeTree(root, tree);
        const twinOf = (rel: string) => path.join(twins, rel.replaceAll('/', '_'));
        for (const [i, rel] of PATHS.entries()) {
          if (paths[i]!.hardLinked && paths[i]!.disk.type === 'file') await fs.link(path.join(root, rel), twinOf(rel));
        }

        const targets: Record<string, { target: PathState; lastAfter?: Fingerprint }> = {};
        for (const [i, rel] of PATHS.entries()) {
          const spec = paths[i]!;
          const stored: PathState =
            spec.target.type === 'file' ? await objects.file(Buffer.from(spec.target.bytes), spec.target.mode) : spec.target;
          // A hard link that existed at the checkpoint: the target records the inode it had.
          const target: PathState =
            stored.type === 'file' && spec.hardLinked && spec.disk.type === 'file' ? { ...stored, ino: (await fs.lstat(path.join(root, rel))).ino } : stored;
          targets[rel] = spec.changedOutside ? { target, lastAfter: 'file:ffffffffffffffff' } : { target };
        }
        const entries = planRestore(await inputsFor(root, targets), { created: 'delete', modePolicy: 'exact' });
        const before = await snapshotTree(root);
        const ff = faultFs(nodeFileSystem, fault === undefined ? {} : { failOn: fault });
        const result = await applyRestore({ fs: ff.fs, projectRoot: root, readObject: objects.readObject }, entries);
        const after = await snapshotTree(root);

        expect(tempLeftovers(after)).toEqual([]);
        expect(result.cleanupPending).toEqual([]);
        if (result.failed.length > 0) {
          rolledBackRuns++;
          expect(ff.fired).toBe(true);
          expect(result.restored).toEqual([]);
          expect(after).toEqual(before);
        } else {
          if (result.restored.length > 0) restoringRuns++;
          const refused = new Set(result.refused.map((e) => e.path));
          for (const [i, rel] of PATHS.entries()) {
            const spec = paths[i]!;
            if (refused.has(rel)) {
              expect(spec.changedOutside && JSON.stringify(spec.disk) !== JSON.stringify(spec.target)).toBe(true);
              expect(after[rel]).toEqual(before[rel]);
              continue;
            }
            const want = spec.target;
            if (want.type === 'absent') expect(after[rel]).toBeUndefined();
            if (want.type === 'symlink') expect(after[rel]).toEqual({ type: 'symlink', target: want.target });
            if (want.type === 'file') {
              expect(after[rel]).toEqual({ type: 'file', bytes: Buffer.from(want.bytes).toString('hex'), mode: want.mode });
              const twin = twinOf(rel);
              const restoredInPlace = spec.hardLinked && spec.disk.type === 'file';
              // Hard links survive: the twin sees the restored bytes.
              if (restoredInPlace) expect((await fs.readFile(twin)).toString('hex')).toBe(Buffer.from(want.bytes).toString('hex'));
            }
          }
        }
        await removeRoot(root);
        await removeRoot(twins);
      }),
      { numRuns: 150 },
    );
    // Not vacuous: both outcomes were exercised.
    expect(rolledBackRuns).toBeGreaterThan(5);
    expect(restoringRuns).toBeGreaterThan(20);
  });
});
