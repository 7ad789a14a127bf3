import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import type { Fingerprint, PathState } from '../../src/core/model.js';
import { diskFingerprint, readDiskState } from '../../src/fs/disk-state.js';
import { nodeFileSystem, type FileSystem, type SyncFileSystem } from '../../src/fs/file-system.js';
import type { PlanInput } from '../../src/restore/plan.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';

export { writeTree, type TreeEntry as Node } from '../helpers/temp.js';

/** A fresh, canonical temp folder (removed after the test, or earlier by {@link removeRoot}). */
export async function makeRoot(): Promise<string> {
  return tempFolder('turnback-restore-');
}

/** Removes a folder made by {@link makeRoot} now. */
export async function removeRoot(root: string): Promise<void> {
  await removeFolder(root);
}

/** What a path holds, for byte/mode/link comparison. */
export type Seen = { type: 'file'; bytes: string; mode: number } | { type: 'symlink'; target: string } | { type: 'dir'; mode: number };

/** Every entry under `root` (no-follow), keyed by relative path. */
export async function snapshotTree(root: string): Promise<Record<string, Seen>> {
  const out: Record<string, Seen> = {};
  async function walk(dir: string): Promise<void> {
    for (const name of (await fs.readdir(dir)).sort()) {
      const abs = path.join(dir, name);
      const rel = path.relative(root, abs).split(path.sep).join('/');
      const st = await fs.lstat(abs);
      if (st.isSymbolicLink()) out[rel] = { type: 'symlink', target: await fs.readlink(abs) };
      else if (st.isDirectory()) {
        out[rel] = { type: 'dir', mode: st.mode & 0o7777 };
        await walk(abs);
      } else out[rel] = { type: 'file', bytes: (await fs.readFile(abs)).toString('hex'), mode: st.mode & 0o7777 };
    }
  }
  await walk(root);
  return out;
}

/** Names of turnback temp files anywhere under `root`. */
export function tempLeftovers(tree: Record<string, Seen>): string[] {
  return Object.keys(tree).filter((rel) => rel.split('/').some((segment) => segment.startsWith('.turnback-')));
}

/** An in-memory object store keyed by hash, standing in for src/store. */
export class MemoryObjects {
  readonly objects: Map<string, Buffer> = new Map();

  async file(bytes: string | Buffer, mode = 0o644): Promise<Extract<PathState, { type: 'file' }>> {
    await loadHasher();
    const buffer = Buffer.from(bytes);
    const hash = contentHash(buffer);
    this.objects.set(hash, buffer);
    return { type: 'file', object: hash, hash, size: buffer.length, mode };
  }

  readObject = async (object: string): Promise<Buffer> => {
    const bytes = this.objects.get(object);
    if (bytes === undefined) throw Object.assign(new Error(`no object ${object}`), { code: 'ENOENT' });
    return Buffer.from(bytes);
  };
}

/** Plan inputs from the live disk: `lastAfter` defaults to what is on disk now (no outside change). */
export async function inputsFor(
  root: string,
  targets: Record<string, { target: PathState; lastAfter?: Fingerprint | null; incomplete?: boolean }>,
): Promise<PlanInput[]> {
  const inputs: PlanInput[] = [];
  for (const [rel, spec] of Object.entries(targets)) {
    const disk = await readDiskState(nodeFileSystem, root, rel);
    const lastAfter = spec.lastAfter === null ? undefined : (spec.lastAfter ?? diskFingerprint(disk));
    inputs.push({
      path: rel,
      target: spec.target,
      disk,
      ...(lastAfter === undefined ? {} : { lastAfter }),
      ...(spec.incomplete === undefined ? {} : { incomplete: spec.incomplete }),
    });
  }
  return inputs;
}

/** A synchronous call of the fast path, named like the call it stands for (`sync.renameSync`). */
export type SyncFaultOp = `sync.${keyof SyncFileSystem}`;

/**
 * A FileSystem whose synchronous fast path (`fs.sync`) counts its calls and can fail the `nth`
 * call of one of them once (EIO), so the fault matrix covers the path production uses for small
 * files. The promise API is the real one.
 */
export function syncFaultFs(failOn?: { op: SyncFaultOp; nth: number }): { fs: FileSystem; calls: Map<SyncFaultOp, number>; readonly fired: boolean } {
  const base = nodeFileSystem.sync as SyncFileSystem;
  const calls = new Map<SyncFaultOp, number>();
  let fired = false;
  const sync = {} as Record<string, unknown>;
  for (const name of Object.keys(base) as (keyof SyncFileSystem)[]) {
    const original = base[name] as (...args: unknown[]) => unknown;
    sync[name] = (...args: unknown[]) => {
      const op: SyncFaultOp = `sync.${name}`;
      const count = (calls.get(op) ?? 0) + 1;
      calls.set(op, count);
      if (!fired && failOn !== undefined && failOn.op === op && failOn.nth === count) {
        fired = true;
        // A failed close still releases the descriptor, as close(2) does.
        if (name === 'closeSync') original(...args);
        throw Object.assign(new Error(`injected EIO on ${op}`), { code: 'EIO' });
      }
      return original(...args);
    };
  }
  return {
    fs: { ...nodeFileSystem, sync: sync as unknown as SyncFileSystem },
    calls,
    get fired() {
      return fired;
    },
  };
}
