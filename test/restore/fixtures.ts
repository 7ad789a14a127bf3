import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import type { Fingerprint, PathState } from '../../src/core/model.js';
import { diskFingerprint, readDiskState } from '../../src/fs/disk-state.js';
import { nodeFileSystem, type FileSystem, type SyncFileSystem } from '../../src/fs/file-system.js';
import type { PlanInput } from '../../src/restore/plan.js';

/** A node of a declarative test tree. */
export type Node = { file: string | Buffer; mode?: number } | { link: string } | { dir: true };

/** A fresh, canonical temp folder. */
export async function makeRoot(): Promise<string> {
  return fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'turnback-restore-')));
}

export async function removeRoot(root: string): Promise<void> {
  await fs.rm(root, { recursive: true, force: true });
}

/** Writes nodes; parents are created. */
export async function writeTree(root: string, tree: Record<string, Node>): Promise<void> {
  for (const [rel, node] of Object.entries(tree)) {
    const abs = path.join(root, rel);
    if ('dir' in node) {
      await fs.mkdir(abs, { recursive: true });
      continue;
    }
    await fs.mkdir(path.dirname(abs), { recursive: true });
    if ('link' in node) {
      await fs.symlink(node.link, abs);
    } else {
      await fs.writeFile(abs, node.file);
      await fs.chmod(abs, node.mode ?? 0o644);
    }
  }
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
