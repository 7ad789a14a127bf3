import { afterEach, expect } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointObserver } from '../../src/session/observer.js';
import { createSavepointTool, type SavepointTool } from '../../src/tools/savepoint-tool.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

// What the savepoint tool's test files (savepoint-tool, savepoint-restore) share: a tool over a
// real store and a real project folder, disposed with its observer after each test.

/** The tools (with their observers) of the running test, disposed and closed after it: a test that makes its own pushes it here. */
export const open: { observer: CheckpointObserver; tool: SavepointTool }[] = [];

/** Registers the hook that disposes every tool {@link setup} made in the calling file's test, and closes its observer. */
export function useSavepointTools(): void {
  afterEach(async () => {
    for (const { observer, tool } of open.splice(0)) {
      tool.dispose();
      await observer.close();
    }
  });
}

/** A project holding `tree`, an observer on it and a savepoint tool made with `options`. */
export async function setup(tree: Parameters<typeof writeTree>[1], options: Partial<Parameters<typeof createSavepointTool>[0]> = {}) {
  const { project, storeDir } = await sandbox();
  await writeTree(project, tree);
  const observer = await openObserver(project, storeDir);
  const tool = createSavepointTool({ observer, ...options });
  open.push({ observer, tool });
  return { project, storeDir, observer, tool };
}

/** Awaits `promise` and checks it fails with a {@link CheckpointError} of `code`; returns the error. */
export async function expectError(promise: Promise<unknown>, code: string): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    expect(isCheckpointError(error), String(error)).toBe(true);
    expect((error as { code: string }).code).toBe(code);
    return error as Error;
  }
  throw new Error(`expected a ${code} error`);
}

/** Saves a savepoint through the tool and returns its id. */
export async function save(tool: SavepointTool, reason?: string): Promise<string> {
  const report = await tool.execute({ action: 'save', ...(reason !== undefined ? { reason } : {}) });
  if (report.action !== 'save') throw new Error('not a save report');
  return report.savepoint.id;
}
