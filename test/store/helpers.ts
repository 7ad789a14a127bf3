import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CheckpointStore } from '../../src/store/store.js';

/** A fresh temp folder with a project and a store root beside it. */
export interface Sandbox {
  dir: string;
  project: string;
  storeRoot: string;
  cleanup(): Promise<void>;
}

export async function makeSandbox(): Promise<Sandbox> {
  const dir = await mkdtemp(path.join(tmpdir(), 'turnback-store-'));
  const project = path.join(dir, 'project');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(project);
  return {
    dir,
    project,
    storeRoot: path.join(dir, 'store'),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

export async function openStore(box: Sandbox, lockTimeoutMs?: number): Promise<CheckpointStore> {
  return CheckpointStore.open(box.storeRoot, { projectRoot: box.project, ...(lockTimeoutMs === undefined ? {} : { lockTimeoutMs }) });
}
