import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Fingerprint, PathState } from '../../src/core/model.js';
import type { FileSystem } from '../../src/fs/file-system.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { applyRestore, type ApplyResult } from '../../src/restore/apply.js';
import { planRestore, type PlanEntry, type PlanOptions } from '../../src/restore/plan.js';
import { inputsFor, makeRoot, MemoryObjects, removeRoot } from './fixtures.js';

// What the applyRestore test files (apply, apply-preflight, apply-faults) share: a fresh project
// root, a folder outside it and an in-memory object store per test, and plan/apply over them.
// The roots are live bindings, reassigned before each test by the hooks useApplyRoots registers.

/** The project root of the running test. */
export let root: string;
/** A folder outside the root, for links and moves that point out of it. */
export let outside: string;
/** The stored copies the plans of the running test refer to. */
export let objects: MemoryObjects;

/** Registers the hooks that make a fresh `root`, `outside` and `objects` for each test of the calling file, and remove them after. */
export function useApplyRoots(): void {
  beforeEach(async () => {
    root = await makeRoot();
    outside = await makeRoot();
    objects = new MemoryObjects();
  });
  afterEach(async () => {
    await removeRoot(root);
    await removeRoot(outside);
  });
}

/** Replaces the running test's root with a fresh empty one (the old one removed). */
export async function freshRoot(): Promise<void> {
  await removeRoot(root);
  root = await makeRoot();
}

/** The rewind options: created files deleted, modes exact. */
const exact: PlanOptions = { created: 'delete', modePolicy: 'exact' };

/** Each path's target, and its last recorded fingerprint (`null`: no post record). */
type Targets = Record<string, { target: PathState; lastAfter?: Fingerprint | null }>;

/** The plan of `targets` against the disk under `root` now. */
export async function plan(targets: Targets, options: PlanOptions = exact): Promise<PlanEntry[]> {
  return planRestore(await inputsFor(root, targets), options);
}

/** Applies `entries` under `root`, reading stored copies from `objects`. */
export function apply(entries: PlanEntry[], fsImpl: FileSystem = nodeFileSystem, signal?: AbortSignal): Promise<ApplyResult> {
  return applyRestore({ fs: fsImpl, projectRoot: root, readObject: objects.readObject }, entries, signal ? { signal } : {});
}

/** The text of a file under `root`. */
export const bytesOf = (rel: string): Promise<string> => fs.readFile(path.join(root, rel), 'utf8');
/** The permission bits of a path under `root` (not followed). */
export const modeOf = async (rel: string): Promise<number> => (await fs.lstat(path.join(root, rel))).mode & 0o7777;
