import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { listing, sandbox } from './helpers.js';

const PATHS = ['a.txt', 'b.bin', 'd/c.txt', 'd/e.txt', 'x/y/z.txt'] as const;
const MODES = [0o600, 0o644, 0o640, 0o755, 0o700, 0o444] as const;

type Initial = { kind: 'file'; bytes: Uint8Array; mode: number } | { kind: 'link'; target: string } | { kind: 'none' };
type Op =
  | { op: 'write'; path: string; bytes: Uint8Array }
  | { op: 'delete'; path: string }
  | { op: 'move'; from: string; to: string }
  | { op: 'chmod'; path: string; mode: number }
  | { op: 'symlink'; path: string; target: string };

const pathArb = fc.constantFrom(...PATHS);
const bytesArb = fc.uint8Array({ maxLength: 3000 });
const initialArb: fc.Arbitrary<Initial> = fc.oneof(
  fc.record({ kind: fc.constant('file' as const), bytes: bytesArb, mode: fc.constantFrom(...MODES) }),
  fc.record({ kind: fc.constant('link' as const), target: fc.constantFrom('a.txt', '../outside', 'nowhere') }),
  fc.constant({ kind: 'none' as const }),
);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant('write' as const), path: pathArb, bytes: bytesArb }),
  fc.record({ op: fc.constant('delete' as const), path: pathArb }),
  fc.record({ op: fc.constant('move' as const), from: pathArb, to: pathArb }),
  fc.record({ op: fc.constant('chmod' as const), path: pathArb, mode: fc.constantFrom(...MODES) }),
  fc.record({ op: fc.constant('symlink' as const), path: pathArb, target: fc.constantFrom('b.bin', '/etc/hostname', 'x') }),
);

async function exists(p: string): Promise<boolean> {
  return fs.lstat(p).then(
    () => true,
    () => false,
  );
}

async function apply(observer: CheckpointObserver, root: string, op: Op): Promise<void> {
  const touched = op.op === 'move' ? [op.from, op.to] : [op.path];
  for (const p of touched) await observer.beforeWrite(p);
  const abs = (p: string): string => path.join(root, p);
  switch (op.op) {
    case 'write':
      await fs.mkdir(path.dirname(abs(op.path)), { recursive: true });
      if ((await fs.lstat(abs(op.path)).catch(() => undefined))?.isSymbolicLink()) await fs.unlink(abs(op.path));
      await fs.writeFile(abs(op.path), op.bytes);
      break;
    case 'delete':
      if (await exists(abs(op.path))) await fs.unlink(abs(op.path));
      break;
    case 'move':
      if (op.from !== op.to && (await exists(abs(op.from)))) {
        await fs.mkdir(path.dirname(abs(op.to)), { recursive: true });
        await fs.rename(abs(op.from), abs(op.to));
      }
      break;
    case 'chmod': {
      const st = await fs.lstat(abs(op.path)).catch(() => undefined);
      if (st?.isFile()) await fs.chmod(abs(op.path), op.mode);
      break;
    }
    case 'symlink':
      await fs.mkdir(path.dirname(abs(op.path)), { recursive: true });
      if (await exists(abs(op.path))) await fs.unlink(abs(op.path));
      await fs.symlink(op.target, abs(op.path));
      break;
  }
  for (const p of touched) await observer.afterWrite(p);
}

describe('property: capture through the observer, then restore(turn)', () => {
  it('gives back exact bytes, symlinks and modes (exact policy)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.tuple(...PATHS.map(() => initialArb)), fc.array(fc.array(opArb, { maxLength: 6 }), { minLength: 1, maxLength: 3 }), async (initial, turns) => {
        const { project, storeDir } = await sandbox();
        for (const [i, state] of initial.entries()) {
          const abs = path.join(project, PATHS[i] as string);
          await fs.mkdir(path.dirname(abs), { recursive: true });
          if (state.kind === 'file') {
            await fs.writeFile(abs, state.bytes);
            await fs.chmod(abs, state.mode);
          } else if (state.kind === 'link') await fs.symlink(state.target, abs);
        }
        const before = await listing(project);
        const store = await CheckpointStore.open(storeDir, { projectRoot: project });
        const observer = new CheckpointObserver({ store, sessionId: 'prop' });
        const firstTurn = await observer.beginTurn();
        for (const [t, ops] of turns.entries()) {
          if (t > 0) await observer.beginTurn();
          for (const op of ops) await apply(observer, project, op);
        }
        const report = await observer.restore(firstTurn);
        expect(report.failed).toEqual([]);
        expect(report.refused).toEqual([]);
        expect(await listing(project)).toEqual(before);
        expect((await store.verify()).ok).toBe(true);
        await observer.close();
      }),
      { numRuns: 40 },
    );
  });
});
